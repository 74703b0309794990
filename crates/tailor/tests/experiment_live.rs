//! A tiny live experiment end to end: 3 nodes, 2 selectors, a few seconds each, both engines,
//! then the report; and no node process is left behind.

use std::process::Command;

#[test]
fn tiny_experiment_writes_results_for_both_engines_and_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("exp");
    let o = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args([
            "experiment",
            "demo",
            "--engine",
            "both",
            "--set",
            "cluster.servers=3",
            "--set",
            "compare.selectors=c3,round-robin",
            "--set",
            "workload.keys=200",
            "--set",
            "workload.requests=3000",
            "--live-duration",
            "3",
            "--live-warmup",
            "0.5",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("simulated vs measured"), "{stdout}");
    for (file, engine) in [("results-sim.json", "sim"), ("results-live.json", "live")] {
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join(file)).unwrap()).unwrap();
        assert_eq!(r["engine"], engine);
        let runs = r["runs"].as_array().unwrap();
        let selectors: Vec<&str> = runs.iter().map(|r| r["selector"].as_str().unwrap()).collect();
        assert_eq!(selectors, ["c3", "round-robin"], "{file}");
        for run in runs {
            assert!(run["requests"].as_u64().unwrap() > 0, "{file}: {run}");
            assert!(run["read_latency_ms"]["p99"].as_f64().unwrap() > 0.0);
            // reads served per server per 100 ms: one row per node, and the reads show up in it
            let rows = run["per_server_load"].as_array().unwrap();
            assert_eq!(rows.len(), 3, "{file}");
            let served: u64 = rows.iter().flat_map(|r| r.as_array().unwrap()).map(|v| v.as_u64().unwrap()).sum();
            assert!(served > 0, "{file}: no reads in the per-server series");
        }
    }
    let report = out.join("report.html");
    let o = Command::new(env!("CARGO_BIN_EXE_tailor")).args(["report"]).arg(&out).arg("-o").arg(&report).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("round-robin") && html.contains("simulated vs measured") && html.contains("<svg"));
    // every live run's cluster was stopped: no node process still has its config open
    let me = std::process::id();
    let leftover = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok().map(|c| (e.file_name(), c)))
        .filter(|(pid, c)| pid.to_string_lossy() != me.to_string() && String::from_utf8_lossy(c).contains(out.to_str().unwrap()))
        .count();
    assert_eq!(leftover, 0, "node processes left behind");
}
