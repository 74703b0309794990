//! A server on a stop/continue duty cycle (`cluster.slow_servers`): saturated, it serves half
//! as much at 50 % duty; a selector that sees its latency sends it fewer reads.

use tailor_core::results::RunResult;
use tailor_spec::{expand, Spec};

fn run(sets: &[&str]) -> RunResult {
    let spec = Spec::default().with_overrides(sets).unwrap();
    let mut outs = tailor_sim::run_all(&expand(&spec).unwrap(), None, &|_, _| {}).unwrap();
    outs.remove(0).result
}

/// One server, one worker, 1 ms per request (size model, fixed), kept busy by a closed loop.
fn saturated(slow: &[&str]) -> f64 {
    let mut sets = vec![
        "cluster.servers=1",
        "cluster.replication=1",
        "cluster.workers=1",
        "cluster.service.model=size",
        "cluster.service.overhead_ms=1",
        "cluster.service.bandwidth_mbps=1e12",
        "workload.arrival=closed-loop",
        "workload.outstanding=8",
        "workload.requests=20000",
        "compare.selectors=random",
    ];
    sets.extend_from_slice(slow);
    run(&sets).throughput_rps
}

#[test]
fn a_saturated_server_stopped_half_the_time_serves_half_as_much() {
    let full = saturated(&[]);
    let half = saturated(&["cluster.slow_servers=[{server=0,duty=0.5,period_ms=100}]"]);
    assert!((full - 1000.0).abs() < 5.0, "unslowed: {full} requests/s");
    assert!((half / full - 0.5).abs() < 0.01, "slowed {half} vs {full} requests/s");
}

#[test]
fn slow_servers_stretch_the_tail_and_lor_avoids_them() {
    let base = ["cluster.servers=3", "cluster.clients=1", "workload.requests=20000", "workload.load=0.3"];
    let slow = "cluster.slow_servers=[{server=2,duty=0.5,period_ms=100}]";
    let with = |selector: &str, extra: &[&str]| {
        let sel = format!("compare.selectors={selector}");
        let sets: Vec<&str> = base.iter().copied().chain([sel.as_str()]).chain(extra.iter().copied()).collect();
        run(&sets)
    };
    let (plain, slowed) = (with("random", &[]), with("random", &[slow]));
    assert!(slowed.read_latency_ms.p99 > plain.read_latency_ms.p99 + 20.0, "a 50 ms stop shows in the tail");
    let share = |r: &RunResult| r.per_server_load[2].iter().map(|&n| n as f64).sum::<f64>();
    let lor = with("lor", &[slow]);
    assert!(share(&lor) < 0.9 * share(&slowed), "lor sends the stopped server fewer reads");
}
