//! Failures: a node, or every node at once, killed under write load loses no acknowledged
//! write; reads keep succeeding while one replica in three is frozen or dead.

mod common;
use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tailor_store::cluster::ClusterOptions;
use tailor_store::config::{Consistency, Durability};

/// One test of this file at a time: a test's write load on the machine's two cores made another
/// test's nodes miss heartbeats, which its failure-detector checks do not expect.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// Both durabilities keep their promise against a process crash: `sync` acknowledges after the
/// journal's fdatasync, `buffer` after the journal reached the OS (which a SIGKILL leaves alone).
#[test]
fn sigkill_under_write_load_loses_no_acknowledged_write() {
    let _serial = one_at_a_time();
    for durability in [Durability::Sync, Durability::Buffer] {
        sigkill_loses_no_acknowledged_write(durability);
    }
}

/// The node the clients talk to is killed while several connections pipeline SETs, whose
/// `buffer` writes share one journal flush per pipeline (`flush_scope.rs`): every pipeline
/// acknowledged before the kill is on disk after the restart.
#[test]
fn sigkill_loses_no_acknowledged_pipelined_buffer_write() {
    let _serial = one_at_a_time();
    let opts = ClusterOptions { nodes: 1, durability: Durability::Buffer, ..ClusterOptions::default() };
    let mut cl = TestCluster::start(opts, |_| {});
    let acked = Arc::new(Mutex::new(Vec::<(String, Vec<u8>)>::new()));
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let (acked, mut con) = (acked.clone(), cl.conn(0));
            std::thread::spawn(move || {
                for round in 0u64.. {
                    let mut pipe = redis::pipe();
                    let batch: Vec<_> = (0..16)
                        .map(|i| (format!("p{w}-{round}-{i}"), value(1000, w * 1_000_000 + round * 16 + i)))
                        .collect();
                    for (k, v) in &batch {
                        pipe.cmd("SET").arg(k).arg(v);
                    }
                    // a killed node ends the connection: the pipeline in flight is not acknowledged
                    if pipe.query::<Vec<String>>(&mut con).is_err() {
                        return;
                    }
                    acked.lock().unwrap().extend(batch);
                }
            })
        })
        .collect();
    assert!(eventually(60, || acked.lock().unwrap().len() >= 2_000), "pipelines did not get going");
    cl.kill(0);
    for w in writers {
        w.join().unwrap();
    }
    cl.restart(0);
    let acked = acked.lock().unwrap().clone();
    let mut con = cl.conn(0);
    for (k, v) in &acked {
        assert!(get(&mut con, k).unwrap().as_ref() == Some(v), "acknowledged pipelined write {k} lost");
    }
}

