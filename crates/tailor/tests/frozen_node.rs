//! Speculative retry: a frozen replica (SIGSTOP) costs a read the hedge threshold plus another
//! replica's latency instead of the request timeout. The test prints p50 / p99 / max of the reads
//! made while the replica is frozen, with speculative retry on (`99p`, the default) and off, for
//! the default selector and for round-robin (which keeps sending a third of the reads to the
//! frozen node until the failure detector marks it down). It asserts only what does not depend on
//! the machine's speed: every read succeeds, and hedges are sent only when speculative retry is on.

mod common;
use common::*;
use std::time::{Duration, Instant};
use tailor_store::cluster::ClusterOptions;
use tailor_store::config::Consistency;

const FROZEN: usize = 2;
const READERS: usize = 4;

/// Latencies of the reads made while node 2 was frozen, and the hedges sent.
fn frozen_reads(selector: &str, speculative: &str) -> (Vec<Duration>, f64) {
    let opts = ClusterOptions {
        nodes: 3,
        selector: selector.into(),
        write_consistency: Consistency::All,
        ..ClusterOptions::default()
    };
    let cl = TestCluster::start(opts, |c| {
        c.request_timeout_ms = 1000;
        c.heartbeat_ms = 100;
        c.speculative_retry = speculative.into();
    });
    let keys: Vec<String> = (0..50).map(|i| format!("f{i}")).collect();
    let mut con = cl.conn(0);
    for k in &keys {
        set(&mut con, k, &value(100, 1)).unwrap();
    }
    // enough answered reads on both coordinators for a p99 threshold
    read_for(&cl, &keys, Duration::from_millis(1500));
    cl.signal(FROZEN, libc::SIGSTOP);
    let latencies = read_for(&cl, &keys, Duration::from_millis(1500));
    cl.signal(FROZEN, libc::SIGCONT);
    let hedges = (0..2).map(|i| cl.metric(i, "tailor_speculative_retries_total", &[])).sum();
    (latencies, hedges)
}

/// Read keys through nodes 0 and 1 from `READERS` threads for `how_long`; every read's latency.
fn read_for(cl: &TestCluster, keys: &[String], how_long: Duration) -> Vec<Duration> {
    let end = Instant::now() + how_long;
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..READERS)
            .map(|t| {
                let mut con = cl.conn(t % 2);
                s.spawn(move || {
                    let mut seen = Vec::new();
                    for j in 0.. {
                        if Instant::now() >= end {
                            break;
                        }
                        let k = &keys[(t * 13 + j) % keys.len()];
                        let start = Instant::now();
                        assert!(get(&mut con, k).unwrap().is_some(), "{k} missing");
                        seen.push(start.elapsed());
                    }
                    seen
                })
            })
            .collect();
        readers.into_iter().flat_map(|r| r.join().unwrap()).collect()
    })
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

fn report(selector: &str, speculative: &str) -> f64 {
    let (mut lat, hedges) = frozen_reads(selector, speculative);
    lat.sort();
    let (p50, p99, max) = (quantile(&lat, 0.5), quantile(&lat, 0.99), quantile(&lat, 1.0));
    let slow = lat.iter().filter(|l| l.as_millis() >= 100).count();
    println!(
        "frozen replica, selector {selector}, speculative_retry {speculative}: {} reads, \
         p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms, {slow} reads ≥ 100 ms, hedges {hedges}",
        lat.len()
    );
    assert!(!lat.is_empty());
    hedges
}

#[test]
fn a_frozen_replica_costs_reads_the_hedge_threshold_not_the_timeout() {
    for selector in ["c3", "round-robin"] {
        assert_eq!(report(selector, "none"), 0.0, "{selector}: no hedges when speculative retry is off");
        let hedges = report(selector, "99p");
        if selector == "round-robin" {
            assert!(hedges > 0.0, "round-robin sends reads to the frozen node: some must be hedged");
        }
    }
}
