//! Deterministic simulation of the store's own coordinator path: five real `Coordinator`s (the
//! code a node runs, with its wake-up task, client waits and quorum handling) on one tokio
//! runtime with a paused clock, talking through a simulated network that delays and loses
//! messages, to replicas run by tailor-core's replica core; half of them hedge late reads
//! (speculative retry); one node crashes and the others'
//! failure detectors learn it later. Prequal's probes cross the same network. Every selector runs over FCFS replicas, and every local
//! policy once behind one selector. A run is a function of its seed; a failure prints the
//! seed, and `TAILOR_DST_SEED=<seed> cargo test --release -p tailor-store --test dst` replays it.
//!
//! Invariants: every client request at a live coordinator ends (a reply or a failure) within the
//! bound the core guarantees (park timeout plus a timeout per replica, before the coordinator's
//! outer safety net); a read returns only a value some client wrote; once quiet, no live
//! coordinator holds a request, an in-flight copy or a parked read.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tailor_core::coordinator::speculation::{SpeculationConfig, SpeculativeRetry};
use tailor_core::coordinator::{CoordinatorConfig, CoordinatorCore, Send};
use tailor_core::facts::{Feedback, ProbeReply};
use tailor_core::local::LOCALS;
use tailor_core::oracle::bloom::BloomConfig;
use tailor_core::oracle::size::{self, Knowledge, OracleKind};
use tailor_core::replica::{Arrival, ReplicaCore};
use tailor_core::ring::{hash_key, Ring};
use tailor_core::selector::{self, SelectorConfig, SelectorEnv, SELECTORS};
use tailor_core::time::{Nanos, MS, US};
use tailor_core::{Consistency, NodeId};
use tailor_store::coordinator::{CoordError, Coordinator, CoordinatorParts};
use tailor_store::hlc::Hlc;
use tailor_store::metrics::Metrics;
use tailor_store::replica::{Outcome, Work};
use tailor_store::storage::Versioned;
use tailor_store::transport::{CopyError, Exchange, Exchanged, Probing, Transport};
use tokio::sync::oneshot;
use tokio::time::{sleep, Instant};

const NODES: usize = 5;
const TIMEOUT: Duration = Duration::from_millis(40);
const LOSS: f64 = 0.02;
const DETECT: Nanos = 30 * MS;
const HEARTBEAT: Duration = Duration::from_millis(10);

/// A copy waiting at or running on a simulated replica.
struct Job {
    work: Work,
    reply: oneshot::Sender<(Outcome, Feedback)>,
}

/// One node's replica side: the replica core and the node's data.
struct Replica {
    core: ReplicaCore<Job>,
    data: HashMap<Vec<u8>, Versioned>,
    next_id: u64,
}

/// Everything the simulated nodes share: the network's dice, the replicas, the crash.
struct World {
    origin: Instant,
    rng: SmallRng,
    replicas: Vec<Replica>,
    crash: (NodeId, Nanos),
}

type Shared = Arc<Mutex<World>>;

fn now(origin: Instant) -> Nanos {
    (Instant::now() - origin).as_nanos() as Nanos
}

impl World {
    fn crashed(&self, node: NodeId) -> bool {
        node == self.crash.0 && now(self.origin) >= self.crash.1
    }

    /// One message's fate: lost, or delivered after a delay (50 µs to 3 ms).
    fn hop(&mut self) -> Option<Duration> {
        if self.rng.random::<f64>() < LOSS {
            return None;
        }
        Some(Duration::from_micros(self.rng.random_range(50..3_000)))
    }
}

