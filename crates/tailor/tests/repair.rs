//! Repair: a replica that was down catches up with the writes it missed — by hinted handoff
//! when it comes back, by blocking read repair when a QUORUM or ALL read finds it behind, by
//! background read repair when reads at ONE also go to the other replicas, and
//! by anti-entropy (Merkle trees per token range) — checked on the replica's own data
//! (internode reads), deletes included; and tombstones are dropped after their grace without
//! deleted keys coming back. Each of these state changes leaves a log line with its counts.

mod common;
use common::*;
use std::collections::HashMap;
use tailor_store::cluster::ClusterOptions;
use tailor_store::config::NodeConfig;
use tailor_store::internode::Message;

/// Every key and what every replica must end up holding (`None`: deleted).
type Expected = Vec<(String, Option<Vec<u8>>)>;

/// Write 60 keys, overwrite the first 20 and delete the next 20 through node 0 while node 2 is
/// down; returns what every replica must end up holding.
fn writes_while_down(cl: &mut TestCluster) -> Expected {
    cl.kill(2);
    assert!(eventually(10, || cl.metric(0, "tailor_peer_up", &["peer=\"2\""]) == 0.0), "node 0 sees node 2 down");
    let mut con = cl.conn(0);
    let mut expected = Vec::new();
    for i in 0..60 {
        let k = format!("key{i}");
        set(&mut con, &k, &value(100, i)).unwrap();
        expected.push((k, Some(value(100, i))));
    }
    for (i, e) in expected.iter_mut().enumerate().take(40) {
        if i < 20 {
            set(&mut con, &e.0, b"second").unwrap();
            e.1 = Some(b"second".to_vec());
        } else {
            let _: i64 = redis::cmd("DEL").arg(&e.0).query(&mut con).unwrap();
            e.1 = None;
        }
    }
    expected
}

fn missing_on_node2(cl: &TestCluster, expected: &Expected) -> Vec<String> {
    expected.iter().filter(|(k, v)| replica_value(cl, 2, k) != *v).map(|(k, _)| k.clone()).collect()
}

#[test]
fn hints_bring_a_restarted_replica_up_to_date() {
    let mut cl = TestCluster::start(ClusterOptions { nodes: 3, ..ClusterOptions::default() }, |c| {
        c.hint_replay_ms = 200;
    });
    let expected = writes_while_down(&mut cl);
    assert!(cl.metric(0, "tailor_hints_pending", &[]) >= 100.0, "every write node 2 missed is hinted");
    cl.restart(2);
    assert!(eventually(20, || cl.metric(0, "tailor_hints_pending", &[]) == 0.0), "hints replayed: {}", cl.log(0));
    assert_eq!(missing_on_node2(&cl, &expected), Vec::<String>::new(), "node 2 holds every acknowledged write");
    assert!(cl.metric(0, "tailor_hints_replayed_total", &[]) >= 100.0);
    let log = cl.log(0);
    let line = |needle: &str| log.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}: {log}"));
    assert!(line("peer marked down").contains("peer=2") && line("peer marked down").contains("misses="));
    assert!(line("peer back up").contains("peer=2"));
    assert!(line("hint replay started").contains("peer=2 pending="), "{}", line("hint replay started"));
    let done = log.lines().filter(|l| l.contains("hint replay done peer=2"));
    let replayed: u64 = done.filter_map(|l| l.split("replayed=").nth(1)?.split(' ').next()?.parse::<u64>().ok()).sum();
    assert_eq!(replayed as f64, cl.metric(0, "tailor_hints_replayed_total", &[]), "the lines count every hint");
    // connections are opened on first use: node 0 may not have talked to node 2 before the kill
    let down_at = log.find("peer marked down").expect("checked above");
    if log[..down_at].lines().any(|l| l.contains("connected to peer peer=2")) {
        assert!(line("connection to peer lost").contains("peer=2"), "the kill cut node 0's connection");
    }
}

/// Without hints: node 2 misses the writes while down and is restarted behind (every node
/// sends the `read_repair` fraction of its reads at ONE to every replica).
fn back_without_hints(read_repair: f64) -> (TestCluster, Expected) {
    let mut cl = TestCluster::start(ClusterOptions { nodes: 3, ..ClusterOptions::default() }, |c| {
        c.hint_max_bytes = 0;
        c.read_repair = read_repair;
    });
    let expected = writes_while_down(&mut cl);
    cl.restart(2);
    // the 20 deleted keys read as absent there anyway (but without their tombstones)
    assert_eq!(missing_on_node2(&cl, &expected).len(), 40, "without hints node 2 missed every live key");
    (cl, expected)
}

