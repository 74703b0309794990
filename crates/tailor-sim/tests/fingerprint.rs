//! The simulator's results, bit for bit, against the ones recorded here: a change meant only to
//! make the simulator faster or smaller (docs/sim-speed.md: every such change kept results
//! byte-identical) must leave this fingerprint as it is. A change meant to alter results
//! records the new fingerprint, and its commit says why the results moved.
//!
//! The plans cover every selector on the `c3` setup, the presets with value sizes, Bloom
//! oracle and local policies (heron, europar, hector-rml), closed loop with a cache
//! (hector-cache), speculative retry, several tokens per node, and a trace.

use sha2::{Digest, Sha256};
use tailor_spec::{expand, presets::preset, Spec};

/// The SHA-256 of the JSON of every run's result, in plan order.
const EXPECTED: &str = "4190755b7ff0281880ee22672dd6d7ce0486c8d3fae7644ca4ba6d78769fde03";

fn plans_of(preset_name: &str, overrides: &[&str]) -> Vec<tailor_spec::RunPlan> {
    let spec = preset(preset_name).unwrap().with_overrides(overrides).unwrap();
    expand(&spec).unwrap()
}

fn results(plans: &[tailor_spec::RunPlan], trace: Option<&str>) -> Vec<serde_json::Value> {
    let outs = tailor_sim::run_all(plans, trace, &|_, _| {}).unwrap();
    outs.iter().map(|o| serde_json::to_value(&o.result).unwrap()).collect()
}

#[test]
fn results_match_the_recorded_fingerprint() {
    let every_selector = format!("compare.selectors={}", tailor_core::selector::SELECTORS.join(","));
    let base = ["workload.requests=20000", "workload.warmup_ms=20", "seeds=[1,2]"];
    let cases: [(&str, Vec<&str>); 6] = [
        ("c3", vec![&every_selector, "sweep.cluster.fluctuation.interval_ms=[10,500]"]),
        ("heron", vec![]),
        ("europar", vec![]),
        ("hector-rml", vec![]),
        ("hector-cache", vec![]),
        ("c3", vec!["compare.selectors=c3,lor", "cluster.speculative_retry=99p", "cluster.vnodes=16"]),
    ];
    let mut runs = Vec::new();
    for (name, extra) in cases {
        let overrides: Vec<&str> = base.iter().copied().chain(extra).collect();
        runs.extend(results(&plans_of(name, &overrides), None));
    }
    let trace = "time,key,op,size\n0.0,1,read,1000\n0.5,2,write,2000\n1.0,user:3,get,500\n1.2,1,get,1000\n";
    let spec = Spec::default()
        .with_overrides(&["workload.arrival=trace", "workload.trace=t.csv", "compare.selectors=c3,random"])
        .unwrap();
    runs.extend(results(&expand(&spec).unwrap(), Some(trace)));
    for r in &runs {
        assert!(r["requests"].as_u64() > Some(0), "{} / {} measured no request", r["selector"], r["params"]);
    }

    let json = serde_json::to_string(&runs).unwrap();
    let digest: String = Sha256::digest(json.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        digest,
        EXPECTED,
        "the simulator's results changed ({} runs): if that is meant, record the new fingerprint \
         and say in the commit why results moved; if the change was only to speed or memory, it \
         changed behaviour",
        runs.len()
    );
}
