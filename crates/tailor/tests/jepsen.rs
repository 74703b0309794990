//! A Jepsen-style suite (issue 36, item 9): client threads record a history of SETs and GETs at
//! QUORUM and ONE (`SELECT 2` / `SELECT 1`) against three node processes while a nemesis
//! injects one kind of fault; then the fault is healed, every key is read at ALL through every
//! node, the replicas must agree within a bounded time (the time is printed), and the checker
//! (`jepsen/checker.rs`) tests the history: no acknowledged write lost, no stale QUORUM read,
//! no value from nowhere. Each test prints its counts (run with `--nocapture`).
//!
//! Nemeses, one test each: kill -9 and restart; pause (SIGSTOP) then kill; a clock ahead and
//! behind (libfaketime); a partition of one node from its peers (iptables and a cgroup v2);
//! a full disk (a tmpfs data_dir); the empty key; unsigned and wrongly signed peer frames.
//! `soak` mixes kills and pauses with one node's clock 200 ms ahead; it runs 20 s by default and
//! `TAILOR_SOAK_SECS=300` makes it the long form. docs/jepsen.md has the figures.

#[path = "jepsen/checker.rs"]
mod checker;
mod common;
#[path = "jepsen/history.rs"]
mod history;
#[path = "jepsen/nemesis.rs"]
mod nemesis;

use common::*;
use history::{Clients, Level, Op, Outcome, Workload};
use nemesis::{Partition, SmallDisk};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tailor_store::cluster::ClusterOptions;
use tailor_store::config::NodeConfig;
use tailor_store::internode::{Failure, Message};

const NODES: usize = 3;

/// Operations within this long after a fault ends still count as during it (failure detection,
/// reconnecting clients) when latencies outside faults are measured.
const AFTER_FAULT: Duration = Duration::from_secs(2);

fn cluster(tweak: impl Fn(&mut NodeConfig)) -> TestCluster {
    TestCluster::start(ClusterOptions { nodes: NODES, ..ClusterOptions::default() }, |c| {
        c.hint_replay_ms = 200;
        tweak(c);
    })
}

/// One run: a cluster, its clients, and the times of the faults.
struct Trial {
    name: String,
    cl: TestCluster,
    clients: Option<Clients>,
    load: Workload,
    started: Instant,
    faults: Vec<(Instant, Instant)>,
    /// Print a progress line every 10 s (the soak).
    progress: Option<Instant>,
    /// The clock skew injected within max_clock_offset_ms (zero without one): the checker
    /// reports anomalies between writes closer than this apart, and does not fail on them.
    skew: Duration,
}

impl Trial {
    fn start(name: &str, cl: TestCluster, load: Workload) -> Trial {
        let addrs = cl.cfgs.iter().map(|c| c.client_addr).collect();
        let clients = Clients::start(addrs, &load, name.len() as u64);
        let started = Instant::now();
        Trial {
            name: name.into(),
            cl,
            clients: Some(clients),
            load,
            started,
            faults: Vec::new(),
            progress: None,
            skew: Duration::ZERO,
        }
    }

    /// Let the clients run for `d`.
    fn run(&mut self, d: Duration) {
        let until = Instant::now() + d;
        while Instant::now() < until {
            std::thread::sleep((until - Instant::now()).min(Duration::from_millis(250)));
            if self.progress.is_some_and(|p| p.elapsed() >= Duration::from_secs(10)) {
                self.progress = Some(Instant::now());
                let counts = self.clients.as_ref().expect("running").counters.line();
                eprintln!("jepsen[{}] {:>4.0} s: {counts}", self.name, self.started.elapsed().as_secs_f64());
            }
        }
    }

    /// Inject (and heal) a fault, recording when it lasted.
    fn fault<T>(&mut self, f: impl FnOnce(&mut TestCluster) -> T) -> T {
        let from = Instant::now();
        let out = f(&mut self.cl);
        self.faults.push((from, Instant::now()));
        out
    }

