//! Several node processes: replication, every selector and local policy, `cluster up/down/restart`.

mod common;
use common::*;
use std::io::BufRead;
use std::time::{Duration, Instant};
use tailor_store::cluster::ClusterOptions;
use tailor_store::config::Consistency;

#[test]
fn writes_then_reads_through_every_node() {
    // ALL so that any replica a read picks already holds the write (QUORUM is eventually consistent)
    let opts = ClusterOptions { nodes: 4, write_consistency: Consistency::All, ..ClusterOptions::default() };
    let cl = TestCluster::start(opts, |_| {});
    let mut cons: Vec<_> = (0..4).map(|i| cl.conn(i)).collect();
    let mut expected = Vec::new();
    for (w, con) in cons.iter_mut().enumerate() {
        for (j, len) in [1024usize, 1 << 20].into_iter().enumerate() {
            let k = format!("key-{w}-{j}");
            let v = value(len, (w * 10 + j) as u64);
            set(con, &k, &v).unwrap();
            expected.push((k, v));
        }
    }
    for con in cons.iter_mut() {
        for (k, v) in &expected {
            assert!(get(con, k).unwrap().as_ref() == Some(v), "key {k}");
        }
    }
    // reads went through the selector to several replicas, counted per replica
    let sel: f64 = (0..4).map(|i| cl.metric(i, "tailor_selections_total", &[])).sum();
    assert!(sel >= (expected.len() * 4) as f64, "{sel}");
}

#[test]
fn every_selector_and_local_policy_serves_a_mixed_workload() {
    // a probing selector (prequal) is refused by the store's configuration (simulator only)
    let selectors: Vec<&str> =
        tailor_core::selector::SELECTORS.iter().copied().filter(|s| !tailor_core::selector::probing(s)).collect();
    let locals = tailor_core::local::LOCALS;
    let runs = selectors.len().max(locals.len());
    for r in 0..runs {
        let selector = selectors[r % selectors.len()];
        let local = locals[r % locals.len()];
        let opts = ClusterOptions {
            nodes: 3,
            selector: selector.into(),
            local: local.into(),
            write_consistency: Consistency::All,
            ..ClusterOptions::default()
        };
        let cl = TestCluster::start(opts, |_| {});
        let mut cons: Vec<_> = (0..3).map(|i| cl.conn(i)).collect();
        for i in 0..60u64 {
            let con = &mut cons[(i % 3) as usize];
            let k = format!("k{}", i % 20);
            let len = if i % 10 == 0 { 300_000 } else { 1000 };
            let v = value(len, i);
            set(con, &k, &v).unwrap_or_else(|e| panic!("{selector}/{local}: {e}"));
            let got = get(&mut cons[((i + 1) % 3) as usize], &k).unwrap_or_else(|e| panic!("{selector}/{local}: {e}"));
            assert!(got == Some(v), "{selector}/{local}: wrong value for {k}");
        }
        let reads: f64 = (0..3).map(|i| cl.metric(i, "tailor_reads_served_total", &[])).sum();
        assert!(reads >= 60.0, "{selector}/{local}: {reads}");
    }
}

#[test]
fn cluster_up_prints_addresses_and_down_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut guard, addrs) = cluster_up(dir.path());
    let up = &mut guard.child;
    for a in &addrs {
        assert!(a.starts_with("127.0.0.1:"), "{a}");
    }
    let client = redis::Client::open(format!("redis://{}/", addrs[0])).unwrap();
    let mut con = client.get_connection().unwrap();
    set(&mut con, "x", b"y").unwrap();
    let client = redis::Client::open(format!("redis://{}/", addrs[2])).unwrap();
    let mut con2 = client.get_connection().unwrap();
    assert_eq!(get(&mut con2, "x").unwrap(), Some(b"y".to_vec()));
    assert_eq!(
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".pid"))
            .count(),
        3
    );
    let st = std::process::Command::new(exe()).args(["cluster", "down", "--dir"]).arg(dir.path()).status().unwrap();
    assert!(st.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut exited = false;
    while Instant::now() < deadline {
        if up.try_wait().unwrap().is_some() {
            exited = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(exited, "cluster up did not exit after cluster down");
    assert!(std::net::TcpStream::connect(&addrs[0]).is_err(), "node still listening");
}

/// Start `tailor cluster up --nodes 3` in `dir`; its guard and the client addresses it printed.
fn cluster_up(dir: &std::path::Path) -> (ClusterUp, Vec<String>) {
    let child = std::process::Command::new(exe())
        .args(["cluster", "up", "--nodes", "3", "--selector", "round-robin", "--dir"])
        .arg(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(dir.join("up.log")).unwrap())
        .spawn()
        .unwrap();
    let mut guard = ClusterUp { child, dir: dir.to_path_buf() };
    let mut lines = std::io::BufReader::new(guard.child.stdout.take().unwrap()).lines();
    let addrs = (0..3).map(|_| lines.next().expect("an address").unwrap()).collect();
    (guard, addrs)
}

fn pid_of(dir: &std::path::Path, node: u32) -> i32 {
    std::fs::read_to_string(dir.join(format!("node{node}.pid"))).unwrap().trim().parse().unwrap()
}

fn cluster(args: &[&str], dir: &std::path::Path) -> std::process::Output {
    std::process::Command::new(exe()).arg("cluster").args(args).arg("--dir").arg(dir).output().unwrap()
}

#[test]
fn a_killed_node_leaves_the_others_running_and_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let (mut up, addrs) = cluster_up(dir.path());
    let conn = |i: usize| redis::Client::open(format!("redis://{}/", addrs[i])).unwrap().get_connection().unwrap();
    set(&mut conn(0), "x", b"y").unwrap();
    // SAFETY: signalling a node process this test started
    unsafe { libc::kill(pid_of(dir.path(), 1), libc::SIGKILL) };
    std::thread::sleep(Duration::from_millis(1500));
    assert!(up.child.try_wait().unwrap().is_none(), "cluster up keeps running");
    let log = std::fs::read_to_string(dir.path().join("up.log")).unwrap();
    assert!(log.contains("node 1 exited") && log.contains("cluster restart"), "{log}");
    assert_eq!(get(&mut conn(2), "x").unwrap(), Some(b"y".to_vec()), "the others serve");

    let out = cluster(&["restart", "--node", "1"], dir.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), addrs[1]);
    let mut one = conn(1);
    let pong: String = redis::cmd("PING").query(&mut one).unwrap();
    assert_eq!(pong, "PONG");

    // a stale pid file naming some other process: `down` leaves that process alone
    let mut bystander = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    std::fs::write(dir.path().join("node7.pid"), bystander.id().to_string()).unwrap();
    let out = cluster(&["down"], dir.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(bystander.try_wait().unwrap().is_none(), "cluster down signalled a process that is not its node");
    assert!(!dir.path().join("node7.pid").exists(), "the stale pid file is removed");
    let _ = bystander.kill();
    let _ = bystander.wait();
    let deadline = Instant::now() + Duration::from_secs(20);
    while up.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "cluster up did not end once every node (the restarted one too) stopped");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(std::net::TcpStream::connect(&addrs[1]).is_err(), "the restarted node stopped too");
}

/// A `tailor cluster up` child that is always stopped (nodes and all), even when an assertion fails.
struct ClusterUp {
    child: std::process::Child,
    dir: std::path::PathBuf,
}

impl Drop for ClusterUp {
    fn drop(&mut self) {
        let _ = std::process::Command::new(exe()).args(["cluster", "down", "--dir"]).arg(&self.dir).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
