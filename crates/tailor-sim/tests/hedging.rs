//! Speculative retry in the simulator: hedging late reads cuts the tail a slow server causes,
//! and the extra reads it sends stay within the budget.

use tailor_core::coordinator::speculation::BURST;
use tailor_core::results::RunResult;
use tailor_spec::{expand, Spec};

/// 12 servers at 30 % load; every 2 s each server is 3× slower with probability 0.1, and the
/// selector (random) does not steer around it: only hedging can.
fn run(sets: &[&str]) -> RunResult {
    let base = [
        "seeds=[3]",
        "compare.selectors=random",
        "workload.requests=30000",
        "workload.load=0.3",
        "cluster.fluctuation.interval_ms=2000",
        "cluster.fluctuation.mode=slower",
        "cluster.fluctuation.factor=3",
        "cluster.fluctuation.probability=0.1",
    ];
    let all: Vec<&str> = base.iter().chain(sets).copied().collect();
    let spec = Spec::default().with_overrides(&all).unwrap();
    let mut outs = tailor_sim::run_all(&expand(&spec).unwrap(), None, &|_, _| {}).unwrap();
    outs.remove(0).result
}

#[test]
fn hedging_at_p95_lowers_p99_within_its_budget() {
    let off = run(&[]);
    assert!(!off.extra.contains_key("hedge_ratio"), "no hedging, no figure");
    let budget = 0.1;
    let on = run(&["cluster.speculative_retry=95p", &format!("cluster.speculative_budget={budget}")]);
    let ratio = on.extra["hedge_ratio"];
    // each coordinator starts with a burst of tokens on top of what its reads earn
    let allowance = budget + (12 * BURST) as f64 / 30_000.0;
    assert!(ratio > 0.0 && ratio <= allowance, "hedge ratio {ratio} vs allowance {allowance}");
    let (p99_off, p99_on) = (off.read_latency_ms.p99, on.read_latency_ms.p99);
    eprintln!("p99 off {p99_off:.1} ms, hedged at p95 {p99_on:.1} ms, hedge ratio {ratio:.4}");
    assert!(p99_on < 0.8 * p99_off, "p99 {p99_on} ms hedged vs {p99_off} ms");
    assert_eq!(on.read_latency_ms.count, off.read_latency_ms.count, "every read answered once");
}

/// Jobs the servers ran to completion.
fn completions(r: &RunResult) -> u64 {
    r.queueing.as_ref().expect("simulator runs measure queues").servers.iter().map(|s| s.completions).sum()
}

#[test]
fn cancelling_the_losing_copy_saves_work_and_keeps_the_tail() {
    let hedged = ["cluster.speculative_retry=95p", "cluster.speculative_budget=0.1"];
    let plain = run(&[]);
    let kept = run(&hedged);
    assert!(kept.hedge_cancel.is_none(), "no cancelling, no figure");
    let cancelled = run(&[&hedged[..], &["cluster.hedge_cancel=true"]].concat());
    let c = cancelled.hedge_cancel.expect("the run's cancellation figures");
    let (base, extra_kept, extra_cancelled) = (completions(&plain), completions(&kept), completions(&cancelled));
    let (p99_kept, p99_cancelled) = (kept.read_latency_ms.p99, cancelled.read_latency_ms.p99);
    eprintln!(
        "jobs run: {base} unhedged, {extra_kept} hedged, {extra_cancelled} hedged with cancel ({} asked, {} dropped, \
         {:.0} ms saved); p99 {p99_kept:.1} ms kept, {p99_cancelled:.1} ms cancelled",
        c.requested, c.cancelled, c.work_saved_ms
    );
    assert!(c.cancelled > 0 && c.cancelled <= c.requested && c.work_saved_ms > 0.0, "{c:?}");
    assert!(extra_cancelled - base < extra_kept - base, "cancelling lowers the extra jobs hedging runs");
    assert!(p99_cancelled <= p99_kept * 1.02, "p99 {p99_cancelled} ms with cancel vs {p99_kept} ms without");
    assert_eq!(cancelled.read_latency_ms.count, plain.read_latency_ms.count, "every read answered once");
}
