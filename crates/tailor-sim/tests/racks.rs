//! Two racks with a delay between them (`cluster.topology`): a hop across racks takes the
//! network delay plus the cross-rack delay, one within a rack the network delay only.

use tailor_core::results::RunResult;
use tailor_spec::{expand, Spec};

fn run(sets: &[&str]) -> RunResult {
    let spec = Spec::default().with_overrides(sets).unwrap();
    let mut outs = tailor_sim::run_all(&expand(&spec).unwrap(), None, &|_, _| {}).unwrap();
    outs.remove(0).result
}

/// One coordinator (rack 0) reading by turns from two replicas, server 0 in its rack and server
/// 1 in the other, one read at a time: 1 ms of service each, 0.5 ms each way within a rack.
fn alternating(topology: &[&str]) -> RunResult {
    let mut sets = vec![
        "cluster.servers=2",
        "cluster.replication=2",
        "cluster.clients=1",
        "cluster.workers=1",
        "cluster.network_delay_ms=0.5",
        "cluster.service.model=size",
        "cluster.service.overhead_ms=1",
        "cluster.service.bandwidth_mbps=1e12",
        "workload.arrival=closed-loop",
        "workload.outstanding=1",
        "workload.requests=10000",
        "workload.reads=1.0",
        "compare.selectors=round-robin",
    ];
    sets.extend_from_slice(topology);
    run(&sets)
}

#[test]
fn a_cross_rack_read_takes_the_cross_delay_both_ways() {
    let near = 1.0 + 2.0 * 0.5;
    let one = alternating(&[]);
    assert!((one.read_latency_ms.max - near).abs() < 0.01, "one rack: {:?}", one.read_latency_ms);
    let two = alternating(&["cluster.topology={racks=2,cross_delay_ms=5.0}"]);
    let far = near + 2.0 * 5.0;
    let l = &two.read_latency_ms;
    assert!((l.max - far).abs() < 0.01, "the far replica's reads: {l:?}");
    assert!((l.mean - (near + far) / 2.0).abs() < 0.01, "half near, half far: {l:?}");
}
