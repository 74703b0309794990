//! `tailor compare` as a user runs it, on the sample traces in examples/traces.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn tailor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tailor")).args(args).output().expect("tailor runs")
}

fn sample(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/traces").join(name).to_string_lossy().into_owned()
}

/// Run a comparison into `out` and return its compare.json.
fn compare(trace: &str, seeds: &str, out: &Path, more: &[&str]) -> Value {
    let mut args = vec!["compare", "--trace", trace, "--servers", "5", "--replication", "3", "--seeds", seeds, "-q"];
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(more);
    let o = tailor(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&std::fs::read(out.join("compare.json")).unwrap()).unwrap()
}

fn pair(v: &Value) -> (String, String) {
    (v["selector"].as_str().unwrap().to_string(), v["local"].as_str().unwrap().to_string())
}

#[test]
fn every_registered_pair_is_ranked_by_p99_with_intervals_holding_the_mean() {
    let dir = tempfile::tempdir().unwrap();
    let c = compare(&sample("twitter-sample.csv.zst"), "1,2", dir.path(), &["--speedup", "20"]);
    let ranking = c["ranking"].as_array().unwrap();
    let p99s: Vec<f64> = ranking.iter().map(|r| r["p99_ms"]["mean"].as_f64().unwrap()).collect();
    assert!(p99s.windows(2).all(|w| w[0] <= w[1]), "not sorted: {p99s:?}");
    for (i, r) in ranking.iter().enumerate() {
        assert_eq!(r["rank"].as_u64().unwrap() as usize, i + 1);
        for figure in ["p99_ms", "p50_ms", "p999_ms", "mean_ms", "throughput_rps"] {
            let e = &r[figure];
            let (mean, ci) = (e["mean"].as_f64().unwrap(), e["ci95"].as_array().unwrap());
            let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
            assert!(lo <= mean && mean <= hi, "{figure} of {:?}: {mean} not in [{lo}, {hi}]", pair(r));
        }
        assert!(r["bound"]["ratio"]["mean"].as_f64().unwrap() >= 1.0 - 1e-3, "{r}");
    }
    assert_eq!(ranking[0]["tied_with_best"], true);
    let mut seen: Vec<(String, String)> = ranking.iter().map(pair).collect();
    seen.extend(c["skipped"].as_array().unwrap().iter().map(pair));
    for s in tailor_core::selector::SELECTORS {
        for l in tailor_core::local::LOCALS {
            assert!(seen.contains(&(s.to_string(), l.to_string())), "{s}/{l} neither ranked nor skipped");
        }
    }
    assert!(c["recommendation"].as_str().unwrap().starts_with(&format!(
        "{} with {}: p99 ",
        ranking[0]["selector"].as_str().unwrap(),
        ranking[0]["local"].as_str().unwrap()
    )));
    assert_eq!(c["trace"]["requests"], 985);
    let csv = std::fs::read_to_string(dir.path().join("compare.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + seen.len());
    let html = std::fs::read_to_string(dir.path().join("compare.html")).unwrap();
    assert!(html.contains("Recommendation") && html.contains("<svg") && html.contains("the hottest 1 % of keys"));
    assert!(dir.path().join("plots/compare-latency-tail.png").is_file());
}

#[test]
fn the_same_seed_gives_identical_json_and_one_seed_says_no_ci() {
    let dir = tempfile::tempdir().unwrap();
    let trace = sample("sample.oracleGeneral.bin.zst");
    let bytes: Vec<Vec<u8>> = ["a", "b"]
        .iter()
        .map(|run| {
            let out = dir.path().join(run);
            let c = compare(&trace, "7", &out, &[]);
            assert!(c["ranking"][0]["p99_ms"]["ci95"].is_null());
            assert!(c["caveats"].as_array().unwrap().iter().any(|x| x.as_str().unwrap().starts_with("One seed")));
            std::fs::read(out.join("compare.json")).unwrap()
        })
        .collect();
    assert_eq!(bytes[0], bytes[1]);
}

#[test]
fn a_trace_without_sizes_skips_the_pairs_that_read_the_size_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("nosizes.csv");
    let lines: String = (0..300).map(|i| format!("{},{},read,0\n", i as f64 * 2.0, i % 17)).collect();
    std::fs::write(&trace, lines).unwrap();
    let c = compare(trace.to_str().unwrap(), "1", &dir.path().join("out"), &["--bound-requests", "0"]);
    let skipped = c["skipped"].as_array().unwrap();
    assert!(skipped.iter().any(|s| s["selector"] == "heron"));
    assert!(skipped.iter().all(|s| s["reason"].as_str().unwrap().contains("size oracle")), "{skipped:?}");
    assert!(c["ranking"].as_array().unwrap().iter().all(|r| r["selector"] != "heron"));
    assert!(c["bound"]["why_not"].as_str().unwrap().contains("--bound-requests 0"));
}

#[test]
fn bad_arguments_fail_naming_the_argument() {
    let twitter = sample("twitter-sample.csv");
    for (args, says) in [
        (vec!["--trace", "/nonexistent/trace.csv"], "--trace /nonexistent/trace.csv"),
        (vec!["--trace", twitter.as_str(), "--format", "parquet"], "--format"),
        (
            vec!["--trace", twitter.as_str(), "--servers", "2", "--replication", "3"],
            "--replication 3 is more than --servers 2",
        ),
        (vec!["--trace", twitter.as_str(), "--seeds", "1,1"], "--seeds lists seed 1 twice"),
        (vec!["--trace", twitter.as_str(), "--requests", "0"], "--requests"),
        (vec!["--speedup", "2"], "--speedup"),
        (vec!["--trace", twitter.as_str(), "--bound-requests", "99999"], "--bound-requests"),
    ] {
        let mut all = vec!["compare"];
        all.extend(args.iter().copied());
        let o = tailor(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(says), "{args:?}: {err}");
    }
}
