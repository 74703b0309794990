//! A run is a pure function of its plan: the same spec and seed give the same bits.

use tailor_spec::{expand, presets::preset};

#[test]
fn same_plan_same_results_bit_for_bit() {
    let spec = preset("heron")
        .unwrap()
        .with_overrides(&[
            "workload.requests=20000",
            "seeds=[7]",
            "sweep.workload.sizes.weights=[[0.9,0.1]]",
            "compare.selectors=c3,heron,tap",
        ])
        .unwrap();
    let plans = expand(&spec).unwrap();
    let a = tailor_sim::run_all(&plans, None, &|_, _| {}).unwrap();
    let b = tailor_sim::run_all(&plans, None, &|_, _| {}).unwrap();
    assert_eq!(a, b);
    let other_seed = spec.with_overrides(&["seeds=[8]"]).unwrap();
    let c = tailor_sim::run_all(&expand(&other_seed).unwrap(), None, &|_, _| {}).unwrap();
    assert_ne!(a[0].result.read_latency_ms, c[0].result.read_latency_ms);
}

/// The property behind "a run is a pure function of its spec and seed", for every strategy: a new
/// selector or local policy is in `SELECTORS`/`LOCALS` once registered, so it is held to it here
/// without editing this test.
#[test]
fn every_selector_and_local_policy_is_deterministic_for_a_seed() {
    let spec = preset("c3")
        .unwrap()
        .with_overrides(&[
            "workload.requests=1000",
            "workload.warmup_ms=0",
            "seeds=[11]",
            "sweep.cluster.fluctuation.interval_ms=[100]",
            &format!("compare.selectors={}", tailor_core::selector::SELECTORS.join(",")),
            &format!("compare.locals={}", tailor_core::local::LOCALS.join(",")),
        ])
        .unwrap();
    let plans = expand(&spec).unwrap();
    let a = tailor_sim::run_all(&plans, None, &|_, _| {}).unwrap();
    let b = tailor_sim::run_all(&plans, None, &|_, _| {}).unwrap();
    assert_eq!(a.len(), tailor_core::selector::SELECTORS.len() * tailor_core::local::LOCALS.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "{} / {}: the same seed gave different results", x.result.selector, x.result.local);
    }
}

#[test]
fn every_selector_and_local_policy_completes_every_request() {
    let spec = preset("europar")
        .unwrap()
        .with_overrides(&[
            "workload.requests=3000",
            "workload.reads=0.9",
            "seeds=[1]",
            "sweep.workload.load=0.8",
            &format!("compare.selectors={}", tailor_core::selector::SELECTORS.join(",")),
            &format!("compare.locals={}", tailor_core::local::LOCALS.join(",")),
        ])
        .unwrap();
    let plans = expand(&spec).unwrap();
    for out in tailor_sim::run_all(&plans, None, &|_, _| {}).unwrap() {
        let r = &out.result;
        let writes = r.write_latency_ms.map(|w| w.count).unwrap_or(0);
        assert_eq!(r.read_latency_ms.count + writes, 3000, "{} / {}", r.selector, r.local);
        assert!(r.read_latency_ms.p50 > 0.0 && r.read_latency_ms.p50 <= r.read_latency_ms.p99);
    }
}

#[test]
fn closed_loop_and_trace_replay_run() {
    let spec = preset("hector-cache")
        .unwrap()
        .with_overrides(&["workload.requests=5000", "workload.warmup_ms=0", "seeds=[1]", "compare.selectors=c3"])
        .unwrap();
    for out in tailor_sim::run_all(&expand(&spec).unwrap(), None, &|_, _| {}).unwrap() {
        assert!(out.result.throughput_rps > 0.0);
        assert!(out.result.extra["cache_hit_ratio"] > 0.0);
    }
    let trace = "time,key,op,size\n0.0,1,read,1000\n0.5,2,write,2000\n1.0,user:3,get,500\n";
    let spec = tailor_spec::Spec::default()
        .with_overrides(&[
            "workload.arrival=trace",
            "workload.trace=t.csv",
            "compare.selectors=lor",
            "workload.requests=10",
        ])
        .unwrap();
    let records = tailor_core::workload::parse_trace(trace).unwrap();
    let outs = tailor_sim::run_all(&expand(&spec).unwrap(), Some(&records), &|_, _| {}).unwrap();
    assert_eq!(outs[0].result.requests, 3);
}

#[test]
fn a_long_run_reports_progress_as_it_goes_without_changing_it() {
    let spec = preset("c3")
        .unwrap()
        .with_overrides(&[
            "workload.requests=200000",
            "seeds=[3]",
            "compare.selectors=c3",
            "sweep.cluster.fluctuation.interval_ms=500",
        ])
        .unwrap();
    let plan = expand(&spec).unwrap().remove(0);
    let mut ticks = Vec::new();
    let observed = tailor_sim::run_observed(&plan, None, &mut |n| ticks.push(n)).unwrap();
    // 200,000 requests: three reports of 65,536 while the run goes on
    assert_eq!(ticks, vec![tailor_sim::PROGRESS_EVERY; 3]);
    assert_eq!(observed, tailor_sim::run(&plan, None).unwrap());
    let mut seen = Vec::new();
    let seen_cell = std::sync::Mutex::new(&mut seen);
    tailor_sim::run_all(&[plan], None, &|runs, reqs| seen_cell.lock().unwrap().push((runs, reqs))).unwrap();
    assert_eq!(seen, [(0, 65_536), (0, 131_072), (0, 196_608), (1, 200_000)]);
}

/// A Twitter cache trace (the zstd-compressed sample under examples/traces) replays in the
/// simulator request for request, the same for a seed.
#[test]
fn a_compressed_twitter_trace_replays_the_same_for_a_seed() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/traces/twitter-sample.csv.zst");
    let spec = tailor_spec::Spec::default()
        .with_overrides(&[
            "workload.arrival=trace",
            &format!("workload.trace={file}"),
            "compare.selectors=c3,lor",
            "workload.requests=5000",
        ])
        .unwrap();
    let trace = tailor_spec::trace::load(&spec.workload).unwrap();
    let run = || tailor_sim::run_all(&expand(&spec).unwrap(), Some(&trace.records), &|_, _| {}).unwrap();
    let (a, b) = (run(), run());
    assert_eq!(a[0].result.requests, trace.records.len() as u64, "every request of the trace ran");
    assert_eq!(
        a.iter().map(|o| serde_json::to_string(&o.result).unwrap()).collect::<Vec<_>>(),
        b.iter().map(|o| serde_json::to_string(&o.result).unwrap()).collect::<Vec<_>>()
    );
}
