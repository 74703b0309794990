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
