//! Every selector reads only what its registration declares (issue 31, item 1).
//!
//! Engines feed a selector by its declaration: the simulator measures `dq` only when a
//! selector of the run declares it, Cassandra cannot give most facts and the store gives no
//! probes. A selector that reads a fact it did not declare therefore sees 0 in one engine and
//! the real value in another, silently. This test makes that loud: two copies of each selector
//! see the same script of reads, answers, heartbeat facts, timers and probe answers, except that
//! the second one's undeclared facts (and the size oracle's hint, when undeclared) are replaced
//! by other random values. Their decisions must not differ. A new selector is in [`SELECTORS`]
//! once registered, so it is held to its declaration here without editing this test.

use tailor_core::facts::{Feedback, ProbeReply, Response};
use tailor_core::model::{NodeId, Op, RequestView, SizeHint};
use tailor_core::selector::grpc_wrr::GrpcWrrConfig;
use tailor_core::selector::{self, registry, Blind, Decision, Fact, Needs, Rng, SelectorConfig, SelectorEnv};
use tailor_core::time::{Nanos, US};

const SERVERS: usize = 6;
const STEPS: usize = 3_000;

/// One event of the script, drawn once and shown to both copies.
enum Step {
    Read { view: RequestView, replicas: Vec<NodeId> },
    Answer { pick: usize, latency: Nanos, feedback: Feedback, fresh: bool },
    Facts(Feedback),
}

/// Random facts from `from` at `now`, every field drawn.
fn facts(rng: &mut Rng, from: NodeId, now: Nanos) -> Feedback {
    Feedback {
        from,
        timestamp: now,
        queue_len: rng.below(120) as u32,
        service_time: 50 * US + rng.below(2_000) as u64 * US,
        completed: now / (100 * US),
        busy: rng.below(3) == 0,
        dq: rng.below(21) as i64 - 10,
        pending_work: rng.below(20_000) as u64 * US,
        bloom_bits: (0..rng.below(4)).map(|_| rng.next_u64() as u32).collect(),
        bloom_generation: 1,
        utilization: rng.unit(),
    }
}

/// `fb` with every fact `needs` does not declare replaced by another random value.
fn scramble(needs: &Needs, rng: &mut Rng, fb: &Feedback) -> Feedback {
    let other = facts(rng, fb.from, fb.timestamp);
    let mut out = fb.clone();
    let keep = |f: Fact| needs.reads(f);
    if !keep(Fact::QueueLen) {
        out.queue_len = other.queue_len;
    }
    if !keep(Fact::ServiceTime) {
        out.service_time = other.service_time;
    }
    if !keep(Fact::Busy) {
        out.busy = other.busy;
    }
    if !keep(Fact::Dq) {
        out.dq = other.dq;
    }
    if !keep(Fact::PendingWork) {
        out.pending_work = other.pending_work;
    }
    if !keep(Fact::BloomBits) {
        out.bloom_bits = other.bloom_bits;
    }
    if !keep(Fact::Utilization) {
        out.utilization = other.utilization;
    }
    out
}

/// A size hint, every field drawn (without a service estimate a third of the time, as from an
/// engine without a size model).
fn hint(rng: &mut Rng) -> SizeHint {
    let bytes = 100 + rng.below(500_000) as u64;
    SizeHint { bytes: Some(bytes), service: (rng.below(3) != 0).then_some(bytes * 10), large: bytes > 100_000 }
}

/// The script: reads of random keys on 3 of the servers, answers to copies in flight, and
/// heartbeat facts, with the clock moving on by up to 0.5 ms between events and now and then
/// by 100 to 300 ms.
fn script(seed: u64) -> Vec<(Nanos, Step)> {
    let mut rng = Rng::new(seed, 0x5C21);
    let mut now = 0;
    let mut steps = Vec::with_capacity(STEPS);
    for id in 0..STEPS as u64 {
        now += US + rng.below(500) as u64 * US;
        if rng.below(100) == 0 {
            // a lull: feedback grows old (TAP then predicts queues from their trend)
            now += 100 * US * 1_000 + rng.below(200) as u64 * US * 1_000;
        }
        let step = match rng.below(10) {
            0..=4 => {
                let first = rng.below(SERVERS);
                let replicas = (0..3).map(|i| ((first + i) % SERVERS) as NodeId).collect();
                let view = RequestView {
                    id,
                    key: rng.next_u64(),
                    op: Op::Read,
                    release: now,
                    coordinator: 0,
                    hint: hint(&mut rng),
                };
                Step::Read { view, replicas }
            }
            5..=8 => Step::Answer {
                pick: rng.below(1 << 16),
                latency: 1 + rng.below(5_000) as u64 * 100,
                feedback: facts(&mut rng, 0, now),
                fresh: rng.below(8) != 0,
            },
            _ => {
                let from = rng.below(SERVERS) as NodeId;
                Step::Facts(facts(&mut rng, from, now))
            }
        };
        steps.push((now, step));
    }
    steps
}

/// A copy in flight: the request, where it went and when.
struct Out {
    view: RequestView,
    replica: NodeId,
    sent_at: Nanos,
}

