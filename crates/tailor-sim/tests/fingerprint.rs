//! The simulator's results, bit for bit, against the ones recorded here, one fingerprint per
//! strategy pair (selector / local policy): a change meant only to make the simulator faster or
//! smaller (docs/sim-speed.md: every such change kept results byte-identical) must leave every
//! fingerprint as it is. A change meant to alter results records the new fingerprints of the
//! pairs it moved (the failure prints them), and its commit says why they moved. A new strategy
//! runs here by itself (every registered selector and local policy is in the plans) and prints
//! its own fingerprint to record; the others stay as they were.
//!
//! The plans cover every selector on the `c3` setup, every local policy behind C3, the presets
//! with value sizes, Bloom oracle and local policies (heron, europar, hector-rml), closed loop
//! with a cache (hector-cache), speculative retry, several tokens per node, and a trace.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use tailor_spec::{expand, presets::preset, Spec};

/// The recorded fingerprints: `selector/local sha256` per line, the SHA-256 of the JSON of the
/// pair's runs in plan order.
const RECORDED: &str = include_str!("fingerprints.txt");

/// Result keys left out of the fingerprint: outputs added after the fingerprints were recorded,
/// which describe the same runs without changing any recorded figure (a new output is not a
/// changed result). Each is checked for determinism on its own below.
const NOT_FINGERPRINTED: &[&str] = &["queueing"];

fn plans_of(preset_name: &str, overrides: &[&str]) -> Vec<tailor_spec::RunPlan> {
    let spec = preset(preset_name).unwrap().with_overrides(overrides).unwrap();
    expand(&spec).unwrap()
}

fn results(plans: &[tailor_spec::RunPlan], trace: Option<&str>) -> Vec<serde_json::Value> {
    let records = trace.map(|t| tailor_core::workload::parse_trace(t).unwrap());
    let outs = tailor_sim::run_all(plans, records.as_deref(), &|_, _| {}).unwrap();
    outs.iter().map(|o| serde_json::to_value(&o.result).unwrap()).collect()
}

/// `run` without the [`NOT_FINGERPRINTED`] keys.
fn fingerprinted(mut run: serde_json::Value) -> serde_json::Value {
    let fields = run.as_object_mut().expect("a run is a JSON object");
    NOT_FINGERPRINTED.iter().for_each(|k| drop(fields.remove(*k)));
    run
}

#[test]
fn outputs_left_out_of_the_fingerprint_are_deterministic() {
    let plans = plans_of("heron", &["workload.requests=5000", "workload.warmup_ms=20", "seeds=[1,2]"]);
    let (a, b) = (results(&plans, None), results(&plans, None));
    for (a, b) in a.iter().zip(&b) {
        for key in NOT_FINGERPRINTED {
            assert!(!a[key].is_null(), "{key} is absent from a simulator run");
            assert_eq!(a[key], b[key], "{key} differs between two runs of the same seed");
        }
    }
}

#[test]
fn results_match_the_recorded_fingerprint() {
    let every_selector = format!("compare.selectors={}", tailor_core::selector::SELECTORS.join(","));
    let every_local = format!("compare.locals={}", tailor_core::local::LOCALS.join(","));
    let base = ["workload.requests=20000", "workload.warmup_ms=20", "seeds=[1,2]"];
    let cases: [(&str, Vec<&str>); 7] = [
        ("c3", vec![&every_selector, "sweep.cluster.fluctuation.interval_ms=[10,500]"]),
        ("heron", vec![]),
        ("europar", vec![]),
        ("hector-rml", vec![]),
        ("hector-cache", vec![]),
        ("c3", vec!["compare.selectors=c3,lor", "cluster.speculative_retry=99p", "cluster.vnodes=16"]),
        ("c3", vec!["compare.selectors=c3", &every_local, "sweep.cluster.fluctuation.interval_ms=[500]"]),
    ];
    let mut runs = Vec::new();
    for (name, extra) in cases {
        let overrides: Vec<&str> = base.iter().copied().chain(extra).collect();
        runs.extend(results(&plans_of(name, &overrides), None).into_iter().map(fingerprinted));
    }
    let trace = "time,key,op,size\n0.0,1,read,1000\n0.5,2,write,2000\n1.0,user:3,get,500\n1.2,1,get,1000\n";
    let spec = Spec::default()
        .with_overrides(&["workload.arrival=trace", "workload.trace=t.csv", "compare.selectors=c3,random"])
        .unwrap();
    runs.extend(results(&expand(&spec).unwrap(), Some(trace)).into_iter().map(fingerprinted));
    for r in &runs {
        assert!(r["requests"].as_u64() > Some(0), "{} / {} measured no request", r["selector"], r["params"]);
    }

    let mut pairs: BTreeMap<String, Vec<&serde_json::Value>> = BTreeMap::new();
    for r in &runs {
        let pair = format!("{}/{}", r["selector"].as_str().unwrap(), r["local"].as_str().unwrap());
        pairs.entry(pair).or_default().push(r);
    }
    let measured: BTreeMap<String, String> = pairs
        .into_iter()
        .map(|(pair, runs)| {
            let json = serde_json::to_string(&runs).unwrap();
            (pair, Sha256::digest(json.as_bytes()).iter().map(|b| format!("{b:02x}")).collect())
        })
        .collect();
    let recorded: BTreeMap<&str, &str> =
        RECORDED.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).filter_map(|l| l.split_once(' ')).collect();
    let fresh: Vec<String> = measured.iter().map(|(p, d)| format!("{p} {d}")).collect();
    let moved: Vec<&String> =
        measured.keys().filter(|p| recorded.get(p.as_str()).is_some_and(|d| *d != measured[*p])).collect();
    let gone: Vec<&&str> = recorded.keys().filter(|p| !measured.contains_key(**p)).collect();
    for new in measured.keys().filter(|p| !recorded.contains_key(p.as_str())) {
        eprintln!("new strategy pair {new}: fingerprint {} (add it to tests/fingerprints.txt)", measured[new]);
    }
    assert!(
        moved.is_empty() && gone.is_empty(),
        "the simulator's results changed for {moved:?} (no longer run: {gone:?}): if that is meant, record \
         the new fingerprints and say in the commit why results moved; if the change was only to \
         speed or memory, it changed behaviour. Measured now:\n{}",
        fresh.join("\n")
    );
}
