//! `cargo bench -p tailor-core`: what the scheduling core costs per request.
//!
//! - Decision cost per selector: `select` + `on_sent` + `on_response` for one read among three
//!   replicas, with feedback that moves (queue lengths and service times vary), in ns/op.
//! - Queueing cost per local policy: one `push` and one `pop` with 64 jobs waiting, jobs of
//!   mixed sizes, priorities, size classes, multi-get bottlenecks and flows, in ns/op.
//! - Framework overhead: the strategy path with a no-op selector (first replica) and the FCFS
//!   local queue through `ReplicaCore` (admit, start, finish with facts), against a direct path
//!   doing the same bookkeeping by hand (first replica, a `VecDeque`), in ns/op and as a share
//!   of a 10 µs request (a store serving 100k requests/s per core).
//!
//! Not a test: figures vary with the machine; run it on an idle one and compare rows, not
//! absolute numbers. A plain table printer (no benchmark framework) keeps the build light.

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Instant;
use tailor_core::facts::{Feedback, Response};
use tailor_core::local::fcfs::Fcfs;
use tailor_core::local::{self, LocalConfig, LOCALS};
use tailor_core::model::{JobMeta, NodeId, Op, RequestView, SizeHint, Tags};
use tailor_core::replica::{Arrival, ReplicaCore};
use tailor_core::selector::{self, Blind, Decision, ReplicaSelector, SelectorConfig, SelectorEnv};
use tailor_core::time::{Nanos, US};

const OPS: u64 = 200_000;

fn request(id: u64, now: Nanos) -> RequestView {
    let hint = SizeHint { bytes: Some(1024), service: Some(20 * US), large: id.is_multiple_of(50) };
    RequestView { id, key: id.wrapping_mul(0x9E37_79B9), op: Op::Read, release: now, coordinator: 0, hint }
}

/// ns per select + on_sent + on_response of `s` (a waiting decision counts as one op, with
/// the request then sent to the first replica so the feedback loop keeps going).
fn decision_cost(s: &mut dyn ReplicaSelector) -> f64 {
    let replicas: [NodeId; 3] = [0, 1, 2];
    let mut completed = [0u64; 3];
    let start = Instant::now();
    for id in 0..OPS {
        let now = id * 10 * US;
        let req = request(id, now);
        let replica = match s.select(now, &req, &replicas, &Blind) {
            Decision::Send { replica, .. } => replica,
            Decision::Wait { .. } => replicas[0],
        };
        s.on_sent(now, &req, replica);
        completed[replica as usize] += 1;
        let r = replica as u64;
        let feedback = Feedback {
            from: replica,
            timestamp: now + 50 * US,
            queue_len: ((id + r) % 7) as u32,
            service_time: (20 + (id * 7 + r * 13) % 40) * US,
            completed: completed[replica as usize],
            pending_work: ((id + r) % 5) * 20 * US,
            ..Feedback::default()
        };
        let resp =
            Response { request: id, replica, sent_at: now, large: req.hint.large, feedback: &feedback, fresh: true };
        s.on_response(now + 60 * US, &resp);
        if let Some(t) = s.next_timer() {
            if t <= now {
                s.on_timer(now);
            }
        }
    }
    start.elapsed().as_nanos() as f64 / OPS as f64
}

/// Jobs kept waiting while a local policy is timed: a queue of this depth is where policies
/// that sort or scan differ from FIFO.
const BACKLOG: u64 = 64;

/// The `id`-th job of the local policies' bench: sizes over two orders of magnitude, a few
/// priorities, size classes, bottlenecks and flows, so every policy has something to order by.
fn job(id: u64, now: Nanos) -> JobMeta {
    let size = 512 << (id % 7);
    let tags = Tags {
        priority: (id % 3) as u8,
        size_class: u8::from(size >= 16 * 1024),
        bottleneck_us: (id * 37 % 500) as u16,
        flow: (id % 5) as u16,
    };
    JobMeta {
        id,
        release: now.saturating_sub(id % 4 * 100 * US),
        enqueued: now,
        service: size / 64 * US / 16 + US,
        size,
        tags,
    }
}