/// Queue `work` at `node`'s replica and start what its workers can take.
fn submit(world: &Shared, node: NodeId, work: Work, s: &Send) -> oneshot::Receiver<(Outcome, Feedback)> {
    let (reply, rx) = oneshot::channel();
    let mut w = world.lock().unwrap();
    let t = now(w.origin);
    let r = &mut w.replicas[node as usize];
    r.next_id += 1;
    let size = match &work {
        Work::Write { value, .. } => value.as_ref().map_or(0, |v| v.len() as u64),
        Work::Read { key } => r.data.get(key).and_then(|v| v.value.as_ref()).map_or(0, |v| v.len() as u64),
    };
    let service = 200 * US + size * 50 + (hash_key(r.next_id ^ node as u64) % 800) * US;
    let arrival = Arrival { id: r.next_id, age: s.age, service, size, tags: s.tags };
    r.core.admit(t, arrival, Job { work, reply });
    drop(w);
    start_jobs(world, node);
    rx
}

/// Start every job a free worker of `node` can take; each finishes after its service time.
fn start_jobs(world: &Shared, node: NodeId) {
    let mut w = world.lock().unwrap();
    let t = now(w.origin);
    while let Some((meta, job)) = w.replicas[node as usize].core.start(t) {
        let world = world.clone();
        tokio::spawn(async move {
            sleep(Duration::from_nanos(meta.service)).await;
            finish(&world, node, meta.id, meta.service, job);
        });
    }
}

/// A job's work is done: apply it, answer with the facts (a crashed node answers nothing).
fn finish(world: &Shared, node: NodeId, id: u64, service: Nanos, job: Job) {
    let mut w = world.lock().unwrap();
    if w.crashed(node) {
        return;
    }
    let t = now(w.origin);
    let r = &mut w.replicas[node as usize];
    let outcome = match job.work {
        Work::Read { key } => Outcome::Read(r.data.get(&key).cloned().unwrap_or_default()),
        Work::Write { key, version, value } => {
            let current = r.data.entry(key).or_default();
            let newer = version > current.version;
            if newer {
                *current = Versioned { version, value: value.map(Arc::unwrap_or_clone) };
            }
            Outcome::Written(newer)
        }
    };
    let feedback = r.core.finish(t, id, service);
    let _ = job.reply.send((outcome, feedback));
    drop(w);
    start_jobs(world, node);
}

/// One node's view of the simulated network.
struct SimNet {
    me: NodeId,
    world: Shared,
}

impl Transport for SimNet {
    fn members(&self) -> usize {
        NODES
    }

    fn is_up(&self, node: NodeId) -> bool {
        let w = self.world.lock().unwrap();
        node == self.me || node != w.crash.0 || now(w.origin) < w.crash.1 + DETECT
    }

    fn exchange(&self, node: NodeId, work: Work, s: Send) -> Exchange<'_> {
        let (there, back) = {
            let mut w = self.world.lock().unwrap();
            (w.hop(), w.hop())
        };
        Box::pin(async move {
            // a lost message or a crashed end never answers: the copy times out like a peer call
            let copy = async {
                match self.deliver(node, there, back, work, &s).await {
                    Some(answer) => Ok(answer),
                    None => std::future::pending::<Exchanged>().await,
                }
            };
            tokio::time::timeout(TIMEOUT, copy)
                .await
                .unwrap_or_else(|_| Err(CopyError::unreachable(format!("node {node} timed out"))))
        })
    }

    /// A Prequal probe crosses the same lossy network and reads the replica core's answer there
    /// (requests in flight, latency estimate); a lost one or a crashed end never answers.
    fn probe(&self, node: NodeId) -> Probing<'_> {
        let (there, back) = {
            let mut w = self.world.lock().unwrap();
            (w.hop(), w.hop())
        };
        Box::pin(async move {
            // as a copy: a lost probe or a crashed end never answers, and the probe times out
            let trip = async {
                match self.probe_trip(node, there, back).await {
                    Some(reply) => reply,
                    None => std::future::pending().await,
                }
            };
            tokio::time::timeout(TIMEOUT, trip).await.ok()
        })
    }
}

