//! The coordinator path: a driver of tailor-core's [`CoordinatorCore`], which decides everything
//! about a request (replica choice, parking, retries, shadows, quorums, tags, freshness, size
//! hints). This module owns only what an engine owns: the clock, the tasks, the values on their
//! way, and one wake-up timer; copies reach replicas through a [`Transport`] (the network in a
//! node, scripted replicas under a virtual clock in tests).
//!
//! One job per file: this one holds the coordinator's state, its parts and what it reports;
//! `requests.rs` a client's reads and writes entering the core; `flow.rs` carrying out the
//! core's actions, settling answers and the wake-up timer; `flight.rs` a request in flight;
//! `probes.rs` the selector's probes (Prequal); `repairs.rs` the read repairs and hints a
//! request leaves behind.
//!
//! Choices:
//! - One lock holds the core and the values of the requests in flight; it is never held across
//!   an await. Every core call is followed by carrying out its actions under that lock: replies
//!   and failures go to the waiting client, sends become exchanges, started once the lock is
//!   released ([`Coordinator::unlock_and_send`]).
//! - An exchange runs on the caller's thread as far as it goes: a local replica that starts the
//!   copy at once answers before it returns, and the answer is settled right there, so such a
//!   read costs no task, no thread hand-off and no wake-up (perf: the spawned task and its
//!   wake-ups were a fifth of a node's CPU under GET load). Only an exchange that must wait (a
//!   peer, a queued copy) becomes a task.
//! - The failure detector's verdicts reach the core before each event (`set_up` per member: a
//!   cluster has a handful of nodes, and the verdict is then never stale by more than a call).
//! - A read at ONE is handed to the core without the key's up replicas whose recovery level
//!   (restarted, their peers' hints for them not yet replayed: `recovery.rs`) is above the
//!   lowest among its up replicas ([`Coordinator::readable_at_one`]): which replicas may
//!   answer alone is the engine's knowledge, like liveness; the core still chooses among them.
//! - The clock is tokio's (the real monotonic clock in a node; a paused, virtual one in tests),
//!   and so is the wake-up timer: it fires on tokio's 1 ms timer ticks, so a parked read is
//!   offered again up to 1 ms after the time the core asked for.
//! - A read at ONE answers with the value of the replica whose answer completed it (the chosen
//!   one, or its hedge when speculative retry sent one and that answered first); at QUORUM or
//!   ALL with the newest version among the answers received when the core says enough answered.
//! - The wake-up task sleeps until the core's next wake-up time (a selector's `retry_at` or
//!   timer, or a parked read's timeout) and is woken early when that time moves earlier.
//! - A client waits at most its request's park timeout plus one timeout per replica: the core
//!   always resolves a request (every exchange times out, parked reads expire), so hitting
//!   this outer bound means a bug, reported as `Busy`.

mod flight;
mod flow;
mod probes;
mod repairs;
mod requests;

use crate::emulation::Emulation;
use crate::hints::Hints;
use crate::hlc::Hlc;
use crate::metrics::Metrics;
use crate::storage::Versioned;
use crate::transport::Transport;
use flight::{InFlight, Trailing};
use flow::wake_up_task;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tailor_core::coordinator::{CoordinatorCore, Failure};
use tailor_core::model::{Consistency, NodeId, RequestId, SizeHint, Tags};
use tailor_core::ring::Ring;
use tailor_core::time::Nanos;
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;

/// Why a client request failed at the coordinator.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum CoordError {
    /// The coordinator core gave up on the request (its [`Failure`] says why and words the
    /// message); `last` is the last copy's failure, when one failed, for the operator.
    #[error("{failure}{}", last_failure(.last))]
    Core {
        /// Why the core gave up.
        failure: Failure,
        /// The last copy's failure ("" when none failed).
        last: String,
    },
    /// This node's clock is too far from its peers' to issue a write version.
    #[error("{0}")]
    Skewed(#[from] crate::hlc::Skewed),
    /// This node started and has not yet compared its clock with a peer's.
    #[error("this node has not yet compared its clock with a peer's (it just started): try again")]
    ClockUnchecked,
}