    /// Stop the clients, heal, converge and check; prints the counts and fails on an anomaly.
    /// Every node must be running again.
    fn finish(mut self, note: &str) -> checker::Verdict {
        let history = self.clients.take().expect("running").finish();
        let ran = self.started.elapsed();
        let cl = &self.cl;
        let stopped = Instant::now();
        let healed = self.faults.last().map_or(stopped, |f| f.1);
        let drained = eventually(30, || (0..NODES).all(|i| cl.metric(i, "tailor_hints_pending", &[]) == 0.0));
        let since = |t: Instant| (t.elapsed().as_secs_f64(), stopped.elapsed().as_secs_f64());
        let hints_s = since(healed);
        let keys: Vec<String> = (0..self.load.keys).map(|k| format!("k{k}")).collect();
        let replicas = |k: &String| -> Vec<Option<Vec<u8>>> { (0..NODES).map(|i| replica_value(cl, i, k)).collect() };
        let equal = || keys.iter().all(|k| replicas(k).windows(2).all(|w| w[0] == w[1]));
        // by hints alone (a write whose coordinator died before sending its copies has none)
        let by_hints = eventually(5, equal);
        let mut converge_s = since(healed);
        // every key at ALL through every node (a read at ALL writes the newest version back)
        let mut at_all: Vec<BTreeMap<String, Option<String>>> = Vec::new();
        for i in 0..NODES {
            let mut con = cl.conn(i);
            redis::cmd("SELECT").arg(3).query::<()>(&mut con).expect("SELECT 3");
            let mut read = |k: &String| -> Option<Option<String>> {
                let mut got = None;
                eventually(30, || match get(&mut con, k) {
                    Ok(v) => {
                        got = Some(v.map(|v| String::from_utf8_lossy(&v).into_owned()));
                        true
                    }
                    Err(_) => false,
                });
                got
            };
            let values =
                keys.iter().map(|k| (k.clone(), read(k).unwrap_or_else(|| panic!("node {i}: {k} unreadable at ALL"))));
            at_all.push(values.collect());
        }
        let converged = by_hints || eventually(30, equal);
        if !by_hints {
            converge_s = since(healed);
        }
        let how = if by_hints { "by hints alone" } else { "once read at ALL" };
        let finals: BTreeMap<String, Option<String>> = keys
            .iter()
            .map(|k| (k.clone(), replica_value(cl, 0, k).map(|v| String::from_utf8_lossy(&v).into_owned())))
            .collect();
        let disagree = at_all.iter().filter(|a| **a != finals).count();
        let verdict = checker::check(&history, &finals, self.skew);
        for line in verdict.within_skew.iter().take(5) {
            eprintln!("jepsen[{}]: within the {:?} clock skew: {line}", self.name, self.skew);
        }
        let (p50, p99, n) = latency_outside(&history, &self.faults);
        eprintln!(
            "jepsen[{}]: {} ops in {:.1} s with {} faults{note}; {}; hints drained {:.1} s and replicas equal \
             {:.1} s ({how}) after the last fault healed ({:.1} s and {:.1} s after the load stopped); ALL reads \
             that disagreed with the replicas: {disagree} of {NODES} nodes; latency outside faults p50 {p50:.1} \
             ms, p99 {p99:.1} ms ({n} ops)",
            self.name,
            history.len(),
            ran.as_secs_f64(),
            self.faults.len(),
            verdict.counts(),
            hints_s.0,
            converge_s.0,
            hints_s.1,
            converge_s.1,
        );
        assert!(drained, "{}: hints never drained", self.name);
        assert!(converged, "{}: replicas still differ 30 s after healing", self.name);
        assert_eq!(disagree, 0, "{}: a node's reads at ALL disagree with the replicas", self.name);
        assert!(verdict.ok(), "{}: {}", self.name, verdict.anomalies());
        assert!(verdict.acked > 0 && verdict.quorum_reads_checked > 0, "{}: the clients did nothing", self.name);
        verdict
    }
}