#[test]
fn quorum_reads_repair_a_replica_that_missed_writes() {
    let (cl, expected) = back_without_hints(0.0);
    let mut con = cl.conn(2);
    // this connection reads at ALL (cqlsh's CONSISTENCY); others keep the node's levels
    let _: () = redis::cmd("CONSISTENCY").arg("all").query(&mut con).unwrap();
    let level: String = redis::cmd("CONSISTENCY").query(&mut con).unwrap();
    assert_eq!(level, "ALL");
    let other: String = redis::cmd("CONSISTENCY").query(&mut cl.conn(2)).unwrap();
    assert_eq!(other, "DEFAULT (READS ONE, WRITES QUORUM)");
    assert!(eventually(10, || cl.metric(2, "tailor_peer_up", &["peer=\"0\""]) == 1.0), "node 2 sees node 0");
    for (k, v) in &expected {
        assert_eq!(get(&mut con, k).unwrap(), *v, "{k} at ALL");
    }
    assert_eq!(missing_on_node2(&cl, &expected), Vec::<String>::new(), "the reads wrote the newest back");
    assert!(cl.metric(2, "tailor_read_repairs_total", &[]) >= 60.0, "tombstones written back too");
    let repairs = cl.log(2).lines().filter(|l| l.contains("read repair wrote the newest version back")).count();
    assert!(repairs >= 60, "one line per repaired read: {repairs}");
}

#[test]
fn reads_at_one_repair_in_the_background() {
    let (cl, expected) = back_without_hints(1.0);
    assert!(eventually(10, || cl.metric(0, "tailor_peer_up", &["peer=\"2\""]) == 1.0), "node 0 sees node 2");
    // a restarted node is not read at ONE, shadows included, until it says it caught up
    // (recovery.rs): with hints off, at its first heartbeat answers
    let caught_up = || cl.metric(0, "tailor_peer_recovering", &["peer=\"2\""]) == 0.0;
    assert!(eventually(10, caught_up), "node 0 sees node 2 caught up");
    let mut con = cl.conn(0);
    for (k, _) in &expected {
        // at ONE the client gets one replica's answer at once (maybe node 2's, behind); the
        // read-repair copies to the others are compared after
        get(&mut con, k).unwrap();
    }
    let current = eventually(10, || missing_on_node2(&cl, &expected).is_empty());
    assert!(current, "still behind on node 2: {:?}", missing_on_node2(&cl, &expected));
    // counted when node 2's acknowledgement is back at node 0, a moment after node 2 applied it
    let counted = eventually(10, || cl.metric(0, "tailor_read_repairs_total", &[]) >= 60.0);
    assert!(counted, "tombstones written back too: {}", cl.metric(0, "tailor_read_repairs_total", &[]));
}

#[test]
fn an_anti_entropy_pass_brings_a_replica_up_to_date() {
    let (cl, expected) = back_without_hints(0.0);
    assert!(eventually(10, || cl.metric(0, "tailor_peer_up", &["peer=\"2\""]) == 1.0), "node 0 sees node 2");
    let out =
        std::process::Command::new(exe()).args(["cluster", "repair", "--dir"]).arg(cl.dir.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.lines().count(), 3, "one line per node: {text}");
    // node 0 repairs the 60 keys node 2 is behind on; nodes 1 and 2 then find nothing to do
    assert!(text.contains("node 0: ranges=3 mismatched=3 "), "{text}");
    assert!(text.contains(" repaired=60 failed=0 purged=0"), "{text}");
    assert!(text.contains("node 2: ranges=3 mismatched=0 "), "{text}");
    assert_eq!(missing_on_node2(&cl, &expected), Vec::<String>::new(), "the pass wrote the newest back");
    let log = cl.log(0);
    assert!(log.contains("anti-entropy pass started ranges=3"), "{log}");
    assert!(log.contains("anti-entropy pass done ranges=3 mismatched=3 exchanged="), "{log}");
    assert!(log.contains(" repaired=60 failed=0"), "{log}");
}

/// The fields of a `TAILOR.REPAIR` reply (`ranges=3 mismatched=1 ...`).
fn repair(cl: &TestCluster, node: usize) -> HashMap<String, u64> {
    let reply: String = redis::cmd("TAILOR.REPAIR").query(&mut cl.conn(node)).unwrap();
    reply
        .split(' ')
        .map(|f| f.split_once('=').unwrap_or_else(|| panic!("bad reply {reply}")))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
        .collect()
}

/// The version node `i`'s own replica holds for `key` (0: none, not even a tombstone).
fn replica_version(cl: &TestCluster, i: usize, key: &str) -> u64 {
    let read = Message::Read { id: 1, key: key.as_bytes().to_vec(), tags: Default::default(), age: 0 };
    match internode(&cl.cfgs[i], &read) {
        Message::ReadReply { version, .. } => version,
        other => panic!("node {i} answered a read with {other:?}"),
    }
}

/// A 3-node cluster with hints off and 16 tokens per node (48 ranges), holding `keys` keys.
fn cluster_of(keys: usize, tweak: impl Fn(&mut NodeConfig)) -> (TestCluster, Expected) {
    let cl = TestCluster::start(ClusterOptions { nodes: 3, ..ClusterOptions::default() }, |c| {
        c.hint_max_bytes = 0;
        c.vnodes = 16;
        tweak(c);
    });
    let mut con = cl.conn(0);
    let expected: Expected = (0..keys).map(|i| (format!("key{i}"), Some(value(50, i as u64)))).collect();
    for (k, v) in &expected {
        set(&mut con, k, v.as_deref().unwrap()).unwrap();
    }
    (cl, expected)
}

