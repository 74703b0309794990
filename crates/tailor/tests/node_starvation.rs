//! The validity rule sees the nodes (issue 35, item 1): the same light live run, first on a
//! quiet host and then beside CPU hogs that keep every core busy. The load generator may or may
//! not fall behind beside the hogs; the nodes certainly wait for a CPU each time they wake, and
//! the run must say so with its figure. On the quiet host the nodes' wait is recorded and is no
//! reason. (One test in its own binary: a concurrent test would make the quiet run busy.)

mod hogs;
use hogs::Hogs;
use std::path::Path;
use std::process::Command;

/// The demo's live engine at 30 % load on 3 nodes, 4 s with 1 s of warm-up; its only run.
fn light_run(out: &Path) -> (Option<i32>, serde_json::Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["experiment", "demo", "--engine", "live"])
        .args(["--set", "cluster.servers=3", "--set", "compare.selectors=round-robin"])
        .args(["--set", "workload.keys=100", "--set", "workload.load=0.3"])
        .args(["--live-duration", "4", "--live-warmup", "1", "--out", out.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    let file = std::fs::read(out.join("results-live.json"))
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let r: serde_json::Value = serde_json::from_slice(&file).unwrap();
    (o.status.code(), r["runs"][0].clone())
}

fn reasons(run: &serde_json::Value) -> Vec<String> {
    let list = run["invalid_reasons"].as_array().cloned().unwrap_or_default();
    list.iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

fn figure(run: &serde_json::Value, name: &str) -> f64 {
    run["extra"][name].as_f64().unwrap_or_else(|| panic!("{name} recorded: {run}"))
}

#[test]
fn nodes_waiting_for_a_cpu_make_the_run_invalid_and_a_quiet_run_is_not() {
    if !Path::new("/proc/self/task").exists() {
        eprintln!("skipped: no /proc/<pid>/task/*/schedstat on this system");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let starved = |r: &[String]| r.iter().any(|s| s.starts_with("nodes starved of CPU"));
    // the quiet half needs a quiet host: a run whose VM lost CPU to its hypervisor (seen in CI:
    // 26 % stolen, and the nodes waited 0.14 ms) says the host was not, so it is run again, and
    // judged only once the host was quiet through it
    let stolen = |r: &[String]| r.iter().any(|s| s.starts_with("the VM's hypervisor took"));
    let mut quiet = serde_json::Value::Null;
    for attempt in 1..=3 {
        quiet = light_run(&dir.path().join(format!("quiet{attempt}"))).1;
        eprintln!("quiet {attempt}: {:?} {:?}", quiet["extra"], reasons(&quiet));
        if !stolen(&reasons(&quiet)) {
            break;
        }
    }
    assert!(figure(&quiet, "node_cpu_delay_ms") >= 0.0 && figure(&quiet, "host_busy_pct") >= 0.0);
    if stolen(&reasons(&quiet)) {
        eprintln!("the host was never quiet (its hypervisor took CPU in 3 runs): the quiet half is not judged");
    } else {
        assert!(!starved(&reasons(&quiet)), "a quiet host's nodes ran when they had work: {:?}", reasons(&quiet));
    }

    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let hogs = Hogs::start(2 * cores);
    let (code, busy) = light_run(&dir.path().join("busy"));
    drop(hogs);
    eprintln!("beside {} hogs: {:?} {:?}", 2 * cores, busy["extra"], reasons(&busy));
    assert_eq!(busy["valid"], false, "{busy}");
    assert!(starved(&reasons(&busy)), "the nodes' wait is a reason: {:?}", reasons(&busy));
    assert!(figure(&busy, "node_cpu_delay_ms") > figure(&quiet, "node_cpu_delay_ms"));
    assert_eq!(code, Some(3), "an invalid live run exits 3");
}