impl SimNet {
    /// The copy's trip: there, queued and served at `node`, and back; `None` if it is lost.
    async fn deliver(
        &self,
        node: NodeId,
        there: Option<Duration>,
        back: Option<Duration>,
        work: Work,
        s: &Send,
    ) -> Option<(Outcome, Feedback)> {
        sleep(there?).await;
        let down = {
            let w = self.world.lock().unwrap();
            w.crashed(node) || w.crashed(self.me)
        };
        if down {
            return None;
        }
        let answer = submit(&self.world, node, work, s).await.ok()?;
        sleep(back?).await;
        Some(answer)
    }

    /// The probe's trip: there, answered at once by `node`'s replica core, and back; `None` if
    /// it is lost.
    async fn probe_trip(&self, node: NodeId, there: Option<Duration>, back: Option<Duration>) -> Option<ProbeReply> {
        sleep(there?).await;
        let reply = {
            let w = self.world.lock().unwrap();
            if w.crashed(node) || w.crashed(self.me) {
                return None;
            }
            w.replicas[node as usize].core.probe(now(w.origin))
        };
        sleep(back?).await;
        Some(reply)
    }
}

/// One request's end: (node, request number, replied, virtual time in µs).
type RequestEnd = (NodeId, u32, bool, u64);

/// What a run did, compared between two runs of one seed.
#[derive(Debug, Default, PartialEq)]
struct Report {
    replied: u64,
    failed: u64,
    /// Reads hedged by the even-numbered nodes.
    hedges: u64,
    /// Prequal probes answered (0 for other selectors).
    probes: u64,
    /// Every request's end, per node in issue order.
    outcomes: Vec<RequestEnd>,
}

fn coordinator(selector: &str, me: NodeId, seed: u64, origin: Instant, world: &Shared) -> Arc<Coordinator> {
    let env = SelectorEnv { coordinator: me, coordinators: NODES, servers: NODES, replication: 3, workers: 2, seed };
    let sel = selector::build(selector, &SelectorConfig::default(), &env).unwrap();
    let knowledge = Knowledge::Live { servers: NODES };
    let oracle = size::build(OracleKind::Exact, 32 * 1024, None, &BloomConfig::default(), knowledge).unwrap();
    let cfg = CoordinatorConfig {
        id: me,
        read_consistency: Consistency::One,
        write_consistency: Consistency::Quorum,
        read_repair: 0.1,
        park_capacity: 64,
        park_timeout: Some(TIMEOUT.as_nanos() as Nanos),
        seed: seed ^ me as u64,
    };
    Coordinator::start(CoordinatorParts {
        clock: origin,
        ring: Ring::new(NODES, 3, 8).unwrap(),
        core: hedging(me, CoordinatorCore::new(cfg, sel, oracle)),
        transport: Arc::new(SimNet { me, world: world.clone() }),
        ids: Arc::new(AtomicU64::new(1)),
        timeout: TIMEOUT,
        metrics: Arc::new(Metrics::new(NODES)),
        hlc: Arc::new(Hlc::new(me, Duration::from_millis(500))),
        hints: None,
        emulation: None,
    })
}

/// Even-numbered nodes hedge reads slower than their recent p95 (speculative retry), so both
/// paths meet the lossy network and the crash.
fn hedging(me: NodeId, core: CoordinatorCore) -> CoordinatorCore {
    if me % 2 == 1 {
        return core;
    }
    core.with_speculation(SpeculationConfig { rule: SpeculativeRetry::Percentile(95.0), budget: 0.5 })
}

/// The written values so far, and the violations found.
#[derive(Default)]
struct Checks {
    written: HashSet<Vec<u8>>,
    violations: Vec<String>,
}