/// p50 and p99 (ms) of the answered operations that overlap no fault (nor the `AFTER_FAULT`
/// after one), and how many there were.
fn latency_outside(history: &[Op], faults: &[(Instant, Instant)]) -> (f64, f64, usize) {
    let quiet = |o: &&Op| faults.iter().all(|(from, to)| o.complete < *from || o.invoke > *to + AFTER_FAULT);
    let mut ms: Vec<f64> = history
        .iter()
        .filter(|o| o.outcome == Outcome::Ok)
        .filter(quiet)
        .map(|o| o.latency().as_secs_f64() * 1e3)
        .collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms.get(((ms.len() as f64 * q) as usize).min(ms.len().saturating_sub(1))).copied().unwrap_or(0.0);
    (at(0.5), at(0.99), ms.len())
}

const SECOND: Duration = Duration::from_secs(1);

#[test]
fn kill_9_and_restart() {
    let mut t = Trial::start("kill -9", cluster(|_| {}), Workload::default());
    t.run(2 * SECOND);
    for victim in [1, 2, 0] {
        t.fault(|cl| {
            cl.kill(victim);
            std::thread::sleep(1500 * Duration::from_millis(1));
            cl.restart(victim);
        });
        t.run(1500 * Duration::from_millis(1));
    }
    t.finish("");
}

#[test]
fn pause_then_kill() {
    let mut t = Trial::start("pause then kill", cluster(|_| {}), Workload::default());
    t.run(2 * SECOND);
    for victim in [2, 0] {
        t.fault(|cl| {
            // frozen: its clients' requests and its copies hang, then time out; then it dies
            cl.signal(victim, libc::SIGSTOP);
            std::thread::sleep(2 * SECOND);
            cl.kill(victim);
            std::thread::sleep(SECOND / 2);
            cl.restart(victim);
        });
        t.run(2 * SECOND);
    }
    t.finish("");
}

/// Node 2's clock `big` off (beyond max_clock_offset_ms: it must stop coordinating writes), then
/// `small` off (within it: an ordinary node), then true again.
fn clock_skew(name: &str, big: &str, small: &str) {
    let Some(lib) = libfaketime() else {
        eprintln!(
            "SKIPPED: jepsen[{name}]: libfaketime is not installed (apt-get install libfaketime; .ci/run installs it)"
        );
        return;
    };
    let mut t = Trial::start(name, cluster(|_| {}), Workload::default());
    t.skew = Duration::from_millis(300); // the small skew's
    t.run(2 * SECOND);
    let mut seen = Vec::new();
    for skew in [big, small] {
        t.fault(|cl| {
            skew_node(cl, 2, lib, skew);
            std::thread::sleep(4 * SECOND);
        });
        let m = |name| t.cl.metric(2, name, &[]);
        let (offset, skewed, refused) =
            (m("tailor_clock_offset_ms"), m("tailor_clock_skewed"), m("tailor_clock_skew_refusals_total"));
        seen.push(format!("{skew}: offset {offset:.0} ms, skewed {skewed}, {refused} writes refused through it"));
        if skew == big {
            assert_eq!(skewed, 1.0, "{skew}: node 2 does not see its clock skewed");
        }
    }
    t.fault(|cl| {
        cl.kill(2);
        cl.restart(2);
    });
    t.run(2 * SECOND);
    t.finish(&format!(" (node 2 {}; then true again)", seen.join("; ")));
}

#[test]
fn clock_skew_ahead() {
    clock_skew("clock ahead", "+5s", "+0.3s");
}

#[test]
fn clock_skew_behind() {
    clock_skew("clock behind", "-5s", "-0.3s");
}

