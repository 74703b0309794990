//! A node back from a crash is not read at ONE before it has caught up (issue 36, item 8).
//!
//! A node killed with SIGKILL misses the writes made while it was down; its peers keep them as
//! hints and replay them once it is back. Until then its replica answers nil (or an older value)
//! for what it missed, which a read at ONE would hand the client (before this rule: 12,140 of
//! 12,197 keys right after a restart, 1-18 s to converge). A restarted node now says it is
//! *recovering* until every peer has told it (in a heartbeat's answer) that it holds no hint
//! for it, or `recovery_max_s` passed, and coordinators (its own included) read other replicas
//! at ONE meanwhile. Real processes on loopback.

mod common;
use common::*;
use tailor_store::cluster::ClusterOptions;

/// Keys written while node 2 is down.
const KEYS: usize = 2_000;

/// Read every key at ONE through node `i`; (nil answers, wrong values).
fn read_all_at_one(cl: &TestCluster, i: usize, keys: &[String]) -> (usize, usize) {
    let mut con = cl.conn(i);
    redis::cmd("SELECT").arg(1).query::<()>(&mut con).unwrap();
    let (mut nil, mut wrong) = (0, 0);
    for (n, k) in keys.iter().enumerate() {
        // a read whose caught-up replicas all missed the (500 ms) timeout on a busy host fails
        // rather than going to the recovering one: sent again, as other tests do
        let mut answer = get(&mut con, k);
        for _ in 0..3 {
            match &answer {
                Err(e) if timed_out(e) => answer = get(&mut con, k),
                _ => break,
            }
        }
        match answer.unwrap_or_else(|e| panic!("GET {k} through node {i}: {e}")) {
            None => nil += 1,
            Some(v) if v != value(64, n as u64) => wrong += 1,
            Some(_) => {}
        }
    }
    (nil, wrong)
}

/// With round-robin, a third of the reads would go to the restarted replica; with C3 (the
/// default) fewer, but some.
#[test]
fn a_restarted_node_is_not_read_at_one_before_its_hints_are_replayed() {
    for selector in ["round-robin", "c3"] {
        restart_and_read_at_one(selector);
    }
}

fn restart_and_read_at_one(selector: &str) {
    // replays every 4 s: the window in which the restarted replica lacks what it missed is
    // wider than with the default 1 s, and the rule must hold however long it is
    let opts = ClusterOptions { nodes: 3, replication: 3, selector: selector.into(), ..ClusterOptions::default() };
    let mut cl = TestCluster::start(opts, |c| c.hint_replay_ms = 4_000);
    let mut con = cl.conn(0);
    set(&mut con, "warm", b"up").unwrap();
    cl.kill(2);
    // QUORUM: nodes 0 and 1 acknowledge, node 2's copies become hints on node 0
    redis::cmd("SELECT").arg(2).query::<()>(&mut con).unwrap();
    let keys: Vec<String> = (0..KEYS).map(|i| format!("missed-{i}")).collect();
    for (n, k) in keys.iter().enumerate() {
        let mut tries = 0;
        while let Err(e) = set(&mut con, k, &value(64, n as u64)) {
            tries += 1;
            assert!(timed_out(&e) && tries < 3, "SET {k} at QUORUM with node 2 down: {e}");
        }
    }
    let hinted = cl.metric(0, "tailor_hints_pending", &[]);
    assert!(hinted >= KEYS as f64, "node 0 keeps {hinted} hints, expected at least {KEYS}");
    cl.restart(2);
    // at once: through the restarted node, then through the two others
    let counts: Vec<(usize, usize, usize)> = [2, 0, 1]
        .into_iter()
        .map(|i| {
            let (nil, wrong) = read_all_at_one(&cl, i, &keys);
            (i, nil, wrong)
        })
        .collect();
    let avoided: Vec<f64> = (0..3).map(|i| cl.metric(i, "tailor_reads_avoided_recovering_total", &[])).collect();
    eprintln!(
        "{selector}: nil and wrong answers at ONE right after the restart, by node: {counts:?}; reads steered \
         away from node 2, by coordinator: {avoided:?}"
    );
    for &(i, nil, wrong) in &counts {
        assert_eq!(
            (nil, wrong),
            (0, 0),
            "{selector}: through node {i}, {nil} of {KEYS} keys read nil and {wrong} an older value at ONE right \
             after node 2 restarted (by node: {counts:?})"
        );
    }
    // it said it was recovering, and left once node 0's hints for it were replayed
    let entered = cl.log(2).matches("recovering: not read at ONE until").count();
    assert_eq!(entered, 2, "node 2 said it was recovering at its start and its restart: {}", cl.log(2));
    let left = eventually(30, || cl.metric(2, "tailor_recovering", &[]) == 0.0);
    assert!(left, "node 2 still recovering 30 s after its restart: {}", cl.log(2));
    assert_eq!(cl.metric(0, "tailor_hints_pending", &[]), 0.0, "node 0's hints for node 2 replayed");
    let log = cl.log(2);
    let line =
        log.lines().rev().find(|l| l.contains("recovered")).unwrap_or_else(|| panic!("no recovered line: {log}"));
    assert!(line.contains("every peer's hints for this node were replayed"), "left for another reason: {line}");
    eprintln!("{selector}: {line}");
    let mut c2 = cl.conn(2);
    let info: String = redis::cmd("INFO").arg("tailor").query(&mut c2).unwrap();
    assert!(info.contains("recovering:0"), "INFO tailor: {info}");
}

/// A peer that is down holds a restarted node in recovery no longer than `recovery_max_s`;
/// meanwhile reads at ONE through it go to the replica that is up and caught up.
#[test]
fn a_peer_that_is_down_holds_recovery_no_longer_than_its_bound() {
    let mut cl = TestCluster::start(ClusterOptions { nodes: 3, replication: 3, ..ClusterOptions::default() }, |c| {
        c.recovery_max_s = 3;
    });
    let mut con = cl.conn(0);
    set(&mut con, "warm", b"up").unwrap();
    cl.kill(1);
    cl.kill(2);
    redis::cmd("SELECT").arg(1).query::<()>(&mut con).unwrap();
    let keys: Vec<String> = (0..200).map(|i| format!("alone-{i}")).collect();
    for (n, k) in keys.iter().enumerate() {
        set(&mut con, k, &value(64, n as u64)).unwrap();
    }
    let restarted = std::time::Instant::now();
    cl.restart(2);
    let mut c2 = cl.conn(2);
    let info: String = redis::cmd("INFO").arg("tailor").query(&mut c2).unwrap();
    assert!(info.contains("recovering:1"), "node 1 is down, 3 s not yet passed: {info}");
    assert_eq!(read_all_at_one(&cl, 2, &keys), (0, 0), "read through node 2 while it recovers");
    let left = eventually(20, || cl.metric(2, "tailor_recovering", &[]) == 0.0);
    assert!(left, "node 2 still recovering 20 s after its restart: {}", cl.log(2));
    assert!(restarted.elapsed().as_secs_f64() >= 3.0, "left before its bound with node 1 down");
    let log = cl.log(2);
    let line =
        log.lines().rev().find(|l| l.contains("recovered")).unwrap_or_else(|| panic!("no recovered line: {log}"));
    assert!(line.contains("recovery_max_s passed") && line.contains("[1]"), "{line}");
    assert!(cl.metric(2, "tailor_reads_avoided_recovering_total", &[]) > 0.0, "node 2's own replica was avoided");
}
