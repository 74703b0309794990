//! The clients of the Jepsen-style suite and the history they record: each operation with its
//! invocation and completion times (`Instant`), its key, the value written or read, and its
//! outcome (acknowledged, failed with the server's error, or unknown: the connection broke or
//! timed out, so the write may or may not have been applied, and may still be).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A connection's consistency level, chosen with `SELECT` (docs/redis.md: 1 ONE, 2 QUORUM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    One,
    Quorum,
}

impl Level {
    fn db(self) -> u8 {
        match self {
            Level::One => 1,
            Level::Quorum => 2,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Write,
    Read,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Acknowledged (a write) or answered (a read).
    Ok,
    /// The node answered with an error: a write's version, if it had one, was issued before
    /// `complete`, and it may still show up (a copy stored or hinted).
    Fail,
    /// No answer (timeout, connection closed): the write may be applied at any time, even later.
    Unknown,
}

/// One operation of the history.
#[derive(Clone, Debug)]
pub struct Op {
    pub client: usize,
    pub node: usize,
    pub kind: Kind,
    pub level: Level,
    pub key: String,
    /// The value written (unique per write), or the value read (`None`: absent).
    pub value: Option<String>,
    pub invoke: Instant,
    pub complete: Instant,
    pub outcome: Outcome,
}

impl Op {
    pub fn latency(&self) -> Duration {
        self.complete - self.invoke
    }
}

/// What the clients do.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Keys `k0 .. k{keys-1}`: few, so that writes and reads of one key interleave.
    pub keys: usize,
    /// One thread per entry, each with its connection's level.
    pub clients: Vec<Level>,
    /// Fraction of operations that are writes.
    pub writes: f64,
    /// Pause between two operations of a client (keeps a 2-core machine responsive).
    pub think: Duration,
    /// Client-side read/write timeout: past it an operation is unknown.
    pub timeout: Duration,
}

impl Default for Workload {
    fn default() -> Workload {
        Workload {
            keys: 16,
            clients: vec![Level::Quorum, Level::Quorum, Level::Quorum, Level::One],
            writes: 0.5,
            think: Duration::from_millis(2),
            timeout: Duration::from_secs(3),
        }
    }
}

/// Running totals the progress lines print while the clients run.
#[derive(Default)]
pub struct Counters {
    pub acked: AtomicU64,
    pub reads: AtomicU64,
    pub failed: AtomicU64,
    pub unknown: AtomicU64,
}

impl Counters {
    pub fn line(&self) -> String {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "{} writes acknowledged, {} reads answered, {} failed, {} unknown",
            n(&self.acked),
            n(&self.reads),
            n(&self.failed),
            n(&self.unknown)
        )
    }
}

/// The client threads, recording until `stop`.
pub struct Clients {
    pub stop: Arc<AtomicBool>,
    pub counters: Arc<Counters>,
    threads: Vec<JoinHandle<Vec<Op>>>,
}

impl Clients {
    pub fn start(addrs: Vec<SocketAddr>, load: &Workload, seed: u64) -> Clients {
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let threads = (0..load.clients.len())
            .map(|c| {
                let (addrs, load, stop, counters) = (addrs.clone(), load.clone(), stop.clone(), counters.clone());
                std::thread::spawn(move || client(c, &addrs, &load, seed, &stop, &counters))
            })
            .collect();
        Clients { stop, counters, threads }
    }

    /// Stop the clients and return the whole history, ordered by invocation.
    pub fn finish(self) -> Vec<Op> {
        self.stop.store(true, Ordering::Relaxed);
        let mut ops: Vec<Op> = self.threads.into_iter().flat_map(|t| t.join().expect("client thread")).collect();
        ops.sort_by_key(|o| o.invoke);
        ops
    }
}

fn connect(addr: SocketAddr, level: Level, timeout: Duration) -> Option<redis::Connection> {
    let client = redis::Client::open(format!("redis://{addr}/")).ok()?;
    let mut con = client.get_connection_with_timeout(Duration::from_secs(1)).ok()?;
    con.set_read_timeout(Some(timeout)).ok()?;
    con.set_write_timeout(Some(timeout)).ok()?;
    redis::cmd("SELECT").arg(level.db()).query::<()>(&mut con).ok()?;
    Some(con)
}

/// An error the server answered with, or a broken exchange (whose write may be applied).
fn outcome_of(e: &redis::RedisError) -> Outcome {
    if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() {
        Outcome::Unknown
    } else {
        Outcome::Fail
    }
}

/// Client `c`: each operation through a node picked at random (so that every node, a
/// restarted, skewed or cut-off one too, keeps coordinating), one connection per node, dropped
/// after an exchange without an answer.
fn client(c: usize, addrs: &[SocketAddr], load: &Workload, seed: u64, stop: &AtomicBool, n: &Counters) -> Vec<Op> {
    let level = load.clients[c];
    let mut rng = SmallRng::seed_from_u64(seed * 1000 + c as u64);
    let mut cons: Vec<Option<redis::Connection>> = addrs.iter().map(|_| None).collect();
    let (mut ops, mut seq) = (Vec::new(), 0u64);
    while !stop.load(Ordering::Relaxed) {
        let node = rng.random_range(0..addrs.len());
        if cons[node].is_none() {
            cons[node] = connect(addrs[node], level, load.timeout);
        }
        let Some(live) = cons[node].as_mut() else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        let key = format!("k{}", rng.random_range(0..load.keys));
        let kind = if rng.random::<f64>() < load.writes { Kind::Write } else { Kind::Read };
        let invoke = Instant::now();
        let (value, outcome) = match kind {
            Kind::Write => {
                seq += 1;
                let v = format!("w{c}-{seq}");
                let r = redis::cmd("SET").arg(&key).arg(&v).query::<()>(live);
                (Some(v), r.err().map_or(Outcome::Ok, |e| outcome_of(&e)))
            }
            Kind::Read => match redis::cmd("GET").arg(&key).query::<Option<String>>(live) {
                Ok(v) => (v, Outcome::Ok),
                Err(e) => (None, outcome_of(&e)),
            },
        };
        let complete = Instant::now();
        let counter = match (kind, outcome) {
            (Kind::Write, Outcome::Ok) => &n.acked,
            (Kind::Read, Outcome::Ok) => &n.reads,
            (_, Outcome::Fail) => &n.failed,
            (_, Outcome::Unknown) => &n.unknown,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        ops.push(Op { client: c, node, kind, level, key, value, invoke, complete, outcome });
        if outcome == Outcome::Unknown {
            // the reply may still come: this connection's next answer would be this one's
            cons[node] = None;
        }
        std::thread::sleep(load.think);
    }
    ops
}
