//! Multi-gets in the simulator: a multi-get is over when its last key is, its figures sit
//! beside the per-key reads', and Rein's Shortest-Bottleneck-First serves multi-gets faster
//! at the tail than first come, first served.

use tailor_core::results::RunResult;
use tailor_spec::{expand, Spec};

fn run(sets: &[&str]) -> Vec<RunResult> {
    let spec = Spec::default().with_overrides(sets).unwrap();
    tailor_sim::run_all(&expand(&spec).unwrap(), None, &|_, _| {}).unwrap().into_iter().map(|o| o.result).collect()
}

#[test]
fn a_multiget_is_as_slow_as_its_last_key() {
    let sets = ["seeds=[5]", "compare.selectors=random", "workload.requests=4000", "workload.multiget.keys=8"];
    let r = run(&sets).remove(0);
    let m = r.multiget.as_ref().expect("a multi-get section");
    assert_eq!((m.keys, m.failed), (8, 0));
    assert_eq!(m.requests, 4000, "no warm-up: every multi-get measured");
    assert_eq!(r.read_latency_ms.count, 8 * 4000, "every key is a read of its own");
    assert!(m.latency_ms.p50 > r.read_latency_ms.p50 && m.latency_ms.p99 >= r.read_latency_ms.p99, "{m:?}");
    assert!(m.straggler_gap_ms.mean > 0.0 && m.straggler_gap_ms.p99 <= m.latency_ms.max, "{m:?}");
    assert!(run(&sets[..3]).remove(0).multiget.is_none(), "no multi-gets, no section");
}

#[test]
fn a_share_of_reads_are_multigets_and_closed_loops_wait_for_the_whole() {
    let sets = [
        "seeds=[2]",
        "compare.selectors=lor",
        "workload.requests=3000",
        "workload.multiget={keys=5,fraction=0.5}",
        "workload.arrival=closed-loop",
    ];
    let r = run(&sets).remove(0);
    let m = r.multiget.as_ref().unwrap();
    let singles = 3000 - m.requests;
    assert_eq!(r.read_latency_ms.count, singles + 5 * m.requests);
    let share = m.requests as f64 / 3000.0;
    assert!((share - 0.5).abs() < 0.05, "multi-get share {share}");
}

/// Multi-gets of 4 keys, a tenth of the values 100 times larger (9 ms against 1.1 ms), 85 %
/// load: Shortest-Bottleneck-First serves the multi-gets with no large key first.
fn sbf_against_fcfs(extra: &[&str]) -> Vec<RunResult> {
    let base = [
        "seeds=[1,2]",
        "compare.selectors=c3",
        "compare.locals=fcfs,rein-sbf",
        "workload.requests=20000",
        "workload.warmup_ms=2000",
        "cluster.service.model=size",
        "workload.sizes={kind=\"mixture\",values=[1000,100000],weights=[0.9,0.1]}",
        "workload.multiget.keys=4",
        "workload.load=0.85",
    ];
    run(&base.iter().chain(extra).copied().collect::<Vec<_>>())
}

#[test]
fn rein_serves_the_median_multiget_faster_than_fcfs() {
    let runs = sbf_against_fcfs(&[]);
    for (fcfs, sbf) in runs[..2].iter().zip(&runs[2..]) {
        assert_eq!((fcfs.local.as_str(), sbf.local.as_str(), fcfs.seed), ("fcfs", "rein-sbf", sbf.seed));
        let (f, s) = (fcfs.multiget.as_ref().unwrap(), sbf.multiget.as_ref().unwrap());
        eprintln!(
            "seed {}: multi-get p50 {:.2} → {:.2} ms, p99 {:.1} → {:.1} ms",
            sbf.seed, f.latency_ms.p50, s.latency_ms.p50, f.latency_ms.p99, s.latency_ms.p99
        );
        assert!(s.latency_ms.p50 < 0.85 * f.latency_ms.p50, "{f:?} vs {s:?}");
    }
}
