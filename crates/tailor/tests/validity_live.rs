//! A host too busy to drive the load: busy-looping threads hog the CPU while a tiny live
//! experiment offers several times the cluster's capacity, so the load generator must fall
//! behind, requests must time out and the achieved rate must fall short. The run has to come
//! out marked invalid, with its reasons, and `tailor experiment` has to exit with 3.
//!
//! The opposite case (a light run is valid) is not asserted: on a shared 2-core machine the
//! send lag of even a light run depends on what else runs, so it cannot be made robust.

mod hogs;
use hogs::Hogs;
use std::process::Command;

#[test]
fn a_starved_host_marks_the_live_run_invalid_and_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("exp");
    let hogs = Hogs::start(4);
    // load 4: four times what 3 one-worker nodes can serve, so the backlog passes the 2 s
    // timeout within a second whatever the host's speed
    let o = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["experiment", "demo", "--engine", "live"])
        .args(["--set", "cluster.servers=3", "--set", "compare.selectors=round-robin"])
        .args(["--set", "workload.keys=100", "--set", "workload.load=4"])
        .args(["--live-duration", "2.5", "--live-warmup", "0.5", "--out", out.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    drop(hogs);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stderr.contains("every live run of round-robin+fcfs is invalid"), "{stderr}");
    let table = stdout.lines().find(|l| l.starts_with("round-robin")).expect("a table row");
    assert!(table.trim_end().ends_with("INVALID"), "{stdout}");
    assert!(stdout.contains("== INVALID live runs (1 of 1)"), "{stdout}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("results-live.json")).unwrap()).unwrap();
    let run = &r["runs"][0];
    assert_eq!(run["valid"], false, "{run}");
    let reasons: Vec<&str> = run["invalid_reasons"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(reasons.iter().any(|s| s.contains("timeout")), "{reasons:?}");
    assert!(reasons.iter().any(|s| s.starts_with("load generator") && s.contains("behind schedule")), "{reasons:?}");
    let csv = std::fs::read_to_string(out.join("results-live.csv")).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",errors,timeouts,valid,invalid_reasons"), "{csv}");
    assert!(csv.lines().nth(1).unwrap().contains(",false,\"load generator"), "{csv}");
}