impl CoordError {
    /// The core's failure, with the last copy's failure when too few replicas answered.
    fn from_failure(failure: Failure, last: String) -> CoordError {
        let last = match failure {
            Failure::NotEnough { .. } if last.is_empty() => {
                "no copy failed: the key's other replicas are down".to_string()
            }
            Failure::NotEnough { .. } => last,
            Failure::NoReplica | Failure::Busy => String::new(),
        };
        CoordError::Core { failure, last }
    }

    /// A request the coordinator could not settle in time: the client may try again.
    pub(crate) fn busy() -> CoordError {
        CoordError::Core { failure: Failure::Busy, last: String::new() }
    }
}

/// ` (last)` after the core's message, or nothing.
fn last_failure(last: &str) -> String {
    if last.is_empty() {
        String::new()
    } else {
        format!(" ({last})")
    }
}

/// What the client of a request waits for.
type Done = oneshot::Sender<Result<Versioned, CoordError>>;

/// The core and the requests it handles, under one lock.
struct Inner {
    core: CoordinatorCore,
    in_flight: HashMap<RequestId, InFlight>,
    /// Answered reads at ONE with copies still out.
    trailing: HashMap<RequestId, Trailing>,
    /// The wake-up time the timer task sleeps towards.
    wake_at: Option<Nanos>,
    /// Exchanges the core asked for, started once the lock is released; each flagged whether
    /// its job may run on the caller's thread ([`Transport::runs_here`]).
    outbox: Vec<(bool, Exchanging)>,
}

/// One copy's exchange and its settling.
type Exchanging = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// One node's coordinator.
pub struct Coordinator {
    clock: Instant,
    ring: Ring,
    inner: Mutex<Inner>,
    wake: Arc<Notify>,
    transport: Arc<dyn Transport>,
    ids: Arc<AtomicU64>,
    timeout: Duration,
    hlc: Arc<Hlc>,
    metrics: Arc<Metrics>,
    hints: Option<Arc<Hints>>,
    emulation: Option<Arc<Emulation>>,
}

/// Everything a coordinator is built from.
pub struct CoordinatorParts {
    /// The node's monotonic clock origin (shared with its replica; a test's virtual start).
    pub clock: Instant,
    /// The token ring.
    pub ring: Ring,
    /// The coordinator core (selector, size oracle, consistency levels, park limits).
    pub core: CoordinatorCore,
    /// Where copies go.
    pub transport: Arc<dyn Transport>,
    /// Request id source shared with heartbeats.
    pub ids: Arc<AtomicU64>,
    /// Timeout of one replica request (the transport enforces it; the coordinator bounds a
    /// client's wait with it).
    pub timeout: Duration,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// The node's clock for write versions (shared with its replica side, which admits them).
    pub hlc: Arc<Hlc>,
    /// Where writes that missed a replica are kept (`None`: no hinted handoff).
    pub hints: Option<Arc<Hints>>,
    /// The node's emulation knobs, read for a slow coordinator's delay (`None`: never slow).
    pub emulation: Option<Arc<Emulation>>,
}

impl Coordinator {
    /// Build from its parts and start the wake-up task.
    pub fn start(p: CoordinatorParts) -> Arc<Coordinator> {
        let c = Arc::new(Coordinator {
            clock: p.clock,
            ring: p.ring,
            inner: Mutex::new(Inner {
                core: p.core,
                in_flight: HashMap::new(),
                trailing: HashMap::new(),
                wake_at: None,
                outbox: Vec::new(),
            }),
            wake: Arc::new(Notify::new()),
            transport: p.transport,
            ids: p.ids,
            timeout: p.timeout,
            hlc: p.hlc,
            hints: p.hints,
            metrics: p.metrics,
            emulation: p.emulation,
        });
        tokio::spawn(wake_up_task(Arc::downgrade(&c), c.wake.clone()));
        c
    }

