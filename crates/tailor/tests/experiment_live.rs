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
    // 3: a busy host made every live run of a strategy invalid; the results are still written
    assert!(matches!(o.status.code(), Some(0 | 3)), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("simulated vs measured"), "{stdout}");
    for (file, engine) in [("results-sim.json", "sim"), ("results-live.json", "live")] {
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join(file)).unwrap()).unwrap();
        assert_eq!(r["engine"], engine);
        let runs = r["runs"].as_array().unwrap();
        let selectors: Vec<&str> = runs.iter().map(|r| r["selector"].as_str().unwrap()).collect();
        assert_eq!(selectors, ["c3", "round-robin"], "{file}");
        for run in runs {
            assert!(run["requests"].as_u64().unwrap() > 0, "{file}: {run}");
            // every live run carries a verdict; simulator runs carry none
            assert_eq!(run["valid"].is_boolean(), engine == "live", "{file}: {run}");
            assert!(run["read_latency_ms"]["p99"].as_f64().unwrap() > 0.0);
            // reads served per server per 100 ms: one row per node, and the reads show up in it
            let rows = run["per_server_load"].as_array().unwrap();
            assert_eq!(rows.len(), 3, "{file}");
            let served: u64 = rows.iter().flat_map(|r| r.as_array().unwrap()).map(|v| v.as_u64().unwrap()).sum();
            assert!(served > 0, "{file}: no reads in the per-server series");
        }
    }
    let all_invalid = |sel: &str| {
        let r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("results-live.json")).unwrap()).unwrap();
        r["runs"].as_array().unwrap().iter().filter(|r| r["selector"] == sel).all(|r| r["valid"] == false)
    };
    assert_eq!(o.status.code() == Some(3), all_invalid("c3") || all_invalid("round-robin"));
    let report = out.join("report.html");
    let o =
        Command::new(env!("CARGO_BIN_EXE_tailor")).args(["report"]).arg(&out).arg("-o").arg(&report).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("round-robin") && html.contains("simulated vs measured") && html.contains("<svg"));
    // every live run's cluster was stopped: no node process still has its config open
    assert_eq!(node_pids(out.to_str().unwrap(), std::process::id()), Vec::<u32>::new(), "node processes left behind");
}

#[test]
fn interrupting_a_live_experiment_leaves_no_node_behind() {
    stopping_a_live_experiment_leaves_no_node_behind(libc::SIGINT);
}

/// SIGKILL gives the experiment no chance to stop its nodes: the kernel's parent-death signal
/// must.
#[test]
fn killing_a_live_experiment_leaves_no_node_behind() {
    stopping_a_live_experiment_leaves_no_node_behind(libc::SIGKILL);
}

fn stopping_a_live_experiment_leaves_no_node_behind(sig: i32) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("exp");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["experiment", "demo", "--engine", "live", "--set", "cluster.servers=3", "--set", "workload.keys=200"])
        .args(["--live-duration", "60", "--out", out.to_str().unwrap(), "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let nodes = || node_pids(out.to_str().unwrap(), std::process::id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while nodes().len() < 3 {
        assert!(std::time::Instant::now() < deadline, "the cluster never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "the experiment did not stop on signal {sig}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(!status.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !nodes().is_empty() {
        assert!(std::time::Instant::now() < deadline, "node processes left behind: {:?}", nodes());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Pids of live (non-zombie) `tailor node` processes whose command line mentions `dir`.
fn node_pids(dir: &str, me: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z')))
                .unwrap_or(true);
            cmd.contains(" node ") && cmd.contains(dir) && !zombie
        })
        .collect()
}
