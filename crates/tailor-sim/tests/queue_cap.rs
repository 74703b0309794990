//! A server's queue cap (`cluster.max_queue`, the replica core's admission rule): off by default;
//! on, a server refuses a request that finds that many waiting, the coordinator retries it on
//! another replica, and a request every replica refused fails.

use tailor_core::results::RunResult;
use tailor_spec::{expand, Spec};

fn run(sets: &[&str]) -> RunResult {
    let spec = Spec::default().with_overrides(sets).unwrap();
    let mut outs = tailor_sim::run_all(&expand(&spec).unwrap(), None, &|_, _| {}).unwrap();
    outs.remove(0).result
}

/// Overloaded: 3 servers of 1 worker, open loop above capacity.
const OVERLOAD: &[&str] = &[
    "cluster.servers=3",
    "cluster.replication=3",
    "cluster.workers=1",
    "workload.load=1.3",
    "workload.requests=4000",
    "compare.selectors=random",
];

#[test]
fn refusals_are_retried_elsewhere_then_fail_and_no_cap_changes_nothing() {
    let free = run(OVERLOAD);
    let unset = run(&[OVERLOAD, &["cluster.max_queue=1000000"]].concat());
    assert!(!free.extra.contains_key("refused_copies") && free.errors == 0);
    assert_eq!(unset.read_latency_ms, free.read_latency_ms, "a cap never reached changes nothing");
    assert_eq!(unset.extra.get("refused_copies"), Some(&0.0));
    let capped = run(&[OVERLOAD, &["cluster.max_queue=2"]].concat());
    let refused = capped.extra["refused_copies"];
    assert!(refused > 0.0, "an overloaded server refuses: {:?}", capped.extra);
    assert!(capped.errors > 0, "some reads found every replica full");
    assert!((capped.errors as f64) < refused, "most refusals were retried elsewhere");
    assert!(capped.read_latency_ms.p99 < free.read_latency_ms.p99, "short queues, short tails");
}