    fn now(&self) -> Nanos {
        self.clock.elapsed().as_nanos() as Nanos
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Set the read or write consistency level at runtime.
    pub fn set_consistency(&self, write: bool, c: Consistency) {
        let mut inner = self.lock();
        let (r, w) = inner.core.consistency();
        let (r, w) = if write { (r, c) } else { (c, w) };
        inner.core.set_consistency(r, w);
    }

    /// The current (read, write) consistency levels.
    pub fn consistency(&self) -> (Consistency, Consistency) {
        self.lock().core.consistency()
    }

    /// Whether `node` is up as far as this coordinator knows (itself always is).
    pub fn is_up(&self, node: NodeId) -> bool {
        (node as usize) < self.transport.members() && self.transport.is_up(node)
    }

    /// Requests this coordinator holds: (client requests awaiting a result or their last copies,
    /// requests the core has in flight or parked, reads parked). All three are 0 once a quiet node settled.
    pub fn pending(&self) -> (usize, usize, usize) {
        let inner = self.lock();
        (inner.in_flight.len() + inner.trailing.len(), inner.core.in_flight(), inner.core.parked())
    }

    /// The tags of a copy of `key` that goes around scheduling (a repair, a hint replay; `size`:
    /// the value's, if known): the core's (`CoordinatorCore::side_tags`).
    pub fn side_tags(&self, key: &[u8], size: Option<u64>) -> Tags {
        self.lock().core.side_tags(crate::key_hash(key), size)
    }

    /// The size hint this coordinator's oracle gives for `key` (admin command `size_class`).
    pub fn size_hint(&self, key: &[u8]) -> SizeHint {
        self.lock().core.hint(crate::key_hash(key))
    }

    /// The generation of the size oracle's answers (`None` unless it is Héron's Bloom oracle).
    pub fn oracle_generation(&self) -> Option<u32> {
        self.lock().core.oracle().generation()
    }

    /// Reads hedged (speculative retry) so far.
    pub fn hedges(&self) -> u64 {
        self.metrics.hedges.load(Ordering::Relaxed)
    }

    /// Prequal probes sent and answered so far.
    pub fn probes_replied(&self) -> u64 {
        self.metrics.probes_replied.load(Ordering::Relaxed)
    }

    /// Replicas written back by read repair so far.
    pub fn read_repairs(&self) -> u64 {
        self.metrics.read_repairs.load(Ordering::Relaxed)
    }

    /// The replicas of `key`, in ring order (the first is its primary).
    pub fn replicas_of(&self, key: &[u8]) -> Vec<NodeId> {
        self.ring.replicas(crate::key_hash(key)).to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Durability, EmulationConfig};
    use crate::emulation::Emulation;
    use crate::metrics::ReadOutcome;
    use crate::replica::Replica;
    use crate::replica::{Outcome, Work};
    use crate::storage::Storage;
    use crate::transport::Network;
    use tailor_core::coordinator::CoordinatorConfig;
    use tailor_core::coordinator::Send;
    use tailor_core::facts::Feedback;
    use tailor_core::facts::Response;
    use tailor_core::model::RequestView;
    use tailor_core::oracle::size::SeenSizes;
    use tailor_core::selector::{Decision, ReplicaSelector, SelectorConfig, World};
    use tailor_core::time::MS;

    /// Says wait (retry in 1 ms) for its first `waits` decisions, then sends to the first
    /// replica; counts events.
    struct Scripted {
        waits: usize,
        sent: Arc<AtomicU64>,
        responses: Arc<AtomicU64>,
    }

    impl ReplicaSelector for Scripted {
        fn select(&mut self, now: Nanos, _req: &RequestView, replicas: &[NodeId], _w: &dyn World) -> Decision {
            if self.waits > 0 {
                self.waits -= 1;
                Decision::Wait { retry_at: Some(now + MS) }
            } else {
                Decision::to(replicas[0])
            }
        }
        fn on_sent(&mut self, _now: Nanos, _req: &RequestView, _replica: NodeId) {
            self.sent.fetch_add(1, Ordering::Relaxed);
        }
        fn on_response(&mut self, _now: Nanos, resp: &Response) {
            assert!(resp.fresh, "local feedback is always fresh here");
            self.responses.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn single(
        waits: usize,
        park_capacity: usize,
    ) -> (tempfile::TempDir, Arc<Coordinator>, Arc<AtomicU64>, Arc<AtomicU64>) {
        let dir = tempfile::tempdir().unwrap();
        let storage = Arc::new(Storage::open(dir.path(), Durability::Buffer).unwrap());
        let metrics = Arc::new(Metrics::new(1));
        let em = Arc::new(Emulation::new(&EmulationConfig::default(), 1));
        let q = tailor_core::local::build("fcfs", &Default::default(), 1).unwrap();
        let clock = std::time::Instant::now();
        let replica = Replica::start(0, clock, q, 2, 1000, storage, em, metrics.clone(), None);
        let (sent, responses) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let selector = Box::new(Scripted { waits, sent: sent.clone(), responses: responses.clone() });
        let cfg = CoordinatorConfig {
            id: 0,
            read_consistency: Consistency::One,
            write_consistency: Consistency::All,
            read_repair: 0.0,
            park_capacity,
            park_timeout: Some(5_000 * MS),
            seed: 1,
        };
        let core = CoordinatorCore::new(cfg, selector, Box::new(SeenSizes::new(16, 1000, None)));
        let c = Coordinator::start(CoordinatorParts {
            clock: Instant::from_std(clock),
            ring: Ring::new(1, 1, 1).unwrap(),
            core,
            transport: Arc::new(Network {
                id: 0,
                replica,
                peers: vec![None],
                ids: Arc::new(AtomicU64::new(1)),
                timeout: Duration::from_secs(5),
                metrics: metrics.clone(),
                recovery: Arc::new(crate::recovery::Recovery::off()),
                copies: None,
            }),
            ids: Arc::new(AtomicU64::new(1)),
            timeout: Duration::from_secs(5),
            metrics,
            hlc: Arc::new(Hlc::new(0, Duration::from_millis(500))),
            hints: None,
            emulation: None,
        });
        (dir, c, sent, responses)
    }

    #[tokio::test]
    async fn a_parked_read_is_re_offered_at_its_retry_time_and_served() {
        let (_d, c, sent, responses) = single(3, 8);
        c.write(b"k", Some(b"v".to_vec()), None).await.unwrap();
        let v = c.read(b"k", None).await.unwrap();
        assert_eq!(v.value.as_deref(), Some(&b"v"[..]));
        assert_eq!(c.metrics.parked.load(Ordering::Relaxed), 1);
        assert_eq!(sent.load(Ordering::Relaxed), 1, "on_sent once, by the wake-up");
        assert_eq!(responses.load(Ordering::Relaxed), 1);
        assert_eq!(c.metrics.selections[0].load(Ordering::Relaxed), 1);
        assert_eq!(c.size_hint(b"k").bytes, Some(1), "the oracle saw the value");
        assert_eq!(c.metrics.decisions(ReadOutcome::Parked), 1, "the read counts as parked, once");
        assert_eq!(c.metrics.decisions(ReadOutcome::Sent), 0);
        c.read(b"k", None).await.unwrap();
        assert_eq!(c.metrics.decisions(ReadOutcome::Sent), 1, "the selector's waits are used up: sent at once");
    }

    #[tokio::test]
    async fn a_full_park_queue_refuses_reads() {
        let (_d, c, _, _) = single(usize::MAX, 1);
        let first = {
            let c = c.clone();
            tokio::spawn(async move { c.read(b"k", None).await })
        };
        tokio::time::timeout(Duration::from_secs(5), async {
            while c.metrics.parked.load(Ordering::Relaxed) == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .unwrap();
        assert_eq!(c.read(b"k", None).await.unwrap_err(), CoordError::busy());
        assert_eq!(c.metrics.park_rejected.load(Ordering::Relaxed), 1);
        assert_eq!(c.metrics.decisions(ReadOutcome::Refused), 1, "refused before any copy left");
        first.abort();
    }

    /// Three replicas of every key; node 2 missed the write (it answers nil, the others the
    /// value) and may be recovering or down; reads counted per replica. A read's facts carry
    /// the replica's `utilization` (f64 bits) and, 10 ms of replica clock per read, its count.
    #[derive(Default)]
    struct Three {
        recovering: [std::sync::atomic::AtomicU8; 3],
        down: [std::sync::atomic::AtomicBool; 3],
        reads: [AtomicU64; 3],
        utilization: [AtomicU64; 3],
        /// The latency each answers probes with, ns (0: it answers none).
        probe_latency: [AtomicU64; 3],
    }

    impl Transport for Three {
        fn members(&self) -> usize {
            3
        }

        fn is_up(&self, node: NodeId) -> bool {
            !self.down[node as usize].load(Ordering::Relaxed)
        }

        fn recovering(&self, node: NodeId) -> u8 {
            self.recovering[node as usize].load(Ordering::Relaxed)
        }

        fn exchange(&self, node: NodeId, work: Work, _: Send) -> crate::transport::Exchange<'_> {
            let (outcome, feedback) = match work {
                Work::Read { .. } => {
                    let n = self.reads[node as usize].fetch_add(1, Ordering::Relaxed) + 1;
                    let missed = node == 2;
                    let utilization = f64::from_bits(self.utilization[node as usize].load(Ordering::Relaxed));
                    let fb = Feedback {
                        from: node,
                        timestamp: n * 10 * MS,
                        completed: n,
                        utilization,
                        ..Feedback::default()
                    };
                    (Outcome::Read(Versioned { version: !missed as u64, value: (!missed).then(|| b"v".to_vec()) }), fb)
                }
                Work::Write { .. } => (Outcome::Written(true), Feedback::default()),
            };
            Box::pin(async move { Ok((outcome, feedback)) })
        }

        fn probe(&self, node: NodeId) -> crate::transport::Probing<'_> {
            let latency = self.probe_latency[node as usize].load(Ordering::Relaxed);
            let reply = (latency > 0).then_some(tailor_core::facts::ProbeReply { rif: 0, latency });
            Box::pin(std::future::ready(reply))
        }
    }

    fn three(transport: Arc<Three>, selector: &str, tunables: &SelectorConfig) -> Arc<Coordinator> {
        let env = tailor_core::selector::SelectorEnv {
            coordinator: 0,
            coordinators: 3,
            servers: 3,
            replication: 3,
            workers: 2,
            seed: 1,
        };
        let selector = tailor_core::selector::build(selector, tunables, &env).unwrap();
        let cfg = CoordinatorConfig {
            id: 0,
            read_consistency: Consistency::One,
            write_consistency: Consistency::Quorum,
            read_repair: 0.0,
            park_capacity: 8,
            park_timeout: Some(5_000 * MS),
            seed: 1,
        };
        let core = CoordinatorCore::new(cfg, selector, Box::new(SeenSizes::new(16, 1000, None)));
        Coordinator::start(CoordinatorParts {
            clock: Instant::now(),
            ring: Ring::new(3, 3, 1).unwrap(),
            core,
            transport,
            ids: Arc::new(AtomicU64::new(1)),
            timeout: Duration::from_secs(5),
            metrics: Arc::new(Metrics::new(3)),
            hlc: Arc::new(Hlc::new(0, Duration::from_millis(500))),
            hints: None,
            emulation: None,
        })
    }

    #[tokio::test]
    async fn a_recovering_replica_is_read_at_one_only_when_no_caught_up_one_is_up() {
        let t = Arc::new(Three::default());
        let c = three(t.clone(), "round-robin", &SelectorConfig::default());
        let reads = |i: usize| t.reads[i].load(Ordering::Relaxed);
        let avoided = || c.metrics.reads_avoided_recovering.load(Ordering::Relaxed);
        // caught up: round-robin reads node 2 too, and gets its nil
        let nil = futures_util::future::join_all((0..6).map(|_| c.read(b"k", None))).await;
        assert!(reads(2) > 0 && nil.iter().any(|v| v.as_ref().unwrap().value.is_none()), "node 2 read");
        // recovering: never at ONE while node 0 or 1 is up
        t.recovering[2].store(2, Ordering::Relaxed);
        let before = reads(2);
        for _ in 0..30 {
            assert_eq!(c.read(b"k", None).await.unwrap().value.as_deref(), Some(&b"v"[..]));
        }
        assert_eq!((reads(2) - before, avoided()), (0, 30));
        // at QUORUM it takes part (and the newest version wins)
        let v = c.read(b"k", Some(Consistency::Quorum)).await.unwrap();
        assert_eq!((v.value.as_deref(), reads(2) - before, avoided()), (Some(&b"v"[..]), 1, 30));
        // every replica recovering: the one not known behind (node 2 is) is read
        t.recovering[0].store(1, Ordering::Relaxed);
        t.recovering[1].store(1, Ordering::Relaxed);
        for _ in 0..4 {
            assert_eq!(c.read(b"k", None).await.unwrap().value.as_deref(), Some(&b"v"[..]));
        }
        assert_eq!((reads(2) - before, avoided()), (1, 34));
        // the only replica up: read rather than none
        t.down[0].store(true, Ordering::Relaxed);
        t.down[1].store(true, Ordering::Relaxed);
        assert_eq!(c.read(b"k", None).await.unwrap().value, None);
        assert_eq!((reads(2) - before, avoided()), (2, 34), "not counted as avoided");
        // writes still reach it
        c.write(b"k", Some(b"w".to_vec()), Some(Consistency::One)).await.unwrap();
    }

    #[tokio::test]
    async fn deletes_read_as_absent_at_every_consistency() {
        let (_d, c, _, _) = single(0, 8);
        c.write(b"k", Some(b"1".to_vec()), None).await.unwrap();
        c.write(b"k", None, None).await.unwrap();
        assert_eq!(c.read(b"k", None).await.unwrap().value, None);
        c.set_consistency(false, Consistency::All);
        assert_eq!(c.read(b"k", None).await.unwrap().value, None);
        assert_eq!((c.metrics.decisions(ReadOutcome::Sent), c.metrics.decisions(ReadOutcome::Fanout)), (1, 1));
        assert_eq!(c.consistency(), (Consistency::All, Consistency::All));
    }

    /// Prequal in the store's coordinator: with every probe lost its reads are still served;
    /// once replicas answer, node 2's answers (50 times the others' latency) keep reads off it.
    #[tokio::test]
    async fn prequal_reads_follow_probe_answers_and_survive_lost_probes() {
        let t = Arc::new(Three::default());
        let c = three(t.clone(), "prequal", &SelectorConfig::default());
        let count = |a: &AtomicU64| a.load(Ordering::Relaxed);
        for _ in 0..30 {
            c.read(b"k", None).await.unwrap();
        }
        let sent = count(&c.metrics.probes_sent);
        assert!(sent >= 30, "{sent} probes for 30 reads");
        assert_eq!((count(&c.metrics.probes_lost), count(&c.metrics.probes_replied)), (sent, 0));
        for (node, ms) in [1, 1, 50].into_iter().enumerate() {
            t.probe_latency[node].store(ms * MS, Ordering::Relaxed);
        }
        let before = count(&t.reads[2]);
        for _ in 0..200 {
            c.read(b"k", None).await.unwrap();
        }
        assert!(count(&c.metrics.probes_replied) >= 200);
        let to_slow = count(&t.reads[2]) - before;
        assert!(to_slow < 10, "{to_slow} of 200 reads went to the replica whose probes say it is slow");
    }

    /// The utilization replicas report reaches `grpc-wrr` in the store's coordinator: with
    /// equal rates, a replica three times as busy gets a third of the others' reads.
    #[tokio::test]
    async fn grpc_wrr_weighs_replicas_by_the_utilization_they_report() {
        let t = Arc::new(Three::default());
        for (node, u) in [0.25, 0.25, 0.75].into_iter().enumerate() {
            t.utilization[node].store(f64::to_bits(u), Ordering::Relaxed);
        }
        let tunables = SelectorConfig {
            grpc_wrr: tailor_core::selector::grpc_wrr::GrpcWrrConfig {
                blackout_period_ms: 0.0,
                weight_update_period_ms: 100.0,
                ..Default::default()
            },
            ..SelectorConfig::default()
        };
        let c = three(t.clone(), "grpc-wrr", &tunables);
        // reports for longer than two update periods (coordinator clock) set the weights
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(350) {
            c.read(b"k", None).await.unwrap();
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let before: Vec<u64> = t.reads.iter().map(|r| r.load(Ordering::Relaxed)).collect();
        for _ in 0..700 {
            c.read(b"k", None).await.unwrap();
        }
        let reads: Vec<u64> = t.reads.iter().zip(&before).map(|(r, b)| r.load(Ordering::Relaxed) - b).collect();
        // weights 400 : 400 : 133, so 300 : 300 : 100 of 700 (a rebuild may fall in between)
        assert!(reads.iter().zip([300, 300, 100]).all(|(&r, w)| r.abs_diff(w) <= 20), "{reads:?}");
    }
}
