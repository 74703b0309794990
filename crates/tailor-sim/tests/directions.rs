//! The published directions of docs/presets.md on reduced sizes: orderings of p99 between
//! strategies, averaged over a few seeds, never absolute numbers.

use std::collections::BTreeMap;
use tailor_core::results::RunResult;
use tailor_spec::{expand, presets::preset};

/// Run `preset` with `sets` and return each (selector, local) pair's figures averaged over seeds.
fn averaged(preset_name: &str, sets: &[&str], figure: fn(&RunResult) -> f64) -> BTreeMap<(String, String), f64> {
    let spec = preset(preset_name).unwrap().with_overrides(sets).unwrap();
    let plans = expand(&spec).unwrap();
    let outputs = tailor_sim::run_all(&plans, None, &|_, _| {}).unwrap();
    let mut sums: BTreeMap<(String, String), (f64, f64)> = BTreeMap::new();
    for o in &outputs {
        let e = sums.entry((o.result.selector.clone(), o.result.local.clone())).or_default();
        e.0 += figure(&o.result);
        e.1 += 1.0;
    }
    sums.into_iter().map(|(k, (s, n))| (k, s / n)).collect()
}

fn p99(r: &RunResult) -> f64 {
    r.read_latency_ms.p99
}

fn get(m: &BTreeMap<(String, String), f64>, selector: &str, local: &str) -> f64 {
    m[&(selector.to_string(), local.to_string())]
}

#[test]
fn c3_at_500ms_oracle_beats_c3_beats_lor_beats_random() {
    let m = averaged(
        "c3",
        &[
            "workload.requests=150000",
            "workload.warmup_ms=500",
            "seeds=[1,2]",
            "sweep.cluster.fluctuation.interval_ms=500",
            "compare.selectors=oracle,c3,lor,random",
        ],
        p99,
    );
    let (ora, c3, lor, rnd) =
        (get(&m, "oracle", "fcfs"), get(&m, "c3", "fcfs"), get(&m, "lor", "fcfs"), get(&m, "random", "fcfs"));
    assert!(ora < c3 && c3 < lor && lor < rnd, "p99 oracle {ora:.1} c3 {c3:.1} lor {lor:.1} random {rnd:.1}");
}

#[test]
fn europar_at_load_09_eft_beats_lor_and_heron() {
    let m = averaged(
        "europar",
        &[
            "workload.requests=40000",
            "seeds=[1,2,3]",
            "sweep.workload.load=0.9",
            "compare.selectors=eft,lor,heron",
            "compare.locals=fcfs",
        ],
        p99,
    );
    let (eft, lor, heron) = (get(&m, "eft", "fcfs"), get(&m, "lor", "fcfs"), get(&m, "heron", "fcfs"));
    assert!(eft < lor && eft < heron, "p99 eft {eft:.1} lor {lor:.1} heron {heron:.1}");
}

#[test]
fn europar_max_stretch_lowers_stretch_p99_for_every_selector() {
    let m = averaged(
        "europar",
        &["workload.requests=40000", "seeds=[1,2,3]", "sweep.workload.load=0.9", "compare.selectors=random,lor,eft"],
        |r| r.stretch.p99,
    );
    for selector in ["random", "lor", "eft"] {
        let (fcfs, ms) = (get(&m, selector, "fcfs"), get(&m, selector, "max-stretch"));
        assert!(ms < fcfs, "{selector}: stretch p99 max-stretch {ms:.1} vs fcfs {fcfs:.1}");
    }
}

#[test]
fn hector_rml_lowers_median_latency_under_heavy_load() {
    let m = averaged("hector-rml", &["workload.requests=60000", "seeds=[1,2]", "sweep.workload.rate=45000"], |r| {
        r.read_latency_ms.p50
    });
    let (fcfs, rml) = (get(&m, "dynamic-snitch", "fcfs"), get(&m, "dynamic-snitch", "rml"));
    assert!(rml < fcfs, "median rml {rml:.2} vs fcfs {fcfs:.2}");
}

#[test]
fn hector_cache_popularity_aware_outruns_dynamic_snitch_under_zipf_01() {
    let m = averaged(
        "hector-cache",
        &[
            "workload.requests=200000",
            "seeds=[1]",
            "sweep.workload.popularity.s=0.1",
            "compare.selectors=dynamic-snitch,popularity-aware",
        ],
        |r| r.throughput_rps,
    );
    let (ds, pa) = (get(&m, "dynamic-snitch", "fcfs"), get(&m, "popularity-aware", "fcfs"));
    assert!(pa > 2.0 * ds, "throughput pa {pa:.0} vs ds {ds:.0}");
}

#[test]
fn heron_with_10_percent_large_values_beats_c3_at_p99() {
    let m = averaged(
        "heron",
        &[
            "workload.requests=100000",
            "seeds=[1,2,3,4]",
            "sweep.workload.sizes.weights=[[0.9,0.1]]",
            "compare.selectors=c3,heron",
        ],
        p99,
    );
    let (heron, c3) = (get(&m, "heron", "fcfs"), get(&m, "c3", "fcfs"));
    assert!(heron < c3, "p99 heron {heron:.2} vs c3 {c3:.2}");
}
