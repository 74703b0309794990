//! The policy's engine, free of the driver's types: it drives one [`CoordinatorCore`] with the
//! driver's events, as the simulator and the store drive theirs, and owns only what an engine
//! owns — the clock's readings it is given, the tickets of the attempts in flight, and the
//! counters. Every decision (the replica, the fallback of a read told to wait, the retry after a
//! failure, freshness, the selector's timer) is the core's; what the driver cannot do is the
//! core's [`limits`](tailor_core::coordinator::limits) (Cassandra's list).
//!
//! The driver's events, in the order this engine relies on (scylla 1.9,
//! `client/execution.rs`, `run_request_speculative_fiber`, and `policies/load_balancing/plan.rs`,
//! `Plan::next`):
//! 1. A request's plan is lazy: its first target is `pick` ([`Engine::pick`]: `core.read`, the
//!    replica of the `Send` of kind `Read`); if `pick` gives none, `fallback` is asked at once.
//! 2. The attempt runs on the target's connection. If no connection can be had, the driver
//!    moves to the plan's next target without any `on_request_*` call (the ticket is left out:
//!    it expires, rule 6).
//! 3. When the attempt ends, `on_request_success` or `on_request_failure` is called with the
//!    node and the attempt's latency, in the same fiber, before the retry policy decides
//!    ([`Engine::answered`]: the ticket matched by node and latency, then `core.answered_bare`
//!    or `core.failed`; after a failure the core's retry, if it has one, is a `Send` kept as
//!    this key's retry).
//! 4. The retry policy decides. `RetryNextTarget`: the plan's next target, which is the first
//!    item of `fallback` (called then, once per plan) or the iterator's next item; with no await
//!    between the failure and that call. `RetrySameTarget`: another attempt on the same node,
//!    with no policy call before it (its answer finds no ticket and is counted unmatched; the
//!    core's retry it did not take expires). `DontRetry`: the request ends.
//! 5. The plan leaves out of `fallback`'s items the node `pick` gave. The fallback iterator is
//!    lazy ([`Engine::fallback_next`]): each item is the core's retry of this key kept at step 3
//!    if there is one, else the next candidate in the core's fallback order (those attempts are
//!    the driver's, not the core's, and their answers are counted unmatched).
//! 6. A ticket no answer or failure was matched to within [`PolicyConfig::attempt_bound`]
//!    (the client timeout cut the attempt, the node was skipped, the retry was not taken) is
//!    reported to the core as failed and counted `expired`.
//! 7. The driver's speculative execution (not configured by the bench) would share a plan among
//!    fibers and call `fallback` with no failure; the core's own hedges are off (limit 5).
//!
//! Before each event the engine expires overdue tickets and runs the core's wake-up if it is due
//! (limit 2: no timer of its own). A `Send` the core emits at any other point than a pick or a
//! failure's retry has no driver call to carry it and is failed back to the core at once.
//!
//! [`PolicyConfig::attempt_bound`]: super::PolicyConfig::attempt_bound

use super::PolicyStats;
use tailor_core::coordinator::{Action, ClientRequest, CoordinatorCore, SendKind, Ticket};
use tailor_core::facts::Feedback;
use tailor_core::model::NodeId;
use tailor_core::node_map::NodeMap;
use tailor_core::ring::{ReplicaSet, MAX_REPLICAS};
use tailor_core::selector::Blind;
use tailor_core::time::Nanos;

/// An attempt the core sent and the driver has not yet reported on.
#[derive(Clone, Copy, Debug)]
struct Outstanding {
    ticket: Ticket,
    /// The read's key (the driver's token): how a failure's retry finds its fallback plan.
    key: u64,
    /// The node it went to.
    node: NodeId,
    sent_at: Nanos,
    /// A retry the core sent after a failure, not yet handed to the driver's fallback plan.
    retry: bool,
}

/// The engine: the core, the attempts in flight, the counters.
pub struct Engine {
    core: CoordinatorCore,
    outstanding: Vec<Outstanding>,
    /// The earliest send time among `outstanding` (`Nanos::MAX`: none), so that most events
    /// skip the pass over them.
    oldest: Nanos,
    bound: Nanos,
    stats: PolicyStats,
    next_request: u64,
    picks_per_node: NodeMap<u64>,
    out: Vec<Action>,
}