#[test]
fn partition_one_node_from_its_peers() {
    if let Some(why) = Partition::unavailable() {
        eprintln!("SKIPPED: jepsen[partition]: {why}");
        return;
    }
    let mut t = Trial::start("partition", cluster(|_| {}), Workload::default());
    t.run(2 * SECOND);
    let mut rules = 0;
    for isolated in [2, 0] {
        let seen = t.fault(|cl| {
            let cut = Partition::isolate(cl, isolated);
            rules += cut.rules();
            let seen = eventually(10, || cl.metric((isolated + 1) % NODES, "tailor_peer_up", &[]) < (NODES - 1) as f64);
            std::thread::sleep(3 * SECOND);
            drop(cut);
            seen
        });
        assert!(seen, "node {isolated}'s peers never saw it down: the partition did not cut it off");
        t.run(2 * SECOND);
    }
    t.finish(&format!(" ({rules} iptables rules in all)"));
}

#[test]
fn a_full_disk() {
    let mnt = tempfile::tempdir().expect("temp dir");
    let disk = match SmallDisk::mount(mnt.path(), 16) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("SKIPPED: jepsen[full disk]: cannot mount a tmpfs ({e}); the test needs root");
            return;
        }
    };
    let data = disk.dir.clone();
    let mut t = Trial::start(
        "full disk",
        cluster(move |c| {
            if c.id == 2 {
                c.data_dir = data.clone();
            }
        }),
        Workload::default(),
    );
    t.run(2 * SECOND);
    let filled = t.fault(|_| {
        let n = disk.fill();
        std::thread::sleep(3 * SECOND);
        disk.free();
        n
    });
    // whatever the node's disk_failure_policy, it serves writes again once there is room
    let back = Instant::now();
    let writes = eventually(30, || {
        let Ok(client) = redis::Client::open(format!("redis://{}/", t.cl.cfgs[2].client_addr)) else { return false };
        let Ok(mut con) = client.get_connection_with_timeout(SECOND) else { return false };
        redis::cmd("SELECT").arg(3).query::<()>(&mut con).is_ok() && set(&mut con, "after-the-disk", b"v").is_ok()
    });
    let back_s = back.elapsed().as_secs_f64();
    assert!(writes, "node 2 does not take writes at ALL 30 s after its disk has room again: {}", t.cl.log(2));
    t.run(2 * SECOND);
    t.finish(&format!(
        " (node 2's 16 MB disk filled with {} MB; writes at ALL through it again {back_s:.1} s after space was freed)",
        filled >> 20
    ));
}

#[test]
fn the_empty_key_under_load() {
    let mut t = Trial::start("empty key", cluster(|_| {}), Workload::default());
    t.run(2 * SECOND);
    let (mut refused, mut stored) = (0, 0);
    for round in 0..3 {
        t.fault(|cl| {
            for i in 0..NODES {
                match set(&mut cl.conn(i), "", format!("empty-{round}-{i}").as_bytes()) {
                    Err(e) if e.to_string().contains("empty key") => refused += 1,
                    Err(e) => panic!("SET \"\" through node {i}: {e}"),
                    Ok(()) => stored += 1,
                }
                let signed = nemesis::forged_write("", "empty");
                match internode(&cl.cfgs[i], &signed) {
                    Message::Failed { failure: Failure::ForGood, .. } => refused += 1,
                    Message::WriteAck { .. } => stored += 1,
                    other => panic!("node {i}'s peer port answered the empty key with {other:?}"),
                }
            }
        });
        t.run(SECOND);
    }
    for i in 0..NODES {
        assert_eq!(t.cl.metric(i, "tailor_worker_panics_total", &[]), 0.0, "node {i} panicked");
        assert_eq!(t.cl.metric(i, "tailor_healthy", &[]), 1.0, "node {i} unhealthy");
    }
    t.finish(&format!(" (the empty key {refused} times refused, {stored} stored)"));
}

