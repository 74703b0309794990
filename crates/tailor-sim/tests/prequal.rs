//! Prequal in the simulator: probes travel to the key's replicas and back, and the pool they
//! fill steers reads away from the slow servers that random selection keeps hitting.

use tailor_core::results::RunResult;
use tailor_spec::{expand, presets::preset};

fn run(selector: &str) -> RunResult {
    let spec = preset("c3")
        .unwrap()
        .with_overrides(&[
            "seeds=[2]",
            "workload.requests=60000",
            "workload.warmup_ms=200",
            "sweep.cluster.fluctuation.interval_ms=500",
            &format!("compare.selectors={selector}"),
        ])
        .unwrap();
    let mut outs = tailor_sim::run_all(&expand(&spec).unwrap(), None, &|_, _| {}).unwrap();
    outs.remove(0).result
}

#[test]
fn prequal_probes_and_beats_random_at_p99() {
    let (prequal, random) = (run("prequal"), run("random"));
    let probes = prequal.extra["probes_per_read"];
    assert!((2.9..=3.0).contains(&probes), "every replica of a k = 3 key by default: {probes}");
    assert!(!random.extra.contains_key("probes_per_read"));
    let (p, r) = (prequal.read_latency_ms.p99, random.read_latency_ms.p99);
    eprintln!("p99 prequal {p:.1} ms, random {r:.1} ms, probes per read {probes:.2}");
    assert!(p < 0.5 * r, "prequal p99 {p} ms vs random {r} ms");
}
