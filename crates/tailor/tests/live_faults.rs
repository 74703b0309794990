//! Faults injected into a real 3-node store by the spec's `cluster.faults` (`tailor experiment
//! --engine live`), with the failover figures computed as the simulator computes them: a node
//! killed and restarted, and a gray node shed by C3.

use serde_json::Value;
use std::process::Command;

/// Run the fault preset `preset` live on 3 nodes with `selector` and `fault`; the live run.
fn live_run(preset: &str, selector: &str, fault: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("exp");
    let o = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["experiment", preset, "--engine", "live", "-q", "--live-duration", "5", "--live-warmup", "1"])
        .args(["--set", "cluster.servers=3", "--set", "workload.keys=2000", "--set", "workload.load=0.3"])
        .args(["--set", &format!("compare.selectors={selector}"), "--set", &format!("cluster.faults=[{fault}]")])
        .args(["--set", "workload.warmup_ms=1000", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    // 3: a busy host made the run invalid; its figures are still written
    assert!(matches!(o.status.code(), Some(0 | 3)), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("failover (medians over seeds"), "the failover table is printed: {stdout}");
    let r: Value = serde_json::from_slice(&std::fs::read(out.join("results-live.json")).unwrap()).unwrap();
    r["runs"][0].clone()
}

/// The figures of the run's one fault.
fn outcome(run: &Value) -> &Value {
    let f = &run["failover"]["faults"];
    assert_eq!(f.as_array().map(Vec::len), Some(1), "{run}");
    &f[0]
}

#[test]
fn a_killed_node_is_shed_and_its_failed_reads_counted() {
    let run = live_run("fault-cold-start", "c3", "{kind=\"down\",server=0,start_ms=2000,end_ms=3000}");
    let o = outcome(&run);
    assert_eq!(o["kind"], "down");
    // a dead node receives nothing the coordinators can send it for long: shed is measured
    let shed = o["shed_ms"].as_f64().unwrap_or_else(|| panic!("never shed: {o}"));
    assert!(shed < 1000.0, "{o}");
    assert!(o["failed"].is_u64() && o["timeouts"].is_u64(), "{o}");
    assert!(o["p99_before_ms"].as_f64().unwrap() > 0.0, "{o}");
    // the timeline covers the run with one share per node
    let timeline = run["failover"]["timeline"].as_array().unwrap();
    assert!(timeline.len() >= 40, "{} windows", timeline.len());
    assert!(timeline.iter().all(|w| w["share"].as_array().unwrap().len() == 3));
    // the node came back: its coordinator's reads after the restart are not connection errors
    // only, and it serves reads again before the end
    let back = timeline.iter().filter(|w| w["start_ms"].as_f64().unwrap() >= 3500.0);
    assert!(back.clone().any(|w| w["share"][0].as_f64().unwrap() > 0.0), "node 0 never served again: {run}");
}

#[test]
fn a_gray_node_is_shed_by_c3() {
    let run = live_run("fault-gray-node", "c3", "{kind=\"gray\",server=0,start_ms=2000,end_ms=3500}");
    let o = outcome(&run);
    assert_eq!(o["kind"], "gray");
    let fair = 1.0 / 3.0;
    let shed = o["shed_ms"].as_f64().unwrap_or_else(|| panic!("c3 never shed the gray node: {o}"));
    assert!(shed < 1000.0, "{o}");
    assert!(o["share_during"].as_f64().unwrap() < fair / 2.0, "{o}");
}

#[test]
fn a_slow_coordinator_delays_the_reads_it_takes_and_keeps_its_share() {
    let fault = "{kind=\"slow-coordinator\",server=0,start_ms=2000,end_ms=3500,delay_ms=60}";
    let run = live_run("fault-slow-coordinator", "c3", fault);
    let o = outcome(&run);
    assert_eq!(o["kind"], "slow-coordinator");
    // the load generator keeps sending node 0 its third of the requests: never shed
    assert!(o["shed_ms"].is_null(), "{o}");
    let share = o["share_during"].as_f64().unwrap();
    assert!((0.25..0.42).contains(&share), "node 0 takes its third of the reads: {o}");
    // each of those waits 60 ms at the coordinator first; nothing fails for it
    assert!(o["p99_during_ms"].as_f64().unwrap() >= 60.0, "{o}");
    assert_eq!((o["failed"].as_u64(), o["timeouts"].as_u64()), (Some(0), Some(0)), "{o}");
    // as a replica node 0 is as fast as ever: C3 keeps sending it copies during the fault
    let timeline = run["failover"]["timeline"].as_array().unwrap();
    let during = timeline.iter().filter(|w| (2000.0..3400.0).contains(&w["start_ms"].as_f64().unwrap()));
    let copies: Vec<f64> = during.map(|w| w["share"][0].as_f64().unwrap()).collect();
    let mean = copies.iter().sum::<f64>() / copies.len() as f64;
    assert!(mean > 0.15, "node 0's replica share during the fault {mean}: {copies:?}");
}