/// Kill node 2, overwrite keys `0..n` and delete keys `n..2n` at QUORUM, restart it. Node 2
/// first holds every earlier write: a QUORUM write returns once two replicas answered, and a
/// copy still on its way to node 2 when it is killed would be one more key to repair than the
/// test changed (seen once in CI).
fn change_while_down(cl: &mut TestCluster, expected: &mut Expected, n: usize) {
    let caught_up = || expected.iter().all(|(k, _)| replica_version(cl, 2, k) == replica_version(cl, 0, k));
    assert!(eventually(10, caught_up), "node 2 holds every write made before it is killed");
    cl.kill(2);
    assert!(eventually(10, || cl.metric(0, "tailor_peer_up", &["peer=\"2\""]) == 0.0), "node 0 sees node 2 down");
    let mut con = cl.conn(0);
    for (k, v) in expected.iter_mut().take(n) {
        set(&mut con, k, b"changed").unwrap();
        *v = Some(b"changed".to_vec());
    }
    for (k, v) in expected.iter_mut().skip(n).take(n) {
        let _: i64 = redis::cmd("DEL").arg(&*k).query(&mut con).unwrap();
        *v = None;
    }
    cl.restart(2);
    assert!(eventually(10, || cl.metric(0, "tailor_peer_up", &["peer=\"2\""]) == 1.0), "node 0 sees node 2");
}

fn assert_current_everywhere(cl: &TestCluster, expected: &Expected) {
    for i in 0..3 {
        let mut con = cl.conn(i);
        for (k, v) in expected {
            assert_eq!(replica_value(cl, i, k), *v, "{k} on node {i}'s replica");
            assert_eq!(get(&mut con, k).unwrap(), *v, "{k} at ONE through node {i}");
        }
    }
}

#[test]
fn merkle_trees_exchange_only_the_keys_that_differ() {
    const KEYS: usize = 1000;
    const CHANGED: usize = 20;
    let (mut cl, mut expected) = cluster_of(KEYS, |_| {});
    change_while_down(&mut cl, &mut expected, CHANGED / 2);
    let done = repair(&cl, 0);
    eprintln!(
        "anti-entropy: {} keys exchanged for {CHANGED} changed keys, of {KEYS} keys held ({} replicas); \
         {} of {} ranges mismatched, {} leaves exchanged, {} keys repaired, {} keys scanned",
        done["exchanged"],
        KEYS * 3,
        done["mismatched"],
        done["ranges"],
        done["leaves"],
        done["repaired"],
        done["scanned"],
    );
    assert_eq!(done["repaired"], CHANGED as u64, "{done:?}");
    assert_eq!(done["failed"], 0, "{done:?}");
    assert!(done["ranges"] >= 48 && done["mismatched"] <= CHANGED as u64, "{done:?}");
    assert!(done["mismatched"] * 2 < done["ranges"], "only some ranges differ: {done:?}");
    assert!(done["exchanged"] < 3 * CHANGED as u64, "only keys of differing leaves: {done:?}");
    assert_eq!(done["scanned"], KEYS as u64, "node 0 scans each of its keys once");
    assert_eq!(cl.metric(0, "tailor_repair_keys_repaired_total", &[]), CHANGED as f64);
    assert_eq!(cl.metric(0, "tailor_repair_ranges_compared_total", &[]), done["ranges"] as f64);
    assert_current_everywhere(&cl, &expected);
    let again = repair(&cl, 1);
    assert_eq!((again["mismatched"], again["exchanged"], again["repaired"]), (0, 0, 0), "{again:?}");
}

#[test]
fn tombstones_are_dropped_after_their_grace_and_deletes_stay() {
    const GRACE_S: u64 = 12;
    let (mut cl, mut expected) = cluster_of(100, |c| {
        c.gc_grace_s = GRACE_S;
        c.gc_every_s = 1;
    });
    let deleted_at = std::time::Instant::now();
    change_while_down(&mut cl, &mut expected, 20);
    let done = repair(&cl, 0);
    assert!(deleted_at.elapsed().as_secs() < GRACE_S, "the repair ran within the grace");
    assert_eq!(done["repaired"], 40, "{done:?}");
    let gone: Vec<&String> = expected.iter().filter(|(_, v)| v.is_none()).map(|(k, _)| k).collect();
    assert!(gone.iter().all(|k| replica_version(&cl, 2, k) > 0), "node 2 got the tombstones");
    let purged = eventually(60, || (0..3).all(|i| cl.metric(i, "tailor_tombstones_purged_total", &[]) >= 20.0));
    assert!(purged, "every node drops its 20 tombstones after {GRACE_S} s");
    for i in 0..3 {
        assert!(gone.iter().all(|k| replica_version(&cl, i, k) == 0), "node {i} holds no tombstone");
    }
    let again = repair(&cl, 1);
    assert_eq!((again["mismatched"], again["repaired"]), (0, 0), "{again:?}");
    assert_current_everywhere(&cl, &expected);
}
