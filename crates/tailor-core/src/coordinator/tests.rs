//! Scripted event sequences against the coordinator core.

use super::*;
use crate::oracle::size::SeenSizes;
use crate::selector::{Blind, World};
use std::sync::{Arc, Mutex};

/// What the scripted selector saw, in order.
type Log = Arc<Mutex<Vec<String>>>;

/// Answers from a script of decisions (then sends to the first offered replica); logs events.
struct Scripted {
    script: Vec<Decision>,
    log: Log,
    timer: Option<Nanos>,
}

impl ReplicaSelector for Scripted {
    fn select(
        &mut self,
        _now: Nanos,
        req: &crate::model::RequestView,
        replicas: &[NodeId],
        _w: &dyn World,
    ) -> Decision {
        self.log.lock().unwrap().push(format!("select {} {:?}", req.id, replicas));
        if self.script.is_empty() {
            Decision::to(replicas[0])
        } else {
            self.script.remove(0)
        }
    }
    fn on_sent(&mut self, _now: Nanos, req: &crate::model::RequestView, replica: NodeId) {
        self.log.lock().unwrap().push(format!("sent {} {replica}", req.id));
    }
    fn on_response(&mut self, _now: Nanos, r: &Response) {
        self.log.lock().unwrap().push(format!("resp {} {} fresh={}", r.request, r.replica, r.fresh));
    }
    fn on_facts(&mut self, _now: Nanos, f: &Feedback) {
        self.log.lock().unwrap().push(format!("facts {} busy={}", f.from, f.busy));
    }
    fn on_timer(&mut self, now: Nanos) {
        self.log.lock().unwrap().push(format!("timer {now}"));
        self.timer = None;
    }
    fn next_timer(&self) -> Option<Nanos> {
        self.timer
    }
}

fn config() -> CoordinatorConfig {
    CoordinatorConfig {
        id: 0,
        read_consistency: Consistency::One,
        write_consistency: Consistency::Quorum,
        read_repair: 0.0,
        park_capacity: 2,
        park_timeout: Some(1_000),
        seed: 1,
    }
}

fn core_with(cfg: CoordinatorConfig, script: Vec<Decision>) -> (CoordinatorCore, Log) {
    let log = Log::default();
    let selector = Box::new(Scripted { script, log: log.clone(), timer: None });
    (CoordinatorCore::new(cfg, selector, Box::new(SeenSizes::new(16, 100, None))), log)
}

fn set() -> ReplicaSet {
    ReplicaSet::from_slice(&[3, 4, 5])
}

fn req(id: RequestId, key: u64, size: Option<u64>) -> ClientRequest {
    ClientRequest { id, key, replicas: set(), size, fanout: Fanout::default() }
}

fn answer(replica: NodeId, feedback: Feedback, value_size: Option<u64>) -> Answer {
    Answer { replica, feedback, value_size }
}

/// The ticket of held request `id`.
fn tk(c: &CoordinatorCore, id: RequestId) -> Ticket {
    c.pending.find(id).expect("request is held")
}

fn fb(t: Nanos) -> Feedback {
    Feedback { timestamp: t, ..Feedback::default() }
}

fn sends(out: &[Action]) -> Vec<(RequestId, NodeId, SendKind)> {
    out.iter()
        .filter_map(|a| match a {
            Action::Send(s) => Some((s.ticket.id, s.replica, s.kind)),
            _ => None,
        })
        .collect()
}

