//! MGET against a real 3-node cluster through the `redis` crate: values in key order with nil
//! for a missing key, the keys read in parallel (a slowed cluster answers an MGET in about one
//! read's time), refusals for a key over `max_key_bytes` and for too many keys, the whole MGET
//! failing when a key cannot be read, and the MGET latency histogram counting every MGET.

mod common;
use common::*;
use std::time::Instant;
use tailor_store::cluster::ClusterOptions;
use tailor_store::commands::MAX_MGET_KEYS;

/// The error text of a query that must fail.
fn err_text<T: std::fmt::Debug>(r: redis::RedisResult<T>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

fn mget(con: &mut redis::Connection, keys: &[String]) -> redis::RedisResult<Vec<Option<Vec<u8>>>> {
    redis::cmd("MGET").arg(keys).query(con)
}

#[test]
fn mget_reads_every_key_in_parallel_and_fails_as_a_whole() {
    const SERVICE_US: f64 = 20_000.0;
    let mut cl = TestCluster::start(ClusterOptions { nodes: 3, workers: 16, ..ClusterOptions::default() }, |c| {
        c.emulation.beta_us = SERVICE_US;
        c.request_timeout_ms = 2_000;
    });
    let mut con = cl.conn(1);
    let keys: Vec<String> = (0..12).map(|i| format!("k{i}")).collect();
    for (i, k) in keys.iter().enumerate() {
        set(&mut con, k, &value(50 + i, i as u64)).expect("SET");
    }
    // in key order, nil for the missing key in the middle
    let mut asked = keys.clone();
    asked.insert(5, "missing".into());
    let started = Instant::now();
    let got = mget(&mut con, &asked).expect("MGET");
    let took = started.elapsed();
    let want: Vec<Option<Vec<u8>>> =
        asked.iter().map(|k| keys.iter().position(|x| x == k).map(|i| value(50 + i, i as u64))).collect();
    assert_eq!(got, want);
    // 13 reads of 20 ms each one after another would take 260 ms
    let serial = SERVICE_US / 1e6 * asked.len() as f64;
    assert!(took.as_secs_f64() < serial / 2.0, "MGET of {} keys took {took:?}: not in parallel", asked.len());
    // refusals name the limit
    let long = "k".repeat(66_000);
    let e = err_text(mget(&mut con, &[keys[0].clone(), long]));
    assert!(e.contains("max_key_bytes"), "{e}");
    let many: Vec<String> = (0..=MAX_MGET_KEYS).map(|i| format!("k{i}")).collect();
    let e = err_text(mget(&mut con, &many));
    assert!(e.contains(&format!("above the limit of {MAX_MGET_KEYS} keys")), "{e}");
    // every MGET that ran is counted on the node that coordinated it (refusals run none)
    assert_eq!(cl.metric(1, "tailor_mget_latency_seconds_count", &[]), 1.0);
    assert!(cl.metric(1, "tailor_mget_latency_seconds_sum", &[]) >= SERVICE_US / 1e6);
    assert_eq!(cl.metric(0, "tailor_mget_latency_seconds_count", &[]), 0.0);
    // with a replica down, reads at ALL fail: the MGET answers one error, not a partial array
    cl.kill(2);
    redis::cmd("CONSISTENCY").arg("ALL").query::<()>(&mut con).expect("CONSISTENCY ALL");
    let e = err_text(mget(&mut con, &keys));
    assert!(!e.is_empty(), "an error names why");
    redis::cmd("CONSISTENCY").arg("ONE").query::<()>(&mut con).expect("CONSISTENCY ONE");
    assert_eq!(mget(&mut con, &keys[..2]).expect("MGET at ONE").len(), 2);
}

#[test]
fn the_bench_sends_multigets_and_reports_their_tail_above_single_reads() {
    let opts = ClusterOptions { nodes: 3, ..ClusterOptions::default() };
    let cl = TestCluster::start(opts, |c| {
        c.emulation.beta_us = 500.0;
        c.emulation.fluct_factor = 4.0;
        c.emulation.fluct_period_ms = 50;
    });
    let nodes: Vec<String> = cl.cfgs.iter().map(|c| c.client_addr.to_string()).collect();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(exe())
        .arg("bench")
        .args(["--nodes", &nodes.join(","), "--rate", "150", "--duration", "4", "--warmup", "0.5"])
        .args(["--connections", "12", "--quiet", "--set", "workload.keys=300", "--set", "workload.reads=0.9"])
        .args(["--set", "workload.multiget.keys=8", "--set", "workload.multiget.fraction=0.3"])
        .args(["--out", dir.path().to_str().unwrap()])
        .output()
        .expect("run tailor bench");
    // 3: results written but the run judged invalid (a loaded machine); the figures are still there
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 3)), "tailor bench: {stderr}");
    let text = std::fs::read_to_string(dir.path().join("results.json")).expect("results.json");
    let results: tailor_core::results::Results = serde_json::from_str(&text).expect("results parse");
    let r = &results.runs[0];
    let m = r.multiget.as_ref().expect("the run's multi-get section");
    assert_eq!(m.keys, 8, "{m:?}");
    assert!(m.requests >= 60, "about 160 multi-gets measured: {m:?}");
    assert_eq!(m.failed, 0, "{stderr}");
    assert_eq!(r.extra["read_misses"], 0.0, "every key a multi-get reads was loaded");
    let (single, multi) = (r.read_latency_ms.p99, m.latency_ms.p99);
    assert!(multi > single, "a multi-get waits for its slowest key: p99 {multi} ms vs a single read's {single} ms");
    // each MGET the bench sent reached a coordinator's histogram (warm-up ones too)
    let coordinated: f64 = (0..3).map(|i| cl.metric(i, "tailor_mget_latency_seconds_count", &[])).sum();
    assert!(coordinated >= m.requests as f64, "{coordinated} MGETs coordinated");
}
