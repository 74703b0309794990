//! `tailor bench` against real nodes: open-loop accounting under an injected stall, errors
//! counted when a node dies mid-run, the results files' shape, and the exit code scripts read: 0
//! for a valid run, 3 (results written) for an invalid one, 2 when nothing listens (no run).

mod common;
use common::*;
use std::process::Command;
use std::time::{Duration, Instant};
use tailor_core::results::Results;
use tailor_store::cluster::ClusterOptions;
use tailor_store::config::Consistency;

/// Run `tailor bench` with `args` (which name an `--out` directory) and check its exit code
/// against the results it wrote: 0 when the run is valid, 3 when it is not.
fn bench(args: &[&str]) -> std::process::Output {
    let out = Command::new(exe()).arg("bench").args(args).output().expect("run tailor bench");
    let dir = args.iter().position(|a| *a == "--out").map(|i| args[i + 1]).expect("an --out directory");
    let results = std::fs::read_to_string(std::path::Path::new(dir).join("results.json"));
    let results = results.unwrap_or_else(|_| panic!("no results: {}", String::from_utf8_lossy(&out.stderr)));
    let results: Results = serde_json::from_str(&results).unwrap();
    let valid = results.runs.iter().all(|r| r.is_valid() && r.requests > 0);
    assert_eq!(
        out.status.code(),
        Some(if valid { 0 } else { 3 }),
        "tailor bench {args:?} (valid: {valid}): {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn read_results(dir: &std::path::Path) -> Results {
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json written");
    serde_json::from_str(&text).expect("results.json parses as Results")
}

/// The p99 of `samples` (ms).
fn p99(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[((samples.len() as f64 * 0.99) as usize).min(samples.len() - 1)]
}

#[test]
fn open_loop_latency_includes_the_wait_behind_a_stall() {
    let opts = ClusterOptions { nodes: 1, replication: 1, ..ClusterOptions::default() };
    let cl = TestCluster::start(opts, |_| {});
    {
        // the node stalls for 300 ms at the start of every second (a GC-like pause)
        let mut con = cl.conn(0);
        for (k, v) in [("stall_every_ms", "1000"), ("stall_ms", "300")] {
            redis::cmd("TAILOR.SET").arg(k).arg(v).query::<()>(&mut con).unwrap();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let addr = cl.cfgs[0].client_addr.to_string();
    bench(&[
        "--nodes",
        &addr,
        "--set",
        "workload.keys=500",
        "--set",
        "workload.reads=0.9",
        "--rate",
        "200",
        "--duration",
        "3",
        "--warmup",
        "0.5",
        "--connections",
        "8",
        "--quiet",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let results = read_results(dir.path());
    assert_eq!(results.engine, "live");
    assert_eq!(results.runs.len(), 1);
    let r = &results.runs[0];
    let l = r.read_latency_ms;
    // About 30 % of the requests are intended during a stall and wait for its end: their
    // latency is spread over 0..300 ms, so the p99 is near 290 ms and the max near 300 ms.
    assert!(l.max >= 250.0, "max should include the whole stall: {l:?}");
    assert!(l.p99 >= 200.0, "p99 should fall inside the stalls: {l:?}");
    assert!(l.p50 < l.p99 / 2.0, "{l:?}");
    assert_eq!(r.errors, 0, "{:?}", r.extra);

    // A closed-loop client (one request at a time, timed from its own send) sees at most one
    // slow request per stall, so its p99 hides the stalls that the open-loop p99 shows.
    let mut con = cl.conn(0);
    let mut samples = Vec::new();
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        let t = Instant::now();
        let _ = get(&mut con, "1").unwrap();
        samples.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let closed = p99(&mut samples);
    eprintln!("open-loop {l:?}; closed-loop p99 {closed:.2} ms over {} requests", samples.len());
    assert!(closed < l.p99 / 2.0, "closed-loop p99 {closed} ms vs open-loop {} ms", l.p99);
}

#[test]
fn results_files_have_the_sim_shape_and_the_cluster_labels() {
    // writes acknowledged by every replica, so a loaded key is never missing at the replica read
    let opts = ClusterOptions {
        nodes: 3,
        selector: "lor".into(),
        local: "sjf".into(),
        write_consistency: Consistency::All,
        ..ClusterOptions::default()
    };
    let cl = TestCluster::start(opts, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let nodes: Vec<String> = cl.cfgs.iter().map(|c| c.client_addr.to_string()).collect();
    bench(&[
        "--nodes",
        &nodes.join(","),
        "--set",
        "workload.keys=300",
        "--set",
        "workload.reads=0.8",
        "--rate",
        "300",
        "--duration",
        "2",
        "--warmup",
        "0.5",
        "--quiet",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let results = read_results(dir.path());
    let r = &results.runs[0];
    assert_eq!((r.selector.as_str(), r.local.as_str()), ("lor", "sjf"));
    assert_eq!(results.format, tailor_core::results::RESULTS_FORMAT);
    assert!(results.spec.contains("[workload]"), "the spec is echoed");
    assert_eq!(r.offered_rps, 300.0);
    // ~450 measured requests (1.5 s at 300/s), every one loaded so no misses
    assert!((300..600).contains(&r.requests), "{} requests", r.requests);
    assert_eq!(r.errors, 0);
    assert_eq!(r.extra["read_misses"], 0.0, "{:?}", r.extra);
    assert!(r.extra["load_keys"] > 100.0);
    assert!(r.throughput_rps > 150.0 && r.throughput_rps < 450.0, "{}", r.throughput_rps);
    assert!(r.read_latency_ms.count > 0 && r.write_latency_ms.is_some());
    assert!(!r.latency_cdf.is_empty() && r.stretch.count > 0);
    let csv = std::fs::read_to_string(dir.path().join("timeseries.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], "second,warmup,offered,completed,errors,p50_ms,p99_ms,max_ms");
    assert!(rows.len() >= 3 && rows[1].starts_with("0,true,"), "{csv}");
    let ts: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("timeseries.json")).unwrap()).unwrap();
    assert_eq!(ts.len(), rows.len() - 1);
    assert!(dir.path().join("results.csv").is_file());
}

#[test]
fn nothing_listening_is_an_error_before_the_run() {
    let port = tailor_store::cluster::free_ports(1).unwrap()[0];
    let dir = tempfile::tempdir().unwrap();
    let node = format!("127.0.0.1:{port}");
    let args = ["--nodes", &node, "--rate", "100", "--duration", "1", "--out", dir.path().to_str().unwrap()];
    let out = Command::new(exe()).arg("bench").args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("nothing answers at {node}")), "{stderr}");
    assert!(!dir.path().join("results.json").exists(), "no run, no results");
}

#[test]
fn an_invalid_run_exits_3_with_its_results_written() {
    let cl = TestCluster::start(ClusterOptions { nodes: 1, replication: 1, ..ClusterOptions::default() }, |_| {});
    let mut con = cl.conn(0);
    // stalled 900 ms of every second, with a 100 ms timeout: most requests time out
    for (k, v) in [("stall_every_ms", "1000"), ("stall_ms", "900")] {
        redis::cmd("TAILOR.SET").arg(k).arg(v).query::<()>(&mut con).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let node = cl.cfgs[0].client_addr.to_string();
    let out = bench(&[
        "--nodes",
        &node,
        "--rate",
        "100",
        "--duration",
        "2",
        "--warmup",
        "0.2",
        "--timeout-ms",
        "100",
        "--quiet",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(!read_results(dir.path()).runs[0].is_valid());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is invalid"));
}

/// A coordinator killed mid-run is passed over as a client driver would: requests for it go
/// through the other nodes (`coordinator_failovers`), a kept connection found broken is resent
/// on a fresh one (`resends`), and only the requests in flight on it when it died can fail.
#[test]
fn a_node_killed_mid_run_is_passed_over_while_the_others_keep_serving() {
    let mut cl = TestCluster::start(ClusterOptions { nodes: 3, ..ClusterOptions::default() }, |_| {});
    let nodes: Vec<std::net::SocketAddr> = cl.cfgs.iter().map(|c| c.client_addr).collect();
    let mut spec = tailor_spec::Spec::default();
    spec.workload.keys = 200;
    let mut cfg = tailor_bench::BenchConfig::new(nodes, spec);
    cfg.rate = Some(300.0);
    cfg.duration = Some(Duration::from_secs(4));
    cfg.connections = 6;
    cfg.timeout = Duration::from_millis(1000);
    cfg.load_keys = Some(0);
    let baseline = cl.metric(2, "tailor_client_commands_total", &[]);
    let run = std::thread::spawn(move || tailor_bench::run(&cfg));
    // kill node 2 once it has served 100 of the run's requests (about a second in)
    assert!(eventually(30, || cl.metric(2, "tailor_client_commands_total", &[]) >= baseline + 100.0));
    cl.kill(2);
    let out = run.join().unwrap().expect("the run completes despite the dead node");
    let r = out.run();
    // node 2's two connections carry one request each at a time: at most two were in flight
    assert!(r.errors <= 2, "only requests in flight on the dead coordinator fail: {} errors", r.errors);
    let failovers = r.extra["coordinator_failovers"];
    assert!(failovers > 100.0, "a third of the requests after the kill went through another node: {failovers}");
    assert!(r.extra["resends"] >= 1.0, "a kept connection to the dead node was found broken: {:?}", r.extra);
    assert!(r.requests > 600, "the other nodes serve the whole schedule: {} requests", r.requests);
    let dir = tempfile::tempdir().unwrap();
    out.write(dir.path()).unwrap();
    assert_eq!(read_results(dir.path()).runs[0].errors, r.errors);
}
