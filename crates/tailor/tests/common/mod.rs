//! Helpers shared by the integration tests: real `tailor node` processes on loopback.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::{Duration, Instant};
use tailor_store::cluster::{plan_and_start, spawn_node, wait_listening, ClusterOptions, Lifetime};
use tailor_store::config::NodeConfig;

/// A cluster of node processes that dies with the test.
pub struct TestCluster {
    pub dir: tempfile::TempDir,
    pub cfgs: Vec<NodeConfig>,
    children: Vec<Option<Child>>,
}

pub fn exe() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_tailor"))
}

impl TestCluster {
    /// Start `opts.nodes` nodes, letting `tweak` adjust each config first.
    pub fn start(opts: ClusterOptions, tweak: impl Fn(&mut NodeConfig)) -> TestCluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let (cfgs, children) = plan_and_start(&exe(), &opts, dir.path(), Duration::from_secs(30), |c| {
            c.heartbeat_ms = 50;
            c.request_timeout_ms = 500;
            tweak(c);
        })
        .unwrap_or_else(|e| panic!("cluster did not start: {e} (logs under {})", dir.path().display()));
        TestCluster { dir, cfgs, children: children.into_iter().map(Some).collect() }
    }

    pub fn wait_up(&self, i: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        assert!(wait_listening(self.cfgs[i].client_listen(), deadline), "node {i} did not start: {}", self.log(i));
        assert!(wait_listening(self.cfgs[i].peer_listen(), deadline), "node {i} internode did not start");
    }

    pub fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("node{i}/node.log"))).unwrap_or_default()
    }

    pub fn conn(&self, i: usize) -> redis::Connection {
        let url = format!("redis://{}/", self.cfgs[i].client_addr);
        let client = redis::Client::open(url).expect("client");
        client.get_connection_with_timeout(Duration::from_secs(10)).expect("connect")
    }

    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.children[i].take() {
            let _ = c.kill(); // SIGKILL
            let _ = c.wait();
        }
    }

    /// Send `sig` to node `i`'s process.
    pub fn signal(&self, i: usize, sig: i32) {
        if let Some(c) = &self.children[i] {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(c.id() as i32, sig) };
        }
    }

    pub fn restart(&mut self, i: usize) {
        let child = spawn_node(&exe(), &self.cfgs[i], self.dir.path(), 0, Lifetime::WithParent).expect("respawn node");
        self.children[i] = Some(child);
        self.wait_up(i);
    }

    /// Restart node `i` on its config with `env` added to its environment (libfaketime's
    /// `LD_PRELOAD` and `FAKETIME`, say).
    pub fn restart_with_env(&mut self, i: usize, env: &[(&str, &str)]) {
        let home = self.dir.path().join(format!("node{i}"));
        let log = std::fs::OpenOptions::new().create(true).append(true).open(home.join("node.log")).expect("node.log");
        let child = std::process::Command::new(exe())
            .arg("node")
            .arg("--config")
            .arg(home.join("node.toml"))
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().expect("node.log"))
            .stderr(log)
            .spawn()
            .expect("respawn node");
        self.children[i] = Some(child);
        self.wait_up(i);
    }

    /// Node `i`'s exit code once its process has exited on its own (`None` while it runs).
    pub fn exit_code(&mut self, i: usize) -> Option<i32> {
        let status = self.children[i].as_mut()?.try_wait().ok()??;
        status.code()
    }

    /// Node `i`'s process id.
    pub fn pid(&self, i: usize) -> u32 {
        self.children[i].as_ref().expect("node running").id()
    }

    /// Node `i`'s resident memory in MB (VmRSS from /proc).
    pub fn rss_mb(&self, i: usize) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid(i))).expect("proc status");
        let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().split(' ').next());
        kb.and_then(|v| v.parse::<f64>().ok()).expect("VmRSS") / 1024.0
    }

    /// The node's Prometheus text.
    pub fn metrics(&self, i: usize) -> String {
        let addr = self.cfgs[i].metrics_addr.expect("metrics addr");
        let mut s = TcpStream::connect(addr).expect("metrics connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    /// Sum of a metric's samples whose line contains every `needle`.
    pub fn metric(&self, i: usize, name: &str, needles: &[&str]) -> f64 {
        self.metrics(i)
            .lines()
            .filter(|l| l.starts_with(name) && needles.iter().all(|n| l.contains(n)))
            .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
            .sum()
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        for i in 0..self.children.len() {
            self.signal(i, libc::SIGCONT);
        }
        for i in 0..self.children.len() {
            self.kill(i);
        }
    }
}

/// Poll `f` until it returns true or `secs` pass.
pub fn eventually(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A value of `len` bytes that depends on `seed`.
pub fn value(len: usize, seed: u64) -> Vec<u8> {
    (0..len).map(|i| ((i as u64).wrapping_mul(31).wrapping_add(seed * 7) % 251) as u8).collect()
}

/// Whether a request failed only because a replica's answer missed the node's request timeout:
/// on a machine the tests share with other jobs, a healthy peer can be that slow, and a test
/// that is not about timeouts sends the request again.
pub fn timed_out(e: &redis::RedisError) -> bool {
    e.to_string().contains("timed out")
}

pub fn set(con: &mut redis::Connection, k: &str, v: &[u8]) -> redis::RedisResult<()> {
    redis::cmd("SET").arg(k).arg(v).query(con)
}

pub fn get(con: &mut redis::Connection, k: &str) -> redis::RedisResult<Option<Vec<u8>>> {
    redis::cmd("GET").arg(k).query(con)
}

/// Send one internode message to the peer port of the node configured by `cfg`, signed with
/// its cluster secret, and read its one reply frame.
pub fn internode(cfg: &NodeConfig, msg: &tailor_store::internode::Message) -> tailor_store::internode::Message {
    let seal = tailor_store::internode::Seal::new(cfg.cluster_secret.as_deref());
    let mut s = TcpStream::connect(cfg.peer_listen()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&seal.encode(msg)).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).unwrap();
    seal.decode(&body).unwrap()
}

/// What node `i`'s own replica holds for `key` (an internode read: no selector, no other node).
pub fn replica_value(cl: &TestCluster, i: usize, key: &str) -> Option<Vec<u8>> {
    let read = tailor_store::internode::Message::Read {
        id: 1,
        key: key.as_bytes().to_vec(),
        tags: Default::default(),
        age: 0,
    };
    match internode(&cl.cfgs[i], &read) {
        tailor_store::internode::Message::ReadReply { value, .. } => value,
        other => panic!("node {i} answered a read with {other:?}"),
    }
}

/// Spawn `cmd` (a `tailor ... cluster up` of one node) with stdout piped and return it once it
/// has printed its node's address; its stdout stays open, so it can go on writing.
pub fn cluster_up_started(mut cmd: std::process::Command) -> Child {
    use std::io::BufRead;
    let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().expect("start tailor cluster up");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout is piped"));
    let mut address = String::new();
    out.read_line(&mut address).expect("read cluster up's output");
    assert!(!address.trim().is_empty(), "cluster up printed no address");
    child.stdout = Some(out.into_inner());
    child
}

/// libfaketime's library, if this machine has it (Debian: `libfaketime`).
pub fn libfaketime() -> Option<&'static str> {
    [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists())
}

/// Restart node `i` with its wall clock `skew` off through libfaketime's library `lib`
/// (libfaketime's syntax: "+30s", "-30s", "+0.2s"); its monotonic clock stays true.
pub fn skew_node(cl: &mut TestCluster, i: usize, lib: &str, skew: &str) {
    cl.kill(i);
    let env =
        [("LD_PRELOAD", lib), ("FAKETIME", skew), ("FAKETIME_DONT_FAKE_MONOTONIC", "1"), ("FAKETIME_NO_CACHE", "1")];
    cl.restart_with_env(i, &env);
}
