//! How far the engine is from the floor: the `c3` setup's model run by `tailor_sim::run` with the
//! random selector, and the same model run by the smallest loop that can (no strategy API, no
//! coordinator or replica cores, no facts, no request records), side by side, each the best of
//! three runs on one core. Prints requests/s, the floor's speed over the engine's, and both
//! p99s so a reader sees the two simulate the same load. Asserts nothing. Run with
//! `cargo bench -p tailor-sim --bench floor`; `TAILOR_FLOOR_SERVERS=5000` runs the setup at that
//! size instead, with clients and requests scaled as the scale bench scales them
//! (`common::size_overrides`: 3 clients and 2,000 requests per server).
//!
//! The floor is a measuring stick, not a second simulator: it models only what the `c3` setup
//! uses (Poisson arrivals, uniform keys on the ring, a random replica, read repair, fixed network
//! hops, FCFS workers, exponential service with the fluctuation), and no result of Tailor's
//! comes from it. It answers how much of a request's cost is the model itself and how much the
//! engine and the shared cores add (docs/sim-speed.md).

mod common;

use common::{size_overrides, REQUESTS_PER_SERVER};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp1};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;
use tailor_core::ring::Ring;
use tailor_core::stats::Hist;
use tailor_core::time::{from_ms, Nanos};
use tailor_spec::{expand, presets::preset, Spec};

/// One copy of a request on its way: to a server, at it, or back.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Copy {
    req: u32,
    server: u32,
    /// The copy whose answer completes the read (the others are read-repair shadows).
    main: bool,
}

/// The servers: busy workers, FCFS queues, the fluctuation's slowdown, and the completions of
/// what runs, earliest first.
struct Servers {
    busy: Vec<u32>,
    queues: Vec<VecDeque<Copy>>,
    slowdown: Vec<f64>,
    completions: BinaryHeap<Reverse<(Nanos, u64, Copy)>>,
    started: u64,
    mean_ns: f64,
    rng: SmallRng,
}

impl Servers {
    /// Start `copy` on a worker of its server at `now`.
    fn start(&mut self, now: Nanos, copy: Copy) {
        let x: f64 = Exp1.sample(&mut self.rng);
        let service = (x * self.mean_ns * self.slowdown[copy.server as usize]) as Nanos + 1;
        self.started += 1;
        self.completions.push(Reverse((now + service, self.started, copy)));
    }
}

/// The floor's run of `spec` at `rate_rps` offered requests/s: its p99 in ms.
fn floor(spec: &Spec, rate_rps: f64) -> f64 {
    let c = &spec.cluster;
    let ring = Ring::new(c.servers, c.replication, c.vnodes).expect("ring");
    let net = from_ms(c.network_delay_ms);
    let f = &c.fluctuation;
    let other = f.other_slowdown();
    let mut s = Servers {
        busy: vec![0; c.servers],
        queues: vec![VecDeque::new(); c.servers],
        slowdown: vec![1.0; c.servers],
        completions: BinaryHeap::new(),
        started: 0,
        mean_ns: c.service.mean_ms * 1e6,
        rng: SmallRng::seed_from_u64(2),
    };
    let mut rng = SmallRng::seed_from_u64(1);
    // every hop takes the same delay: first in, first out
    let mut hops: VecDeque<(Nanos, bool, Copy)> = VecDeque::new();
    let mut released: Vec<Nanos> = Vec::new();
    let mut latency = Hist::latency();
    let requests = spec.workload.requests;
    let (mut next_arrival, mut next_fluctuation, mut done) = (0, 0, 0);
    let mean_gap_ns = 1e9 / rate_rps;
    while done < requests {
        let hop_at = hops.front().map_or(Nanos::MAX, |h| h.0);
        let arrival_at = if (released.len() as u64) < requests { next_arrival } else { Nanos::MAX };
        let completion_at = s.completions.peek().map_or(Nanos::MAX, |c| c.0 .0);
        let now = hop_at.min(arrival_at).min(completion_at).min(next_fluctuation);
        if now == next_fluctuation {
            for x in &mut s.slowdown {
                *x = if s.rng.random::<f64>() < f.probability { other } else { 1.0 };
            }
            next_fluctuation += from_ms(f.interval_ms);
        } else if now == arrival_at {
            let replicas = ring.replicas(rng.random_range(0..spec.workload.keys));
            let main = rng.random_range(0..replicas.len());
            let shadows = rng.random::<f64>() < c.read_repair;
            let req = released.len() as u32;
            released.push(now);
            for (i, &server) in replicas.iter().enumerate() {
                if i == main || shadows {
                    hops.push_back((now + net, true, Copy { req, server, main: i == main }));
                }
            }
            let gap: f64 = Exp1.sample(&mut rng);
            next_arrival = now + (gap * mean_gap_ns) as Nanos + 1;
        } else if now == hop_at {
            let (_, to_server, copy) = hops.pop_front().expect("the earliest hop");
            let server = copy.server as usize;
            if !to_server {
                if copy.main {
                    latency.record_units(now - released[copy.req as usize]);
                    done += 1;
                }
            } else if s.busy[server] < c.workers as u32 {
                s.busy[server] += 1;
                s.start(now, copy);
            } else {
                s.queues[server].push_back(copy);
            }
        } else {
            let Reverse((_, _, copy)) = s.completions.pop().expect("the earliest completion");
            hops.push_back((now + net, false, copy));
            match s.queues[copy.server as usize].pop_front() {
                Some(next) => s.start(now, next),
                None => s.busy[copy.server as usize] -= 1,
            }
        }
    }
    latency.summary().p99
}

/// The best (shortest) time of three runs of `run`, and the last run's value.
fn best_of_three<T>(mut run: impl FnMut() -> T) -> (f64, T) {
    let mut best = (f64::INFINITY, None);
    for _ in 0..3 {
        let started = Instant::now();
        let out = run();
        best = (best.0.min(started.elapsed().as_secs_f64()), Some(out));
    }
    (best.0, best.1.expect("three runs"))
}

fn main() {
    let mut sets: Vec<String> = [
        "seeds=[1]",
        "sweep.cluster.fluctuation.interval_ms=500",
        "compare.selectors=[\"random\"]",
        "workload.warmup_ms=0",
    ]
    .map(String::from)
    .to_vec();
    if let Ok(servers) = std::env::var("TAILOR_FLOOR_SERVERS") {
        let servers: usize = servers.parse().expect("TAILOR_FLOOR_SERVERS is a number");
        sets.extend(size_overrides(servers, REQUESTS_PER_SERVER * servers as u64));
    }
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let spec = preset("c3").expect("c3 preset").with_overrides(&sets).expect("overrides");
    let plan = expand(&spec).expect("plans").remove(0);
    let requests = spec.workload.requests as f64;
    let (engine_secs, out) = best_of_three(|| tailor_sim::run(&plan, None).expect("run"));
    let offered = out.result.offered_rps;
    let (floor_secs, floor_p99) = best_of_three(|| floor(&plan.spec, offered));
    let size = format!("c3 setup, random, {} servers", spec.cluster.servers);
    println!("{size:<34} {:>14} {:>10}", "requests/s", "p99 ms");
    println!("{:<34} {:>14.0} {:>10.2}", "tailor_sim::run", requests / engine_secs, out.result.read_latency_ms.p99);
    println!("{:<34} {:>14.0} {:>10.2}", "floor (model only)", requests / floor_secs, floor_p99);
    println!("floor / engine: {:.2}x  (offered {offered:.0} requests/s, one core)", engine_secs / floor_secs);
}
