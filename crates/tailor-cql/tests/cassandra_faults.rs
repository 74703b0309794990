//! A fault of the spec (`cluster.faults`) injected into a real 3-node Cassandra during a bench
//! run, the real driver with Tailor's policy: node 0 killed and started again. Reads at ONE keep
//! succeeding once the driver has seen it go, its share of the reads falls, it comes back and
//! serves again, and the failover figures (the simulator's code) are there. Needs Java and
//! Maven (the jars are fetched once into the cache).

use std::time::Duration;
use tailor_cql::bench::{CqlBench, Policy};
use tailor_cql::launch::{CassandraOptions, LocalCassandra};
use tailor_spec::{Fault, FaultKind, Spec};

/// When node 0 is killed and started again, ms from the run's time 0.
const DOWN: (f64, f64) = (6000.0, 9000.0);
/// How long after the kill reads may still fail (the driver sees the broken connections).
const DETECTION_MS: f64 = 2000.0;

#[test]
fn a_killed_node_is_routed_around_restarts_and_serves_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = CassandraOptions { nodes: 3, heap_mb: 384, niceness: 5, ..CassandraOptions::default() };
    let mut cluster = LocalCassandra::start(&opts, dir.path()).expect("start Cassandra");
    let mut spec = Spec::default();
    spec.cluster.servers = 3;
    spec.cluster.replication = 3;
    spec.workload.keys = 300;
    spec.workload.reads = 1.0;
    spec.cluster.faults =
        vec![Fault { kind: FaultKind::Down, server: 0, start_ms: DOWN.0, end_ms: DOWN.1, ..Fault::default() }];
    let mut cfg = tailor_bench::BenchConfig::new(cluster.contact_points(), spec);
    cfg.rate = Some(150.0);
    // long enough for the node to start again on a busy machine and serve for a while
    cfg.duration = Some(Duration::from_secs(90));
    cfg.warmup = Some(Duration::from_secs(2));
    cfg.connections = 16;
    let bench = CqlBench { policy: Policy::parse("lor").expect("lor"), poll: None, pids: cluster.pids() };
    let out = tailor_cql::faults::run(&mut cluster, cfg, &bench).expect("the bench runs");
    let r = out.run();
    eprintln!("{} reads, {} errors, extra {:?}", r.requests, r.errors, r.extra);
    let back = r.extra.get("node0_back_ms").copied().unwrap_or_else(|| panic!("node 0 never came back: {r:?}"));
    assert!(back > DOWN.1, "restarted at the fault's end: {back}");
    let failed_late: Vec<_> = out
        .reads
        .iter()
        .filter(|x| x.failed && x.intended as f64 / 1e6 > DOWN.0 + DETECTION_MS)
        .map(|x| x.intended / 1_000_000)
        .collect();
    assert!(failed_late.is_empty(), "reads at ONE fail after detection, at ms {failed_late:?}");

    let f = r.failover.as_ref().expect("a failover section");
    let o = &f.faults[0];
    eprintln!("fault: {o:?}");
    assert_eq!((o.kind.as_str(), o.server), ("down", 0));
    let shed = o.shed_ms.unwrap_or_else(|| panic!("the dead node was never shed: {o:?}"));
    assert!(shed <= DETECTION_MS, "{o:?}");
    assert!(o.share_during < 1.0 / 6.0, "{o:?}");
    assert!(o.p99_before_ms > 0.0 && o.p99_during_ms > 0.0, "{o:?}");
    // the timeline has one 100 ms window after another, one share per node
    let windows = &f.timeline;
    assert!(windows.len() >= 850, "{} windows", windows.len());
    assert!(windows.iter().all(|w| w.share.len() == 3));
    let served_again = windows.iter().filter(|w| w.start_ms > back + 2000.0).filter(|w| w.share[0] > 0.0).count();
    assert!(served_again >= 10, "node 0 serves again after its restart at {back} ms: {served_again} windows");
}
