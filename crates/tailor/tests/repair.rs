//! Repair: a replica that was down catches up with the writes it missed — by hinted handoff
//! when it comes back, and by blocking read repair when a QUORUM or ALL read finds it behind —
//! checked on the replica's own data (internode reads), deletes included.

mod common;
use common::*;
use tailor_store::cluster::ClusterOptions;

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
}

/// Without hints: node 2 misses the writes while down and is restarted behind.
fn back_without_hints() -> (TestCluster, Expected) {
    let mut cl = TestCluster::start(ClusterOptions { nodes: 3, ..ClusterOptions::default() }, |c| {
        c.hint_max_bytes = 0;
    });
    let expected = writes_while_down(&mut cl);
    cl.restart(2);
    // the 20 deleted keys read as absent there anyway (but without their tombstones)
    assert_eq!(missing_on_node2(&cl, &expected).len(), 40, "without hints node 2 missed every live key");
    (cl, expected)
}

#[test]
fn quorum_reads_repair_a_replica_that_missed_writes() {
    let (cl, expected) = back_without_hints();
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
}

#[test]
fn a_repair_sweep_brings_a_replica_up_to_date() {
    let (cl, expected) = back_without_hints();
    assert!(eventually(10, || cl.metric(0, "tailor_peer_up", &["peer=\"2\""]) == 1.0), "node 0 sees node 2");
    let out =
        std::process::Command::new(exe()).args(["cluster", "repair", "--dir"]).arg(cl.dir.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.lines().count(), 3, "one line per node: {text}");
    assert!(text.contains("node 0: keys=60 failed=0 repaired="), "{text}");
    assert_eq!(missing_on_node2(&cl, &expected), Vec::<String>::new(), "the sweep wrote the newest back");
}