fn take(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

#[test]
fn a_read_is_sent_answered_and_forgotten() {
    let (mut c, log) = core_with(config(), vec![]);
    let mut out = Vec::new();
    c.read(10, req(1, 77, None), &Blind, &mut out);
    assert_eq!(sends(&out), [(1, 3, SendKind::Read)]);
    out.clear();
    c.answered(20, tk(&c, 1), &mut answer(3, fb(15), Some(500)), &Blind, &mut out);
    assert_eq!(out, [Action::Reply { request: 1, replica: 3 }]);
    assert_eq!(take(&log), ["select 1 [3, 4, 5]", "sent 1 3", "resp 1 3 fresh=true"]);
    assert_eq!(c.in_flight(), 0);
    // the value's size was learnt: the next read of the key is large and tagged so
    assert!(c.hint(77).large);
    out.clear();
    c.read(30, req(2, 77, None), &Blind, &mut out);
    match out[0] {
        Action::Send(s) => assert_eq!((s.tags.size_class, s.age), (1, 0)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn wait_parks_until_retry_at_and_later_reads_queue_behind() {
    let waits = vec![Decision::Wait { retry_at: Some(50) }, Decision::Wait { retry_at: None }];
    let (mut c, log) = core_with(config(), waits);
    let mut out = Vec::new();
    c.read(10, req(1, 7, None), &Blind, &mut out);
    assert!(out.is_empty() && c.parked() == 1);
    assert_eq!(c.next_wake(), Some(50));
    // a second read of the same group parks behind without asking the selector
    c.read(20, req(2, 8, None), &Blind, &mut out);
    assert_eq!((c.parked(), c.stats().parked), (2, 2));
    take(&log);
    // at 50 the head is offered, the selector waits again (no retry time): the oldest park's
    // timeout is the next wake-up
    c.wake(50, &Blind, &mut out);
    assert!(out.is_empty());
    assert_eq!(c.next_wake(), Some(1_010));
    // a response to anything re-offers: both go, in FIFO order, with their age
    c.facts(60, 4, fb(60), &Blind, &mut out);
    assert_eq!(sends(&out), [(1, 3, SendKind::Read), (2, 3, SendKind::Read)]);
    match out[1] {
        Action::Send(s) => assert_eq!(s.age, 40),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.parked(), 0);
    assert_eq!(c.next_wake(), None);
}

#[test]
fn full_backlogs_refuse_and_parked_reads_expire() {
    let waits = vec![Decision::Wait { retry_at: None }; 10];
    let (mut c, _log) = core_with(config(), waits);
    let mut out = Vec::new();
    for id in 1..=3 {
        c.read(id * 10, req(id, id, None), &Blind, &mut out);
    }
    assert_eq!(out, [Action::Fail { request: 3, failure: Failure::Busy }]);
    assert_eq!(c.stats().park_rejected, 1);
    out.clear();
    c.wake(1_010, &Blind, &mut out);
    assert_eq!(out, [Action::Fail { request: 1, failure: Failure::Busy }]);
    assert_eq!((c.parked(), c.stats().park_expired, c.next_wake()), (1, 1, Some(1_020)));
}

#[test]
fn a_failed_attempt_is_reported_stale_and_retried_elsewhere() {
    let (mut c, log) = core_with(config(), vec![]);
    let mut out = Vec::new();
    c.read(0, req(1, 7, None), &Blind, &mut out);
    c.failed(5, tk(&c, 1), 3, &Blind, &mut out);
    c.failed(6, tk(&c, 1), 4, &Blind, &mut out);
    c.failed(7, tk(&c, 1), 5, &Blind, &mut out);
    assert_eq!(sends(&out), [(1, 3, SendKind::Read), (1, 4, SendKind::Read), (1, 5, SendKind::Read)]);
    assert_eq!(out.last(), Some(&Action::Fail { request: 1, failure: Failure::NotEnough { need: 1, got: 0 } }));
    let log = take(&log);
    assert_eq!(log[2..5], ["resp 1 3 fresh=false", "select 1 [4, 5]", "sent 1 4"]);
    assert_eq!((c.stats().retries, c.in_flight()), (3, 0));
}

#[test]
fn down_replicas_are_never_offered() {
    let (mut c, log) = core_with(config(), vec![]);
    let mut out = Vec::new();
    c.set_up(3, false);
    c.read(0, req(1, 7, None), &Blind, &mut out);
    assert_eq!(take(&log)[0], "select 1 [4, 5]");
    c.set_up(4, false);
    c.set_up(5, false);
    out.clear();
    c.read(0, req(2, 7, None), &Blind, &mut out);
    assert_eq!(out, [Action::Fail { request: 2, failure: Failure::NoReplica }]);
    // marked down twice, up once: up; a node never marked down can be marked up
    c.set_up(4, false);
    c.set_up(4, true);
    c.set_up(9, true);
    c.set_up(3, true);
    take(&log);
    c.read(0, req(3, 7, None), &Blind, &mut out);
    assert_eq!(take(&log)[0], "select 3 [3, 4]");
}

#[test]
fn shadow_reads_are_visible_to_the_selector_and_never_reply() {
    let (mut c, log) = core_with(CoordinatorConfig { read_repair: 1.0, ..config() }, vec![]);
    let mut out = Vec::new();
    c.read(0, req(1, 7, None), &Blind, &mut out);
    assert_eq!(sends(&out), [(1, 3, SendKind::Read), (1, 4, SendKind::Shadow), (1, 5, SendKind::Shadow)]);
    out.clear();
    c.answered(5, tk(&c, 1), &mut answer(4, fb(5), None), &Blind, &mut out);
    assert!(out.is_empty(), "a shadow's answer is not the client's");
    c.answered(6, tk(&c, 1), &mut answer(3, fb(6), None), &Blind, &mut out);
    assert_eq!(out, [Action::Reply { request: 1, replica: 3 }]);
    assert_eq!(c.in_flight(), 1, "one shadow still out");
    c.failed(9, tk(&c, 1), 5, &Blind, &mut out);
    assert_eq!((c.in_flight(), c.stats().shadows), (0, 2));
    let log = take(&log);
    assert_eq!(log.iter().filter(|l| l.starts_with("sent")).count(), 3);
    assert_eq!(log.iter().filter(|l| l.starts_with("resp")).count(), 3);
}

#[test]
fn writes_reply_at_quorum_and_fail_when_it_cannot_be_reached() {
    let (mut c, log) = core_with(config(), vec![]);
    let mut out = Vec::new();
    c.write(0, req(1, 7, Some(500)), &mut out);
    assert_eq!(sends(&out), [(1, 3, SendKind::Write), (1, 4, SendKind::Write), (1, 5, SendKind::Write)]);
    assert!(matches!(out[0], Action::Send(s) if s.tags.size_class == 1), "the oracle saw the write's size");
    out.clear();
    c.answered(5, tk(&c, 1), &mut answer(3, Feedback { busy: true, ..fb(5) }, None), &Blind, &mut out);
    c.answered(6, tk(&c, 1), &mut answer(5, fb(6), None), &Blind, &mut out);
    assert_eq!(out, [Action::Reply { request: 1, replica: 5 }]);
    c.failed(7, tk(&c, 1), 4, &Blind, &mut out);
    assert_eq!(c.in_flight(), 0);
    // write acks feed the selector's facts hook, not on_response
    assert_eq!(take(&log), ["facts 3 busy=true", "facts 5 busy=false"]);
    out.clear();
    c.write(10, req(2, 8, None), &mut out);
    c.failed(11, tk(&c, 2), 3, &Blind, &mut out);
    c.failed(12, tk(&c, 2), 4, &Blind, &mut out);
    assert_eq!(out.last(), Some(&Action::Fail { request: 2, failure: Failure::NotEnough { need: 2, got: 0 } }));
    c.failed(13, tk(&c, 2), 5, &Blind, &mut out);
    assert_eq!(c.in_flight(), 0);
}

#[test]
fn stale_feedback_counts_but_is_not_applied() {
    let (mut c, log) = core_with(config(), vec![]);
    let mut out = Vec::new();
    c.facts(0, 3, fb(100), &Blind, &mut out);
    c.facts(1, 3, fb(90), &Blind, &mut out);
    c.read(2, req(1, 7, None), &Blind, &mut out);
    c.answered(3, tk(&c, 1), &mut answer(3, fb(95), None), &Blind, &mut out);
    assert_eq!(c.stats().stale_feedback, 2);
    let log = take(&log);
    assert_eq!(log.first().map(String::as_str), Some("facts 3 busy=false"));
    assert_eq!(log.last().map(String::as_str), Some("resp 1 3 fresh=false"));
}

#[test]
fn quorum_reads_skip_the_selector() {
    let cfg = CoordinatorConfig { read_consistency: Consistency::All, ..config() };
    let (mut c, log) = core_with(cfg, vec![]);
    let mut out = Vec::new();
    c.read(0, req(1, 7, None), &Blind, &mut out);
    assert_eq!(sends(&out).len(), 3);
    for (t, r) in [(1, 3), (2, 4), (3, 5)] {
        c.answered(t, tk(&c, 1), &mut answer(r, fb(t), None), &Blind, &mut out);
    }
    assert_eq!(out.last(), Some(&Action::Reply { request: 1, replica: 5 }));
    assert!(take(&log).iter().all(|l| l.starts_with("facts")));
}

#[test]
fn the_selectors_timer_is_a_wake_up() {
    let (mut c, log) = core_with(config(), vec![]);
    let sel = Scripted { script: vec![], log: log.clone(), timer: Some(40) };
    c.selector = Box::new(sel);
    assert_eq!(c.next_wake(), Some(40));
    let mut out = Vec::new();
    c.wake(39, &Blind, &mut out);
    assert!(take(&log).is_empty());
    c.wake(40, &Blind, &mut out);
    assert_eq!(take(&log), ["timer 40"]);
    assert_eq!(c.next_wake(), None);
}

#[test]
fn answers_for_unknown_requests_are_ignored() {
    let (mut c, _log) = core_with(config(), vec![]);
    let mut out = Vec::new();
    c.answered(0, Ticket { slot: 0, id: 99 }, &mut answer(3, fb(0), None), &Blind, &mut out);
    c.failed(0, Ticket { slot: 0, id: 98 }, 3, &Blind, &mut out);
    assert!(out.is_empty());
    assert_eq!(c.stats().unknown, 2);
}

#[test]
fn a_request_may_ask_for_its_own_consistency() {
    let (mut c, log) = core_with(config(), vec![]);
    let mut out = Vec::new();
    // configured ONE, asked ALL: every replica, no selector
    c.read_at(10, req(1, 77, None), Consistency::All, &Blind, &mut out);
    assert_eq!(sends(&out), [(1, 3, SendKind::QuorumRead), (1, 4, SendKind::QuorumRead), (1, 5, SendKind::QuorumRead)]);
    assert!(take(&log).is_empty(), "the selector is not asked");
    out.clear();
    for (i, r) in [3, 4].into_iter().enumerate() {
        c.answered(20 + i as Nanos, tk(&c, 1), &mut answer(r, fb(15), None), &Blind, &mut out);
    }
    assert!(out.iter().all(|a| !matches!(a, Action::Reply { .. })), "ALL waits for the third");
    c.answered(30, tk(&c, 1), &mut answer(5, fb(15), None), &Blind, &mut out);
    assert!(matches!(out.last(), Some(Action::Reply { request: 1, .. })));
    // configured QUORUM writes, asked ONE: the first ack answers
    out.clear();
    c.write_at(40, req(2, 78, Some(5)), Consistency::One, &mut out);
    assert_eq!(sends(&out).len(), 3);
    out.clear();
    c.answered(50, tk(&c, 2), &mut answer(4, fb(45), None), &Blind, &mut out);
    assert!(matches!(out.last(), Some(Action::Reply { request: 2, .. })));
    assert_eq!(c.consistency(), (Consistency::One, Consistency::Quorum), "the configured levels are unchanged");
}

fn hedging(after: Nanos, budget: f64) -> (CoordinatorCore, Log) {
    let (c, log) = core_with(config(), vec![]);
    let rule = speculation::SpeculativeRetry::After(after);
    (c.with_speculation(SpeculationConfig { rule, budget }), log)
}

#[test]
fn a_late_read_is_hedged_once_and_the_first_answer_replies() {
    let (mut c, log) = hedging(100, 1.0);
    let mut out = Vec::new();
    c.read(10, req(1, 7, None), &Blind, &mut out);
    assert_eq!(sends(&out), [(1, 3, SendKind::Read)]);
    assert_eq!(c.next_wake(), Some(110), "the hedge deadline is the next wake-up");
    out.clear();
    c.wake(110, &Blind, &mut out);
    assert_eq!(sends(&out), [(1, 4, SendKind::Hedge)], "the selector picks among the others");
    assert_eq!(c.next_wake(), None, "a read is hedged once");
    out.clear();
    c.answered(150, tk(&c, 1), &mut answer(4, fb(140), None), &Blind, &mut out);
    assert_eq!(out, [Action::Reply { request: 1, replica: 4 }]);
    out.clear();
    // the slow first attempt still counts at the selector, and then the read is forgotten
    c.answered(900, tk(&c, 1), &mut answer(3, fb(890), None), &Blind, &mut out);
    assert!(out.is_empty());
    assert_eq!(c.in_flight(), 0);
    let seen = take(&log);
    assert_eq!(seen[2..], ["select 1 [4, 5]", "sent 1 4", "resp 1 4 fresh=true", "resp 1 3 fresh=true"]);
    assert_eq!((c.stats().hedges, c.stats().retries), (1, 0));
}

#[test]
fn with_cancel_the_first_answer_cancels_the_losing_attempt_and_settles_it() {
    for (winner, loser) in [(4, 3), (3, 4)] {
        let (c, log) = hedging(100, 1.0);
        let mut c = c.with_hedge_cancel();
        let mut out = Vec::new();
        c.read(10, req(1, 7, None), &Blind, &mut out);
        c.wake(110, &Blind, &mut out);
        let t = tk(&c, 1);
        out.clear();
        c.answered(150, t, &mut answer(winner, fb(140), None), &Blind, &mut out);
        let cancel = Action::Cancel { request: 1, replica: loser, ticket: t };
        assert_eq!(out, [Action::Reply { request: 1, replica: winner }, cancel]);
        assert_eq!((c.in_flight(), c.stats().cancels), (0, 1), "the cancelled copy is settled at once");
        let seen = take(&log);
        let stale = format!("resp 1 {loser} fresh=false");
        assert_eq!(seen.last(), Some(&stale), "the selector hears of the cancelled copy as of a failed one");
        out.clear();
        // a copy that was running when its cancel came still answers: ignored
        c.answered(900, t, &mut answer(loser, fb(890), None), &Blind, &mut out);
        assert!(out.is_empty() && c.stats().unknown == 1);
    }
}

#[test]
fn without_a_hedge_out_nothing_is_cancelled() {
    let (c, _log) = hedging(100, 1.0);
    let mut c = c.with_hedge_cancel();
    let mut out = Vec::new();
    c.read(10, req(1, 7, None), &Blind, &mut out);
    c.answered(50, tk(&c, 1), &mut answer(3, fb(40), None), &Blind, &mut out);
    assert!(out.iter().all(|a| !matches!(a, Action::Cancel { .. })), "{out:?}");
    assert_eq!(c.stats().cancels, 0);
}

#[test]
fn a_read_answered_in_time_is_not_hedged_and_leaves_no_wake_up() {
    let (mut c, _log) = hedging(100, 1.0);
    let mut out = Vec::new();
    c.read(10, req(1, 7, None), &Blind, &mut out);
    c.answered(50, tk(&c, 1), &mut answer(3, fb(40), None), &Blind, &mut out);
    assert_eq!(c.next_wake(), None, "the answered read's deadline is pruned");
    out.clear();
    c.wake(200, &Blind, &mut out);
    assert!(out.is_empty());
    assert_eq!(c.stats().hedges, 0);
}

#[test]
fn a_failed_attempt_with_its_hedge_out_is_not_retried() {
    let (mut c, _log) = hedging(100, 1.0);
    let mut out = Vec::new();
    c.read(10, req(1, 7, None), &Blind, &mut out);
    c.wake(110, &Blind, &mut out);
    out.clear();
    c.failed(120, tk(&c, 1), 3, &Blind, &mut out);
    assert!(out.is_empty(), "the hedge carries the read: {out:?}");
    c.failed(130, tk(&c, 1), 4, &Blind, &mut out);
    assert_eq!(sends(&out), [(1, 5, SendKind::Read)], "both failed: retry the last replica");
    out.clear();
    c.answered(140, tk(&c, 1), &mut answer(5, fb(135), None), &Blind, &mut out);
    assert_eq!(out, [Action::Reply { request: 1, replica: 5 }]);
    assert_eq!(c.in_flight(), 0);
}

#[test]
fn the_budget_refuses_hedges_past_it() {
    let (mut c, _log) = hedging(100, 0.0);
    let mut out = Vec::new();
    for id in 0..(speculation::BURST + 5) {
        c.read(10, req(id, id, None), &Blind, &mut out);
    }
    out.clear();
    c.wake(110, &Blind, &mut out);
    assert_eq!(sends(&out).len() as u64, speculation::BURST, "the saved-up burst, then nothing");
    assert_eq!(c.stats().hedges_refused, 5);
}

#[test]
fn a_hedge_the_selector_holds_back_is_offered_again_at_its_retry_time() {
    let (c, _log) = core_with(config(), vec![Decision::to(3), Decision::Wait { retry_at: Some(130) }]);
    let rule = speculation::SpeculativeRetry::After(100);
    let mut c = c.with_speculation(SpeculationConfig { rule, budget: 1.0 });
    let mut out = Vec::new();
    c.read(10, req(1, 7, None), &Blind, &mut out);
    out.clear();
    c.wake(110, &Blind, &mut out);
    assert!(out.is_empty(), "the selector said wait");
    assert_eq!(c.next_wake(), Some(130));
    c.wake(130, &Blind, &mut out);
    assert_eq!(sends(&out), [(1, 4, SendKind::Hedge)]);
}

#[test]
fn probes_the_selector_asks_for_leave_with_the_read_and_their_answers_reach_only_it() {
    use crate::selector::prequal::{Prequal, PrequalConfig};
    use crate::selector::SelectorEnv;
    let env = SelectorEnv { coordinator: 0, coordinators: 1, servers: 8, replication: 3, workers: 4, seed: 7 };
    let cfg = PrequalConfig { probes_per_query: 3.0, ..PrequalConfig::default() };
    let selector = Box::new(Prequal::new(&cfg, &env));
    let mut c = CoordinatorCore::new(config(), selector, Box::new(SeenSizes::new(16, 100, None)));
    let mut out = Vec::new();
    c.read(10, req(1, 77, None), &Blind, &mut out);
    let mut probed: Vec<NodeId> = sends(&out).iter().filter(|s| s.2 == SendKind::Probe).map(|s| s.1).collect();
    probed.sort();
    assert_eq!(probed, [3, 4, 5], "every replica of the key, once");
    assert!(out
        .iter()
        .all(|a| !matches!(a, Action::Send(s) if s.kind == SendKind::Probe && s.ticket.slot != PROBE_SLOT)));
    assert_eq!((c.stats().probes, c.in_flight()), (3, 1), "probes hold no place in the table");
    // replica 5 says idle and fast, the others busy: the next read follows the probe
    out.clear();
    for (replica, rif, latency) in [(3, 9, 900), (4, 9, 900), (5, 0, 300)] {
        c.probed(20, replica, ProbeReply { rif, latency }, &Blind, &mut out);
    }
    assert!(out.is_empty(), "a probe answer alone sends nothing");
    c.read(30, req(2, 78, None), &Blind, &mut out);
    assert!(sends(&out).contains(&(2, 5, SendKind::Read)), "{:?}", sends(&out));
}

/// A core for an engine that cannot park and gets facts by polling (Cassandra's driver).
fn limited(script: Vec<Decision>) -> (CoordinatorCore, Log) {
    let (c, log) = core_with(config(), script);
    (c.with_limits(EngineLimits::CASSANDRA_DRIVER), log)
}

#[test]
fn without_parking_a_wait_goes_to_the_least_loaded_replica_and_is_counted() {
    let wait = Decision::Wait { retry_at: Some(500) };
    let (mut c, log) = limited(vec![Decision::to(3), Decision::to(4), wait, wait, wait]);
    let mut out = Vec::new();
    c.read(10, req(1, 1, None), &Blind, &mut out);
    c.read(11, req(2, 2, None), &Blind, &mut out);
    // 3 and 4 each have one attempt out: 5 has none
    c.read(12, req(3, 3, None), &Blind, &mut out);
    assert_eq!(sends(&out), [(1, 3, SendKind::Read), (2, 4, SendKind::Read), (3, 5, SendKind::Read)]);
    let log = take(&log);
    assert!(log.contains(&"sent 3 5".to_string()), "the selector is told a forced read was sent: {log:?}");
    assert_eq!((c.stats().forced, c.parked(), c.next_wake()), (1, 0, None), "nothing parks, nothing to wake for");
    // every replica has one out: ties go in replica order
    out.clear();
    c.read(13, req(4, 4, None), &Blind, &mut out);
    assert_eq!(sends(&out), [(4, 3, SendKind::Read)]);
    // a retry the selector says wait for goes to the least loaded untried replica
    out.clear();
    c.failed(14, tk(&c, 4), 3, &Blind, &mut out);
    assert_eq!(sends(&out), [(4, 4, SendKind::Read)]);
    assert_eq!((c.stats().forced, c.stats().retries), (3, 1));
    let mut order = [5, 4, 3];
    c.fallback_order(&mut order);
    assert_eq!(order, [5, 3, 4], "4 has two attempts out, 3 and 5 one each");
}

#[test]
fn an_engine_that_parks_still_parks() {
    let (mut c, _log) = core_with(config(), vec![Decision::Wait { retry_at: Some(500) }]);
    let mut out = Vec::new();
    c.read(10, req(1, 1, None), &Blind, &mut out);
    assert_eq!((out.len(), c.parked(), c.stats().forced), (0, 1, 0));
}

#[test]
fn a_poll_rides_on_the_nodes_next_answer_once_neither_lost_nor_applied_twice() {
    let (mut c, log) = limited(vec![]);
    let mut out = Vec::new();
    // an answer before any poll carries no facts: stale, nothing applied
    c.read(1, req(1, 1, None), &Blind, &mut out);
    c.answered_bare(2, tk(&c, 1), 3, &Blind, &mut out);
    // a poll at 10: offered as facts, then shown on the next answer only
    let poll = |busy| Feedback { timestamp: 10, busy, ..Feedback::default() };
    assert!(c.polled(10, 3, poll(true), &Blind, &mut out));
    for id in [2, 3] {
        c.read(10 + id, req(id, 1, None), &Blind, &mut out);
        c.answered_bare(10 + id, tk(&c, id), 3, &Blind, &mut out);
    }
    // two polls before an answer: the newer rides, once; the equal timestamp of a poll and the
    // answer carrying it passes the gate (that is what lets it ride), and no copy of it is left
    assert!(c.polled(20, 3, Feedback { timestamp: 20, ..poll(false) }, &Blind, &mut out));
    assert!(c.polled(30, 3, Feedback { timestamp: 30, ..poll(true) }, &Blind, &mut out));
    assert!(!c.polled(31, 3, Feedback { timestamp: 25, ..poll(false) }, &Blind, &mut out), "an older poll is stale");
    for id in [4, 5] {
        c.read(30 + id, req(id, 1, None), &Blind, &mut out);
        c.answered_bare(30 + id, tk(&c, id), 3, &Blind, &mut out);
    }
    // another node's poll rides on that node's answers, not on 3's
    assert!(c.polled(40, 4, poll(true), &Blind, &mut out));
    c.read(41, req(6, 1, None), &Blind, &mut out);
    c.answered_bare(42, tk(&c, 6), 3, &Blind, &mut out);
    let seen: Vec<String> =
        take(&log).into_iter().filter(|l| !l.starts_with("select") && !l.starts_with("sent")).collect();
    assert_eq!(
        seen,
        [
            "resp 1 3 fresh=false",
            "facts 3 busy=true",
            "resp 2 3 fresh=true",
            "resp 3 3 fresh=false",
            "facts 3 busy=false",
            "facts 3 busy=true",
            "resp 4 3 fresh=true",
            "resp 5 3 fresh=false",
            "facts 4 busy=true",
            "resp 6 3 fresh=false",
        ]
    );
    assert_eq!(c.stats().stale_feedback, 1, "only the older poll was stale; bare answers are not feedback");
    assert_eq!(c.in_flight(), 0);
}

#[test]
fn every_copy_carries_its_coordinators_flow_whatever_the_selector_tags() {
    let cfg = CoordinatorConfig { id: 65_536 + 42, ..config() };
    let selector_tags = Tags { priority: 2, size_class: 0, flow: 7, ..Tags::default() };
    let (mut c, _) = core_with(cfg, vec![Decision::Send { replica: 4, tags: selector_tags }]);
    let mut out = Vec::new();
    c.read(0, req(1, 7, None), &Blind, &mut out);
    c.write(0, req(2, 8, Some(5)), &mut out);
    let flows: Vec<(u16, u8)> = out
        .iter()
        .filter_map(|a| if let Action::Send(s) = a { Some((s.tags.flow, s.tags.priority)) } else { None })
        .collect();
    assert_eq!(flows, [(42, 2), (42, 0), (42, 0), (42, 0)], "the selector's priority kept, its flow not; id mod 2^16");
    assert_eq!(c.side_tags(9, None).flow, 42);
}