#[test]
fn unsigned_peer_frames_under_load() {
    let mut t = Trial::start("unsigned frames", cluster(|_| {}), Workload::default());
    t.run(2 * SECOND);
    let mut sent = 0;
    for round in 0..3 {
        t.fault(|cl| {
            for i in 0..NODES {
                let forged = nemesis::forged_write("k1", &format!("forged-{round}-{i}"));
                let read = Message::Read { id: 9, key: b"k1".to_vec(), tags: Default::default(), age: 0 };
                let wrong = tailor_store::internode::Seal::new(Some("not the cluster's secret"));
                for frame in [
                    tailor_store::internode::encode(&forged),
                    tailor_store::internode::encode(&read),
                    wrong.encode(&forged),
                ] {
                    let reply = nemesis::send_raw(cl.cfgs[i].peer_listen(), &frame);
                    assert!(reply.is_empty(), "node {i} answered a frame without the cluster's signature");
                    sent += 1;
                }
            }
        });
        t.run(SECOND);
    }
    let counted: f64 = (0..NODES).map(|i| t.cl.metric(i, "tailor_forged_frames_total", &[])).sum();
    assert_eq!(counted, sent as f64, "tailor_forged_frames_total");
    t.finish(&format!(" ({sent} unsigned or wrongly signed frames, all refused and counted)"));
}

/// The soak: `TAILOR_SOAK_SECS` (20 by default) of mixed load, a node killed or paused every
/// 30 s (every third of the run when shorter than 90 s), node 2's clock 200 ms ahead
/// throughout (within max_clock_offset_ms, 500); RSS per node at the start and the end.
#[test]
fn soak() {
    let secs: u64 = std::env::var("TAILOR_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let every = if secs >= 90 { 30 } else { (secs / 3).max(4) };
    let mut cl = cluster(|_| {});
    let skew = libfaketime().map(|lib| (lib, "+0.2s"));
    match skew {
        Some((lib, s)) => skew_node(&mut cl, 2, lib, s),
        None => eprintln!("jepsen[soak]: libfaketime is not installed: no clock skew"),
    }
    let rss = |cl: &TestCluster| (0..NODES).map(|i| format!("{:.0}", cl.rss_mb(i))).collect::<Vec<_>>().join("/");
    let rss_start = rss(&cl);
    let load = Workload {
        clients: vec![Level::Quorum, Level::Quorum, Level::Quorum, Level::One, Level::One, Level::Quorum],
        keys: 32,
        ..Workload::default()
    };
    let mut t = Trial::start("soak", cl, load);
    if skew.is_some() {
        t.skew = Duration::from_millis(200);
    }
    t.progress = Some(Instant::now());
    let mut n = 0;
    let end = Duration::from_secs(secs);
    loop {
        // fault n starts at (n + 1) * every s, and none in the last 3 s
        let next = Duration::from_secs(every * (n as u64 + 1));
        t.run(next.min(end).saturating_sub(t.started.elapsed()));
        if next + Duration::from_secs(3) >= end {
            t.run(end.saturating_sub(t.started.elapsed()));
            break;
        }
        let victim = n % NODES;
        let kill = n % 2 == 0;
        eprintln!(
            "jepsen[soak] {:>4.0} s: {} node {victim}",
            t.started.elapsed().as_secs_f64(),
            if kill { "kill -9" } else { "SIGSTOP" }
        );
        t.fault(|cl| {
            if kill {
                cl.kill(victim);
            } else {
                cl.signal(victim, libc::SIGSTOP);
            }
            std::thread::sleep(2 * SECOND);
            match (kill, skew) {
                (false, _) => cl.signal(victim, libc::SIGCONT),
                (true, Some((lib, s))) if victim == 2 => skew_node(cl, 2, lib, s),
                (true, _) => cl.restart(victim),
            }
        });
        n += 1;
    }
    let rss_end = rss(&t.cl);
    let offset = t.cl.metric(2, "tailor_clock_offset_ms", &[]);
    let skewed =
        skew.map_or("no clock skew".to_string(), |(_, s)| format!("node 2's clock {s}, offset {offset:.0} ms"));
    t.finish(&format!(" ({n} kills and pauses, every {every} s; {skewed}; RSS MB per node {rss_start} at the start, {rss_end} at the end)"));
}