/// Every selector's defaults, except gRPC WRR's periods (seconds and minutes in gRFC A58),
/// scaled to the script's few seconds so that its weights are used within it.
fn config() -> SelectorConfig {
    let grpc_wrr = GrpcWrrConfig {
        blackout_period_ms: 200.0,
        weight_expiration_period_ms: 1_000.0,
        weight_update_period_ms: 100.0,
        ..GrpcWrrConfig::default()
    };
    SelectorConfig { grpc_wrr, ..SelectorConfig::default() }
}

/// What one copy of a selector decided over the script, in order.
fn run(name: &str, steps: &[(Nanos, Step)], blur: Option<&Needs>, seed: u64) -> Vec<String> {
    let env = SelectorEnv { coordinator: 0, coordinators: 1, servers: SERVERS, replication: 3, workers: 2, seed };
    let mut sel = selector::build(name, &config(), &env).expect("a registered selector builds");
    let mut noise = Rng::new(seed, 0xB1_0E);
    let mut out: Vec<Out> = Vec::new();
    let mut probes = Vec::new();
    let mut log = Vec::new();
    for (now, step) in steps {
        let now = *now;
        if sel.next_timer().is_some_and(|t| t <= now) {
            sel.on_timer(now);
        }
        match step {
            Step::Read { view, replicas } => {
                let mut view = *view;
                if blur.is_some_and(|n| !n.size_oracle) {
                    view.hint = hint(&mut noise);
                }
                let d = sel.select(now, &view, replicas, &Blind);
                log.push(format!("{now} {}: {d:?}", view.id));
                if let Decision::Send { replica, .. } = d {
                    sel.on_sent(now, &view, replica);
                    out.push(Out { view, replica, sent_at: now });
                }
                probes.clear();
                sel.probes(&mut probes);
                for (i, &p) in probes.iter().enumerate() {
                    let reply = ProbeReply { rif: (view.id % 7 + i as u64) as u32, latency: 100 * US * (p as u64 + 1) };
                    sel.on_probe(now, p, &reply);
                }
            }
            Step::Answer { pick, latency, feedback, fresh } if !out.is_empty() => {
                let copy = out.swap_remove(pick % out.len());
                let mut fb = Feedback { from: copy.replica, ..feedback.clone() };
                if let Some(needs) = blur {
                    fb = scramble(needs, &mut noise, &fb);
                }
                let sent_at = copy.sent_at.min(now.saturating_sub(*latency));
                let large = copy.view.hint.large;
                let resp = Response {
                    request: copy.view.id,
                    replica: copy.replica,
                    sent_at,
                    large,
                    feedback: &fb,
                    fresh: *fresh,
                };
                sel.on_response(now, &resp);
            }
            Step::Answer { .. } => {}
            Step::Facts(fb) => {
                let fb = match blur {
                    Some(needs) => scramble(needs, &mut noise, fb),
                    None => fb.clone(),
                };
                sel.on_facts(now, &fb);
            }
        }
        log.push(format!("timer {:?}", sel.next_timer()));
    }
    log
}

#[test]
fn every_selector_decides_alike_whatever_the_facts_it_does_not_declare() {
    for name in selector::SELECTORS {
        let needs = registry::needs(name).expect("registered");
        for seed in [1, 2, 3] {
            let steps = script(seed);
            let seen = run(name, &steps, None, seed);
            let blurred = run(name, &steps, Some(&needs), seed);
            if let Some(i) = seen.iter().zip(&blurred).position(|(a, b)| a != b) {
                panic!(
                    "selector `{name}` (seed {seed}) reads something its registration does not declare \
                     ({needs:?}): with the undeclared facts changed, step {i} went from `{}` to `{}`",
                    seen[i], blurred[i]
                );
            }
        }
    }
}

/// The script reaches what each selector declares: declared as needing nothing, every selector
/// that reads facts or the size oracle decides otherwise, so the test above would see it.
#[test]
fn the_check_sees_a_selector_that_reads_an_undeclared_fact() {
    for name in selector::SELECTORS {
        let needs = registry::needs(name).expect("registered");
        if needs.facts.is_empty() && !needs.size_oracle {
            continue;
        }
        let steps = script(1);
        let seen = run(name, &steps, None, 1);
        let blurred = run(name, &steps, Some(&Needs::NOTHING), 1);
        assert_ne!(seen, blurred, "blurring `{name}`'s declared facts ({needs:?}) changes none of its decisions");
    }
}

/// Every fact a selector declares changes its decisions: an engine that cannot feed a declared
/// fact refuses the selector (Cassandra), so a declaration must not claim more than the rule reads.
#[test]
fn every_declared_fact_is_read() {
    for name in selector::SELECTORS {
        let needs = registry::needs(name).expect("registered");
        for (i, fact) in needs.facts.iter().enumerate() {
            let rest: Vec<Fact> = needs.facts.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &f)| f).collect();
            let without = Needs { facts: Box::leak(rest.into_boxed_slice()), ..needs };
            let changed = [1, 2, 3].iter().any(|&seed| {
                let steps = script(seed);
                run(name, &steps, None, seed) != run(name, &steps, Some(&without), seed)
            });
            assert!(changed, "selector `{name}` declares {fact:?} but decides alike whatever its value");
        }
        if needs.size_oracle {
            let without = Needs { size_oracle: false, ..needs };
            let steps = script(1);
            assert_ne!(
                run(name, &steps, None, 1),
                run(name, &steps, Some(&without), 1),
                "`{name}` declares the size oracle"
            );
        }
    }
}
