//! A node slowed by injected fluctuation receives measurably fewer reads under load-aware
//! selectors than under round-robin (counted from the coordinators' metrics, not timed).

mod common;
use common::*;
use tailor_store::cluster::ClusterOptions;
use tailor_store::config::Consistency;

const SLOW: usize = 2;

/// Fraction of the reads coordinated by nodes 0 and 1 that went to the slowed node.
fn slow_share(selector: &str) -> f64 {
    let opts = ClusterOptions {
        nodes: 3,
        selector: selector.into(),
        write_consistency: Consistency::All,
        ..ClusterOptions::default()
    };
    let cl = TestCluster::start(opts, |_| {});
    let keys: Vec<String> = (0..30).map(|i| format!("s{i}")).collect();
    {
        let mut con = cl.conn(0);
        for k in &keys {
            set(&mut con, k, &value(500, 1)).unwrap();
        }
    }
    // emulate 2 ms per request everywhere, and inject fluctuation at runtime: node 2 is
    // permanently in its slow state, 10x (20 ms per request)
    for i in 0..3 {
        let mut con = cl.conn(i);
        let mut knob = |k: &str, v: &str| redis::cmd("TAILOR.SET").arg(k).arg(v).query::<()>(&mut con).unwrap();
        knob("beta_us", "2000");
        if i == SLOW {
            knob("fluct_factor", "10");
            knob("fluct_period_ms", "0");
        }
    }
    let before: Vec<f64> =
        (0..2).map(|i| cl.metric(i, "tailor_selections_total", &[&format!("replica=\"{SLOW}\"")])).collect();
    let totals: Vec<f64> = (0..2).map(|i| cl.metric(i, "tailor_selections_total", &[])).collect();
    std::thread::scope(|s| {
        for t in 0..6 {
            let mut con = cl.conn(t % 2);
            let keys = &keys;
            s.spawn(move || {
                for j in 0..80 {
                    let k = &keys[(t * 7 + j) % keys.len()];
                    assert!(get(&mut con, k).unwrap().is_some(), "{selector}: {k} missing");
                }
            });
        }
    });
    let to_slow: f64 =
        (0..2).map(|i| cl.metric(i, "tailor_selections_total", &[&format!("replica=\"{SLOW}\"")]) - before[i]).sum();
    let all: f64 = (0..2).map(|i| cl.metric(i, "tailor_selections_total", &[]) - totals[i]).sum();
    assert!(all >= 480.0, "{selector}: only {all} reads counted");
    if tailor_core::selector::probing(selector) {
        let replied: f64 = (0..2).map(|i| cl.metric(i, "tailor_probes_replied_total", &[])).sum();
        assert!(replied > 0.0, "{selector}: no probe came back over TCP");
    }
    to_slow / all
}

#[test]
fn c3_sends_fewer_reads_to_a_slowed_node_than_round_robin() {
    let rr = slow_share("round-robin");
    let c3 = slow_share("c3");
    assert!((rr - 1.0 / 3.0).abs() < 0.05, "round-robin share {rr}");
    assert!(c3 < rr * 0.6, "c3 sent {c3} of reads to the slowed node, round-robin {rr}");
}

#[test]
fn lor_sends_fewer_reads_to_a_slowed_node_than_round_robin() {
    let rr = slow_share("round-robin");
    let lor = slow_share("lor");
    assert!(lor < rr * 0.8, "lor sent {lor} of reads to the slowed node, round-robin {rr}");
}

/// Prequal over real TCP: its probes (the `Probe` message) reach the replicas and come back with
/// their requests in flight and latency, and the pool steers reads off the slowed node.
#[test]
fn prequal_probes_the_replicas_and_sends_fewer_reads_to_a_slowed_node_than_round_robin() {
    let rr = slow_share("round-robin");
    let prequal = slow_share("prequal");
    assert!(prequal < rr * 0.6, "prequal sent {prequal} of reads to the slowed node, round-robin {rr}");
}