/// Where the core's `Send`s in a batch of actions go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Carrier {
    /// The driver's `pick` carries the read's first attempt.
    Pick,
    /// The driver's fallback plan carries a failure's retry.
    Retry,
    /// No driver call carries it: failed back to the core.
    Nobody,
}

impl Engine {
    /// An engine around `core` (built with the Cassandra driver's limits); a ticket the driver
    /// never reports on is failed after `bound` ns.
    pub fn new(core: CoordinatorCore, bound: Nanos) -> Engine {
        assert!(bound > 0, "an attempt bound is at least 1 ns");
        Engine {
            core,
            outstanding: Vec::new(),
            oldest: Nanos::MAX,
            bound,
            stats: PolicyStats::default(),
            next_request: 0,
            picks_per_node: NodeMap::new(),
            out: Vec::new(),
        }
    }

    /// Counters so far ([`PolicyStats::forced`] is the core's count).
    pub fn stats(&self) -> PolicyStats {
        PolicyStats { forced: self.core.stats().forced, ..self.stats }
    }

    /// Attempts `pick` sent to each node.
    pub fn picks_per_node(&self) -> impl Iterator<Item = (NodeId, u64)> + '_ {
        self.picks_per_node.iter().map(|(n, &c)| (n, c))
    }

    /// Attempts in flight that the driver has not reported on.
    pub fn outstanding(&self) -> usize {
        self.outstanding.len()
    }

    /// The driver asks for a read's first target among `replicas` (node ids, primary first; at
    /// most [`MAX_REPLICAS`] are offered); `None` when the core sends it nowhere.
    pub fn pick(&mut self, now: Nanos, key: u64, replicas: &[NodeId]) -> Option<NodeId> {
        self.before(now);
        let replicas = ReplicaSet::from_slice(&replicas[..replicas.len().min(MAX_REPLICAS)]);
        self.next_request += 1;
        let req = ClientRequest { id: self.next_request, key, replicas, size: None, fanout: Default::default() };
        let mut out = std::mem::take(&mut self.out);
        self.core.read(now, req, &Blind, &mut out);
        let sent = self.carry_out(now, key, Carrier::Pick, &mut out);
        self.out = out;
        if let Some(node) = sent {
            self.stats.picked += 1;
            *self.picks_per_node.get_or_insert_with(node, || 0) += 1;
        }
        sent
    }

    /// The driver reports an attempt at `node` that took `latency` ns: a success (`ok`) or a
    /// failure. The ticket is the node's outstanding one sent nearest `now - latency`.
    pub fn answered(&mut self, now: Nanos, node: NodeId, latency: Nanos, ok: bool) {
        self.before(now);
        if ok {
            self.stats.succeeded += 1;
        } else {
            self.stats.failed += 1;
        }
        let started = now.saturating_sub(latency);
        let nearest = (self.outstanding.iter().enumerate())
            .filter(|(_, o)| o.node == node)
            .min_by_key(|(_, o)| o.sent_at.abs_diff(started))
            .map(|(i, _)| i);
        let Some(i) = nearest else {
            self.stats.unmatched += 1;
            return;
        };
        let o = self.outstanding.swap_remove(i);
        let mut out = std::mem::take(&mut self.out);
        if ok {
            self.core.answered_bare(now, o.ticket, node, &Blind, &mut out);
            self.carry_out(now, o.key, Carrier::Nobody, &mut out);
        } else {
            self.core.failed(now, o.ticket, node, &Blind, &mut out);
            if self.carry_out(now, o.key, Carrier::Retry, &mut out).is_some() {
                self.stats.retried += 1;
            }
        }
        self.out = out;
    }

    /// Facts polled from `node` at `now`: through the core's gate, kept for its next answer.
    pub fn polled(&mut self, now: Nanos, node: NodeId, mut feedback: Feedback) {
        self.before(now);
        feedback.timestamp = now;
        let mut out = std::mem::take(&mut self.out);
        if self.core.polled(now, node, feedback, &Blind, &mut out) {
            self.stats.polls += 1;
        }
        self.carry_out(now, 0, Carrier::Nobody, &mut out);
        self.out = out;
    }

    /// The next target of the fallback plan of a read of `key` among `candidates`, the plan
    /// having given `given` already: the core's retry of this key if one waits for the driver,
    /// else the first candidate not yet given in the core's fallback order.
    pub fn fallback_next(&mut self, now: Nanos, key: u64, candidates: &[NodeId], given: &[NodeId]) -> Option<NodeId> {
        self.before(now);
        let retry =
            (self.outstanding.iter_mut()).filter(|o| o.retry && o.key == key).max_by_key(|o| o.sent_at).map(|o| {
                o.retry = false;
                o.node
            });
        if retry.is_some() {
            return retry;
        }
        let mut rest: Vec<NodeId> = candidates.iter().copied().filter(|n| !given.contains(n)).collect();
        self.core.fallback_order(&mut rest);
        rest.first().copied()
    }

    /// Expire overdue tickets; run the core's wake-up if it is due.
    fn before(&mut self, now: Nanos) {
        if self.oldest.saturating_add(self.bound) <= now {
            self.expire(now);
        }
        if self.core.next_wake().is_some_and(|t| t <= now) {
            let mut out = std::mem::take(&mut self.out);
            self.core.wake(now, &Blind, &mut out);
            self.carry_out(now, 0, Carrier::Nobody, &mut out);
            self.out = out;
        }
    }

    /// Report every ticket older than the bound to the core as failed.
    #[cold]
    fn expire(&mut self, now: Nanos) {
        let mut out = std::mem::take(&mut self.out);
        while let Some(i) = self.outstanding.iter().position(|o| o.sent_at.saturating_add(self.bound) <= now) {
            let o = self.outstanding.swap_remove(i);
            self.stats.expired += 1;
            self.core.failed(now, o.ticket, o.node, &Blind, &mut out);
            self.carry_out(now, o.key, Carrier::Nobody, &mut out);
        }
        self.out = out;
        self.oldest = self.outstanding.iter().map(|o| o.sent_at).min().unwrap_or(Nanos::MAX);
    }

    /// Carry out the core's actions: the first read `Send` goes to `carrier` (kept as
    /// outstanding, its node returned); any other `Send` has no driver call to carry it and is
    /// failed back to the core at once (whose own actions are carried out the same way).
    /// Replies and failures are the driver's business (it answers its caller itself).
    fn carry_out(&mut self, now: Nanos, key: u64, carrier: Carrier, out: &mut Vec<Action>) -> Option<NodeId> {
        let mut carried = None;
        let mut undeliverable = Vec::new();
        for action in out.drain(..) {
            let Action::Send(s) = action else { continue };
            if carrier != Carrier::Nobody && carried.is_none() && s.kind == SendKind::Read {
                carried = Some(s.replica);
                let retry = carrier == Carrier::Retry;
                self.outstanding.push(Outstanding { ticket: s.ticket, key, node: s.replica, sent_at: now, retry });
                self.oldest = self.oldest.min(now);
            } else {
                undeliverable.push(s);
            }
        }
        for s in undeliverable {
            self.stats.undeliverable += 1;
            let mut more = Vec::new();
            self.core.failed(now, s.ticket, s.replica, &Blind, &mut more);
            self.carry_out(now, key, Carrier::Nobody, &mut more);
        }
        carried
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tailor_core::coordinator::{CoordinatorConfig, EngineLimits};
    use tailor_core::facts::Response;
    use tailor_core::model::{Consistency, RequestView};
    use tailor_core::oracle::size::NoOracle;
    use tailor_core::selector::{Decision, ReplicaSelector, World};

    type Log = Arc<Mutex<Vec<String>>>;

    /// Sends to the first replica offered unless its script says otherwise; logs what it sees.
    struct Scripted {
        script: Vec<Decision>,
        log: Log,
    }

    impl ReplicaSelector for Scripted {
        fn select(&mut self, _now: Nanos, _r: &RequestView, replicas: &[NodeId], _w: &dyn World) -> Decision {
            if self.script.is_empty() {
                Decision::to(replicas[0])
            } else {
                self.script.remove(0)
            }
        }
        fn on_sent(&mut self, _now: Nanos, req: &RequestView, replica: NodeId) {
            self.log.lock().unwrap().push(format!("sent {} {replica}", req.id));
        }
        fn on_response(&mut self, now: Nanos, r: &Response) {
            let l = format!("resp {} {} at {} sent {} fresh={}", r.request, r.replica, now, r.sent_at, r.fresh);
            self.log.lock().unwrap().push(l);
        }
    }

    fn engine(script: Vec<Decision>) -> (Engine, Log) {
        let log = Log::default();
        let cfg = CoordinatorConfig {
            id: 0,
            read_consistency: Consistency::One,
            write_consistency: Consistency::One,
            read_repair: 0.0,
            park_capacity: 1,
            park_timeout: None,
            seed: 1,
        };
        let selector = Box::new(Scripted { script, log: log.clone() });
        let core = CoordinatorCore::new(cfg, selector, Box::new(NoOracle)).with_limits(EngineLimits::CASSANDRA_DRIVER);
        (Engine::new(core, 1_000), log)
    }

    fn take(log: &Log) -> Vec<String> {
        std::mem::take(&mut *log.lock().unwrap())
    }

    #[test]
    fn answers_find_their_ticket_by_node_and_latency() {
        let (mut e, log) = engine(vec![]);
        assert_eq!(e.pick(10, 7, &[2, 1, 0]), Some(2));
        assert_eq!(e.pick(20, 8, &[2, 1, 0]), Some(2));
        // the driver's latency says the attempt started at 19: the second read
        e.answered(25, 2, 6, true);
        e.answered(40, 2, 30, true);
        e.answered(41, 2, 1, true);
        assert_eq!(
            take(&log),
            ["sent 1 2", "sent 2 2", "resp 2 2 at 25 sent 20 fresh=false", "resp 1 2 at 40 sent 10 fresh=false"]
        );
        let s = e.stats();
        assert_eq!((s.picked, s.succeeded, s.unmatched, e.outstanding()), (2, 3, 1, 0));
    }

    #[test]
    fn a_failure_is_retried_where_the_core_says_and_the_plan_follows_it() {
        let (mut e, log) = engine(vec![Decision::to(1), Decision::to(0)]);
        assert_eq!(e.pick(10, 7, &[2, 1, 0]), Some(1));
        e.answered(20, 1, 10, false);
        // the core's retry (the selector chose 0) leads the plan; then the fallback order
        assert_eq!(e.fallback_next(20, 7, &[2, 1, 0], &[]), Some(0));
        // then the rest in the core's fallback order: 0 has the retry out, 2 and 1 none (the plan
        // itself leaves out 1, the pick)
        assert_eq!(e.fallback_next(21, 7, &[2, 1, 0], &[0]), Some(2));
        e.answered(30, 0, 9, true);
        let s = e.stats();
        assert_eq!((s.picked, s.failed, s.succeeded, s.retried, e.outstanding()), (1, 1, 1, 1, 0));
        assert_eq!(
            take(&log),
            ["sent 1 1", "resp 1 1 at 20 sent 10 fresh=false", "sent 1 0", "resp 1 0 at 30 sent 20 fresh=false"]
        );
    }

    #[test]
    fn a_wait_in_pick_is_sent_at_once_and_counted_forced() {
        let (mut e, _log) = engine(vec![Decision::to(2), Decision::Wait { retry_at: None }]);
        assert_eq!(e.pick(10, 7, &[2, 1, 0]), Some(2));
        assert_eq!(e.pick(11, 8, &[2, 1, 0]), Some(1), "2 has one out; 1 is the first of the rest");
        assert_eq!(e.stats().forced, 1);
    }

    #[test]
    fn tickets_the_driver_never_reports_on_expire_as_failures_and_do_not_leak() {
        let (mut e, log) = engine(vec![]);
        e.pick(10, 7, &[2, 1, 0]);
        take(&log);
        // past the bound, the next event reports it failed; the core's retry has no driver call
        // to carry it and fails too, and so on until the core gives up
        e.pick(1_010, 8, &[2, 1, 0]);
        let s = e.stats();
        assert_eq!((s.expired, s.undeliverable, e.outstanding()), (1, 2, 1));
        let log = take(&log);
        assert_eq!(log[..2], ["resp 1 2 at 1010 sent 10 fresh=false".to_string(), "sent 1 1".into()], "{log:?}");
        e.answered(1_020, 2, 10, true);
        assert_eq!(e.outstanding(), 0);
    }

    #[test]
    fn a_poll_rides_on_one_answer_only() {
        let (mut e, log) = engine(vec![]);
        e.polled(5, 2, Feedback { queue_len: 4, ..Feedback::default() });
        for t in [10, 20] {
            e.pick(t, 7, &[2]);
            e.answered(t + 5, 2, 5, true);
        }
        let fresh: Vec<bool> =
            take(&log).iter().filter(|l| l.starts_with("resp")).map(|l| l.ends_with("true")).collect();
        assert_eq!(fresh, [true, false]);
        assert_eq!(e.stats().polls, 1);
    }
}