/// Every node of a 3-node cluster killed at once while three clients write at QUORUM with `sync`
/// durability: after all restart, every acknowledged write is on the disks of at least two
/// nodes and reads back at ALL. An acknowledgement means a quorum's journals, not some node's
/// memory.
#[test]
fn sigkill_of_every_node_loses_no_acknowledged_sync_write() {
    let _serial = one_at_a_time();
    let opts = ClusterOptions { nodes: 3, durability: Durability::Sync, ..ClusterOptions::default() };
    let mut cl = TestCluster::start(opts, |_| {});
    let acked = Arc::new(Mutex::new(Vec::<(String, Vec<u8>)>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|node| {
            let (acked, stop, mut con) = (acked.clone(), stop.clone(), cl.conn(node));
            std::thread::spawn(move || {
                let mut i = 0u64;
                // a write that fails (a timeout, then the kill) is not acknowledged: not counted
                while !stop.load(Ordering::Relaxed) {
                    let (k, v) = (format!("n{node}-{i}"), value(1000, i));
                    if set(&mut con, &k, &v).is_ok() {
                        acked.lock().unwrap().push((k, v));
                    }
                    i += 1;
                }
            })
        })
        .collect();
    assert!(eventually(60, || acked.lock().unwrap().len() >= 300), "writes did not get going");
    for node in 0..3 {
        cl.kill(node);
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    for node in 0..3 {
        cl.restart(node);
    }
    let mut locals: Vec<_> = (0..3).map(|node| cl.conn(node)).collect();
    for (k, v) in &acked {
        let mut holders = 0;
        for c in &mut locals {
            let local: Option<Vec<u8>> = redis::cmd("TAILOR.LOCALGET").arg(k).query(c).unwrap();
            holders += usize::from(local.as_ref() == Some(v));
        }
        assert!(holders >= 2, "acknowledged write {k} is on {holders} node(s) after every node was killed");
    }
    let mut c0 = cl.conn(0);
    let _: () = redis::cmd("TAILOR.SET").arg("read_consistency").arg("all").query(&mut c0).unwrap();
    assert!(eventually(30, || get(&mut c0, &acked[0].0).is_ok()), "node 0 never saw its peers come back");
    for (k, v) in &acked {
        // a read that times out is sent again; a wrong value or any other error fails the test
        let mut got = get(&mut c0, k);
        for _ in 0..5 {
            match &got {
                Err(e) if timed_out(e) => got = get(&mut c0, k),
                _ => break,
            }
        }
        assert!(got.unwrap().as_ref() == Some(v), "read at ALL of {k} is wrong");
    }
}

fn sigkill_loses_no_acknowledged_write(durability: Durability) {
    // ALL: every acknowledged write was durable on the node we kill, so we can check it there
    let opts =
        ClusterOptions { nodes: 3, write_consistency: Consistency::All, durability, ..ClusterOptions::default() };
    let mut cl = TestCluster::start(opts, |_| {});
    let acked = Arc::new(Mutex::new(Vec::<(String, Vec<u8>)>::new()));
    let failures = Arc::new(Mutex::new(0usize));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (acked, failures, stop) = (acked.clone(), failures.clone(), stop.clone());
        let mut con = cl.conn(0);
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let k = format!("w{i}");
                let v = value(if i.is_multiple_of(7) { 100_000 } else { 1000 }, i);
                match set(&mut con, &k, &v) {
                    Ok(()) => acked.lock().unwrap().push((k, v)),
                    Err(_) => *failures.lock().unwrap() += 1,
                }
                i += 1;
            }
        })
    };
    assert!(eventually(60, || acked.lock().unwrap().len() >= 40), "writes did not get going");
    cl.kill(2);
    assert!(eventually(60, || *failures.lock().unwrap() >= 3), "writes at ALL kept succeeding with a dead replica");
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    cl.restart(2);
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 40);
    // the restarted node holds every acknowledged write in its own engine
    let mut c2 = cl.conn(2);
    for (k, v) in &acked {
        let local: Option<Vec<u8>> = redis::cmd("TAILOR.LOCALGET").arg(k).query(&mut c2).unwrap();
        assert!(local.as_ref() == Some(v), "{durability:?}: acknowledged write {k} lost on the killed node");
    }
    // and a read at ALL through another node returns it once node 2 is back up
    let mut c0 = cl.conn(0);
    let _: () = redis::cmd("TAILOR.SET").arg("read_consistency").arg("all").query(&mut c0).unwrap();
    assert!(eventually(30, || get(&mut c0, &acked[0].0).is_ok()), "node 0 never saw node 2 come back");
    for (k, v) in &acked {
        assert!(get(&mut c0, k).unwrap().as_ref() == Some(v), "read at ALL of {k} is wrong");
    }
}

#[test]
fn reads_keep_succeeding_with_one_replica_in_three_down() {
    let _serial = one_at_a_time();
    let opts = ClusterOptions {
        nodes: 3,
        selector: "round-robin".into(),
        write_consistency: Consistency::All,
        ..ClusterOptions::default()
    };
    let mut cl = TestCluster::start(opts, |_| {});
    let mut c0 = cl.conn(0);
    let keys: Vec<(String, Vec<u8>)> = (0..30).map(|i| (format!("r{i}"), value(2000, i))).collect();
    for (k, v) in &keys {
        set(&mut c0, k, v).unwrap();
    }
    let mut c1 = cl.conn(1);
    // frozen: requests to node 2 time out and move to the next replica
    cl.signal(2, libc::SIGSTOP);
    for (k, v) in &keys {
        assert!(get(&mut c0, k).unwrap().as_ref() == Some(v), "{k} while node 2 is frozen");
        assert!(get(&mut c1, k).unwrap().as_ref() == Some(v), "{k} while node 2 is frozen");
    }
    let moved = cl.metric(0, "tailor_retries_total", &[]) + cl.metric(1, "tailor_retries_total", &[]);
    let down = cl.metric(0, "tailor_peer_up", &["peer=\"2\""]) == 0.0;
    assert!(moved > 0.0 || down, "reads never avoided the frozen node");
    // dead: the failure detector marks it down and selectors no longer see it
    cl.signal(2, libc::SIGCONT);
    cl.kill(2);
    assert!(eventually(30, || cl.metric(0, "tailor_peer_up", &["peer=\"2\""]) == 0.0), "node 2 never marked down");
    let before = cl.metric(0, "tailor_selections_total", &["replica=\"2\""]);
    for (k, v) in &keys {
        assert!(get(&mut c0, k).unwrap().as_ref() == Some(v), "{k} while node 2 is dead");
    }
    assert_eq!(cl.metric(0, "tailor_selections_total", &["replica=\"2\""]), before, "a down replica was selected");
    // writes at QUORUM still succeed with two of three replicas
    let _: () = redis::cmd("TAILOR.SET").arg("write_consistency").arg("quorum").query(&mut c0).unwrap();
    set(&mut c0, "during", b"outage").unwrap();
    assert_eq!(get(&mut c0, "during").unwrap(), Some(b"outage".to_vec()));
    // and it comes back up
    cl.restart(2);
    assert!(eventually(30, || cl.metric(0, "tailor_peer_up", &["peer=\"2\""]) == 1.0), "node 2 never marked up");
}