/// ns per push + pop of local policy `name`, with [`BACKLOG`] jobs waiting throughout.
fn local_cost(name: &str) -> f64 {
    let mut queue = local::build::<u64>(name, &LocalConfig::default(), 7).expect("a registered local policy");
    for id in 0..BACKLOG {
        queue.push(id * US, job(id, id * US), id);
    }
    let start = Instant::now();
    for id in BACKLOG..BACKLOG + OPS {
        let now = id * 10 * US;
        queue.push(now, job(id, now), id);
        black_box(queue.pop(now).expect("jobs wait"));
    }
    start.elapsed().as_nanos() as f64 / OPS as f64
}

/// The first replica, always: the framework with no strategy in it.
struct NoOp;
impl ReplicaSelector for NoOp {
    fn select(&mut self, _: Nanos, _: &RequestView, replicas: &[NodeId], _: &dyn selector::World) -> Decision {
        Decision::to(replicas[0])
    }
}

/// ns per request through the strategy path: no-op selector, `ReplicaCore` with FCFS.
fn strategy_path() -> f64 {
    let mut sel: Box<dyn ReplicaSelector> = Box::new(NoOp);
    let mut core: ReplicaCore<u64> = ReplicaCore::new(0, Box::new(Fcfs::new()), 4, 1 << 20);
    let replicas: [NodeId; 3] = [0, 1, 2];
    let start = Instant::now();
    for id in 0..OPS {
        let now = id * 10 * US;
        let req = request(id, now);
        let Decision::Send { replica, tags } = sel.select(now, &req, &replicas, &Blind) else { unreachable!() };
        sel.on_sent(now, &req, replica);
        core.admit(now, Arrival { id, age: 0, service: 20 * US, size: 1024, tags }, id);
        let (meta, job) = core.start(now).expect("a free worker");
        let feedback = core.finish(now + 20 * US, meta.id, 20 * US);
        let resp = Response { request: job, replica, sent_at: now, large: false, feedback: &feedback, fresh: true };
        sel.on_response(now + 30 * US, black_box(&resp));
    }
    start.elapsed().as_nanos() as f64 / OPS as f64
}

/// ns per request through a hand-written path doing the same bookkeeping.
fn direct_path() -> f64 {
    let replicas: [NodeId; 3] = [0, 1, 2];
    let mut queue: VecDeque<u64> = VecDeque::new();
    let (mut waiting, mut completed) = (0u32, 0u64);
    let start = Instant::now();
    for id in 0..OPS {
        let now = id * 10 * US;
        let req = black_box(request(id, now));
        let replica = black_box(replicas[0]);
        queue.push_back(req.id);
        waiting += 1;
        let job = queue.pop_front().expect("just queued");
        waiting -= 1;
        completed += 1;
        let feedback = Feedback { from: replica, timestamp: now, queue_len: waiting, completed, ..Feedback::default() };
        black_box((job, Tags::default(), feedback));
    }
    start.elapsed().as_nanos() as f64 / OPS as f64
}

/// Median of five runs of `f`.
fn median(mut f: impl FnMut() -> f64) -> f64 {
    let mut v: Vec<f64> = (0..5).map(|_| f()).collect();
    v.sort_by(f64::total_cmp);
    v[2]
}

fn main() {
    let env = SelectorEnv { coordinator: 0, coordinators: 3, servers: 3, replication: 3, workers: 4, seed: 7 };
    let cfg = SelectorConfig::default();
    println!("{:<18} {:>14}", "selector", "ns/decision");
    for name in selector::SELECTORS {
        let ns = median(|| {
            let mut s = selector::build(name, &cfg, &env).expect("a known selector");
            decision_cost(s.as_mut())
        });
        let flag = if ns < 1000.0 { "" } else { "  (above 1 µs)" };
        println!("{name:<18} {ns:>14.1}{flag}");
    }
    println!();
    println!("{:<18} {:>14}", "local policy", "ns/push+pop");
    for name in LOCALS {
        println!("{name:<18} {:>14.1}", median(|| local_cost(name)));
    }
    let framework = median(strategy_path);
    let direct = median(direct_path);
    let over = (framework - direct).max(0.0);
    println!();
    println!("{:<34} {:>10}", "path (per request)", "ns");
    println!("{:<34} {:>10.1}", "no-op selector + FCFS ReplicaCore", framework);
    println!("{:<34} {:>10.1}", "direct (first replica, VecDeque)", direct);
    println!("{:<34} {:>10.1}  = {:.2} % of a 10 µs request", "framework overhead", over, over / 100.0);
}