/// One node's client: `requests` reads and writes at random gaps, each awaited in its own task.
async fn client(
    node: NodeId,
    c: Arc<Coordinator>,
    world: Shared,
    checks: Arc<Mutex<Checks>>,
    requests: u32,
) -> Vec<RequestEnd> {
    let origin = world.lock().unwrap().origin;
    let mut rng = SmallRng::seed_from_u64(hash_key(node as u64 ^ world.lock().unwrap().rng.random::<u64>()));
    let mut tasks = Vec::new();
    for n in 0..requests {
        sleep(Duration::from_micros(rng.random_range(300..3_000))).await;
        if world.lock().unwrap().crashed(node) {
            break;
        }
        let key = format!("k{}", rng.random_range(0..40)).into_bytes();
        let value = (rng.random::<f64>() < 0.2).then(|| format!("{node}-{n}").into_bytes());
        let (c, checks) = (c.clone(), checks.clone());
        tasks.push(tokio::spawn(async move {
            let started = now(origin);
            let ok = match value {
                Some(v) => {
                    checks.lock().unwrap().written.insert(v.clone());
                    c.write(&key, Some(v), None).await.is_ok()
                }
                None => read_checked(&c, &key, &checks).await,
            };
            let took = now(origin) - started;
            // the core ends every request by park timeout + one timeout per replica
            if took > 4 * TIMEOUT.as_nanos() as Nanos + MS {
                checks.lock().unwrap().violations.push(format!("node {node} request {n} took {took} ns"));
            }
            (node, n, ok, now(origin) / US)
        }));
    }
    let mut outcomes = Vec::with_capacity(tasks.len());
    for t in tasks {
        outcomes.push(t.await.unwrap());
    }
    outcomes
}

async fn read_checked(c: &Arc<Coordinator>, key: &[u8], checks: &Mutex<Checks>) -> bool {
    match c.read(key, None).await {
        Ok(v) => {
            if let Some(value) = v.value {
                if !checks.lock().unwrap().written.contains(&value) {
                    checks.lock().unwrap().violations.push(format!("read {value:?}, which nobody wrote"));
                }
            }
            true
        }
        Err(CoordError::Core { .. } | CoordError::Skewed(_) | CoordError::ClockUnchecked) => false,
    }
}

/// Heartbeats: every node's facts reach every other live node's coordinator, lossy and late.
async fn heartbeats(world: Shared, nodes: Vec<Arc<Coordinator>>) {
    loop {
        sleep(HEARTBEAT).await;
        for from in 0..NODES as NodeId {
            for (to, c) in nodes.iter().enumerate() {
                let mut w = world.lock().unwrap();
                if to as NodeId == from || w.crashed(from) || w.crashed(to as NodeId) {
                    continue;
                }
                let Some(delay) = w.hop() else { continue };
                let facts = w.replicas[from as usize].core.facts(now(w.origin));
                let c = c.clone();
                tokio::spawn(async move {
                    sleep(delay).await;
                    c.facts(from, facts);
                });
            }
        }
    }
}

fn run(selector: &str, seed: u64, requests: u32) -> Result<Report, String> {
    run_with_local(selector, "fcfs", seed, requests)
}

/// A run whose replicas queue their work with local policy `local`.
fn run_with_local(selector: &str, local: &str, seed: u64, requests: u32) -> Result<Report, String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    rt.block_on(async {
        let origin = Instant::now();
        let mut rng = SmallRng::seed_from_u64(seed);
        let crash = (rng.random_range(0..NODES) as NodeId, rng.random_range(50..400) * MS);
        let replicas = (0..NODES)
            .map(|n| {
                let q = tailor_core::local::build(local, &Default::default(), seed).unwrap();
                Replica { core: ReplicaCore::new(n as NodeId, q, 2, 32 * 1024), data: HashMap::new(), next_id: 0 }
            })
            .collect();
        let world = Arc::new(Mutex::new(World { origin, rng, replicas, crash }));
        let nodes: Vec<_> = (0..NODES as NodeId).map(|n| coordinator(selector, n, seed, origin, &world)).collect();
        let beats = tokio::spawn(heartbeats(world.clone(), nodes.clone()));
        let checks = Arc::new(Mutex::new(Checks::default()));
        let clients: Vec<_> = (0..NODES as NodeId)
            .map(|n| tokio::spawn(client(n, nodes[n as usize].clone(), world.clone(), checks.clone(), requests)))
            .collect();
        let mut outcomes = Vec::new();
        for c in clients {
            outcomes.extend(c.await.unwrap());
        }
        sleep(Duration::from_secs(2)).await;
        beats.abort();
        let mut violations = std::mem::take(&mut checks.lock().unwrap().violations);
        for (n, c) in nodes.iter().enumerate() {
            if n as NodeId != crash.0 && c.pending() != (0, 0, 0) {
                violations.push(format!("node {n} is not quiet: {:?}", c.pending()));
            }
        }
        if let Some(v) = violations.first() {
            return Err(format!("seed {seed}, {selector}+{local}: {v} ({} violations)", violations.len()));
        }
        let replied = outcomes.iter().filter(|o| o.2).count() as u64;
        let hedges = nodes.iter().map(|c| c.hedges()).sum();
        let probes = nodes.iter().map(|c| c.probes_replied()).sum();
        Ok(Report { replied, failed: outcomes.len() as u64 - replied, hedges, probes, outcomes })
    })
}

