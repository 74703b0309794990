//! A chaos test at default settings (RF 3, write QUORUM, read ONE): five node processes, two
//! writers (set, overwrite, delete) and a reader, while random nodes are killed with SIGKILL and
//! restarted, or frozen with SIGSTOP and thawed, one at a time. At the end, once every node is
//! back and the hints have drained, every replica of every key is read directly (internode,
//! no selector): no acknowledged write may be lost; after a repair pass (every key read at ALL,
//! which writes the newest version back) no replica may be stale or hold a deleted key.
//! Prints the counts; bounded to about half a minute on loopback.

mod common;
use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tailor_core::ring::Ring;
use tailor_store::cluster::ClusterOptions;

const NODES: usize = 5;
const KEYS: u64 = 120;
const FAULTS: usize = 8;

/// The last acknowledged operation on each key: `Some(value)` or `None` (deleted).
type Expected = Arc<Mutex<HashMap<String, Option<Vec<u8>>>>>;

fn connect(addr: SocketAddr) -> Option<redis::Connection> {
    let client = redis::Client::open(format!("redis://{addr}/")).ok()?;
    let con = client.get_connection_with_timeout(Duration::from_millis(500)).ok()?;
    con.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    con.set_write_timeout(Some(Duration::from_secs(2))).ok()?;
    Some(con)
}

/// Run `op` against some node until one acknowledges it (any node may be down or frozen).
fn until_acked(addrs: &[SocketAddr], rng: &mut SmallRng, mut op: impl FnMut(&mut redis::Connection) -> bool) {
    loop {
        let addr = addrs[rng.random_range(0..addrs.len())];
        if let Some(mut con) = connect(addr) {
            if op(&mut con) {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Writer `w` owns the keys `k ≡ w (mod 2)`, so each key's last acknowledged operation is known.
fn writer(w: u64, addrs: Vec<SocketAddr>, expected: Expected, stop: Arc<AtomicBool>, acked: Arc<AtomicU64>) {
    let mut rng = SmallRng::seed_from_u64(w);
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let key = format!("key{}", rng.random_range(0..KEYS / 2) * 2 + w);
        let value = (rng.random::<f64>() < 0.8).then(|| format!("w{w}-{n}").into_bytes());
        until_acked(&addrs, &mut rng, |con| match &value {
            Some(v) => set(con, &key, v).is_ok(),
            None => redis::cmd("DEL").arg(&key).query::<i64>(con).is_ok(),
        });
        expected.lock().unwrap().insert(key, value);
        acked.fetch_add(1, Ordering::Relaxed);
    }
}

/// Reads at ONE from random nodes while faults happen: (answered, failed).
fn reader(addrs: Vec<SocketAddr>, stop: Arc<AtomicBool>) -> (u64, u64) {
    let mut rng = SmallRng::seed_from_u64(99);
    let (mut ok, mut failed) = (0, 0);
    while !stop.load(Ordering::Relaxed) {
        let key = format!("key{}", rng.random_range(0..KEYS));
        match connect(addrs[rng.random_range(0..addrs.len())]).map(|mut c| get(&mut c, &key)) {
            Some(Ok(_)) => ok += 1,
            _ => failed += 1,
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (ok, failed)
}

/// Kill-and-restart or freeze-and-thaw random nodes, one at a time.
fn inject_faults(cl: &mut TestCluster) {
    let mut rng = SmallRng::seed_from_u64(7);
    for _ in 0..FAULTS {
        let node = rng.random_range(0..NODES);
        if rng.random::<bool>() {
            cl.kill(node);
            std::thread::sleep(Duration::from_millis(1500));
            cl.restart(node);
        } else {
            cl.signal(node, libc::SIGSTOP);
            std::thread::sleep(Duration::from_millis(1500));
            cl.signal(node, libc::SIGCONT);
        }
        std::thread::sleep(Duration::from_millis(800));
    }
}

/// Counts over every replica of every key: (lost, stale, resurrected).
fn audit(cl: &TestCluster, ring: &Ring, expected: &HashMap<String, Option<Vec<u8>>>) -> (usize, usize, usize) {
    let (mut lost, mut stale, mut resurrected) = (0, 0, 0);
    for (key, want) in expected {
        let held: Vec<_> = ring
            .replicas(tailor_store::key_hash(key.as_bytes()))
            .iter()
            .map(|&r| replica_value(cl, r as usize, key))
            .collect();
        match want {
            Some(v) if !held.iter().any(|h| h.as_ref() == Some(v)) => lost += 1,
            Some(v) => stale += held.iter().filter(|h| h.as_ref() != Some(v)).count(),
            None => resurrected += held.iter().filter(|h| h.is_some()).count(),
        }
    }
    (lost, stale, resurrected)
}

#[test]
fn acknowledged_writes_survive_kills_and_freezes() {
    let mut cl = TestCluster::start(ClusterOptions { nodes: NODES, ..ClusterOptions::default() }, |c| {
        c.hint_replay_ms = 200;
    });
    let addrs: Vec<SocketAddr> = cl.cfgs.iter().map(|c| c.client_addr).collect();
    let ring = Ring::new(NODES, cl.cfgs[0].replication, cl.cfgs[0].vnodes).unwrap();
    let (expected, stop, acked) = (Expected::default(), Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (a, e, s, n) = (addrs.clone(), expected.clone(), stop.clone(), acked.clone());
            std::thread::spawn(move || writer(w, a, e, s, n))
        })
        .collect();
    let reads = {
        let (a, s) = (addrs.clone(), stop.clone());
        std::thread::spawn(move || reader(a, s))
    };
    let started = Instant::now();
    inject_faults(&mut cl);
    stop.store(true, Ordering::Relaxed);
    writers.into_iter().for_each(|w| w.join().unwrap());
    let (read_ok, read_failed) = reads.join().unwrap();
    let faulty = started.elapsed();

    let drained = eventually(30, || (0..NODES).all(|i| cl.metric(i, "tailor_hints_pending", &[]) == 0.0));
    assert!(drained, "hints did not drain");
    let expected = expected.lock().unwrap().clone();
    let (lost, stale, resurrected) = audit(&cl, &ring, &expected);
    let mut con = cl.conn(0);
    let _: () = redis::cmd("TAILOR.SET").arg("read_consistency").arg("all").query(&mut con).unwrap();
    for (key, want) in &expected {
        assert_eq!(get(&mut con, key).unwrap(), *want, "{key} at ALL");
    }
    let (lost_after, stale_after, resurrected_after) = audit(&cl, &ring, &expected);
    let deletes = expected.values().filter(|v| v.is_none()).count();
    eprintln!(
        "chaos: {} acknowledged writes over {} keys ({deletes} ending deleted) in {faulty:.1?} of faults; \
         reads at ONE answered {:.1} % ({read_ok} of {}); lost {lost}; before repair {stale} stale and \
         {resurrected} resurrected replicas; after repair {stale_after} stale, {resurrected_after} resurrected",
        acked.load(Ordering::Relaxed),
        expected.len(),
        100.0 * read_ok as f64 / (read_ok + read_failed).max(1) as f64,
        read_ok + read_failed,
    );
    assert_eq!((lost, lost_after), (0, 0), "acknowledged writes lost");
    assert_eq!((stale_after, resurrected_after), (0, 0), "the repair pass leaves every replica current");
}