fn seeds() -> Vec<u64> {
    match std::env::var("TAILOR_DST_SEED") {
        Ok(s) => vec![s.parse().expect("TAILOR_DST_SEED is a number")],
        Err(_) => vec![1, 2],
    }
}

#[test]
fn the_stores_coordinator_keeps_the_invariants_under_loss_delay_and_a_crash() {
    let mut hedges = 0;
    for selector in SELECTORS {
        for seed in seeds() {
            let report = run(selector, seed, 300).unwrap_or_else(|v| panic!("{v}\nreplay: TAILOR_DST_SEED={seed}"));
            assert!(report.replied > report.failed * 3, "seed {seed}, {selector}: most requests succeed: {report:?}");
            assert!(report.failed > 0, "seed {seed}, {selector}: the faults were exercised");
            hedges += report.hedges;
            if selector::probing(selector) {
                assert!(report.probes > 0, "seed {seed}, {selector}: probes crossed the network and came back");
            }
        }
    }
    assert!(hedges > 0, "speculative retry was exercised");
}

/// Every local policy queues the replicas' work under the same faults (a new policy is in
/// `LOCALS` once registered, so it is adopted here without editing this test); the selector
/// varies with the policy so that each pairing of a few differs.
#[test]
fn every_local_policy_keeps_the_invariants_under_loss_delay_and_a_crash() {
    let selectors: Vec<&str> = SELECTORS.to_vec();
    for (i, local) in LOCALS.iter().enumerate() {
        for seed in seeds() {
            let selector = selectors[(i + seed as usize) % selectors.len()];
            let report = run_with_local(selector, local, seed, 300)
                .unwrap_or_else(|v| panic!("{v}\nreplay: TAILOR_DST_SEED={seed}"));
            assert!(report.replied > report.failed * 3, "seed {seed}, {selector}+{local}: most succeed: {report:?}");
            assert!(report.failed > 0, "seed {seed}, {selector}+{local}: the faults were exercised");
        }
    }
}

#[test]
fn a_run_is_a_function_of_its_seed() {
    for selector in ["c3", "heron", "lor", "prequal"] {
        assert_eq!(run(selector, 7, 150), run(selector, 7, 150), "{selector}");
    }
    assert_ne!(run("c3", 7, 150), run("c3", 8, 150));
    for local in LOCALS {
        assert_eq!(run_with_local("lor", local, 7, 150), run_with_local("lor", local, 7, 150), "{local}");
    }
}
#[test]
#[ignore = "prints one line per selector; run with --ignored --nocapture"]
fn print_reports() {
    for selector in SELECTORS {
        let r = run(selector, 1, 300).unwrap();
        eprintln!(
            "{selector}: replied {} failed {} hedges {} last {:?}",
            r.replied,
            r.failed,
            r.hedges,
            r.outcomes.iter().map(|o| o.3).max()
        );
    }
}
