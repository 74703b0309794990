//! The replica path: a driver of tailor-core's [`ReplicaCore`] (local queue, worker slots, the
//! one facts accountant). Requests enter the core; worker threads ask it for the next job when
//! a slot is free, execute it against the storage engine with the emulation knobs, and report
//! it finished, which answers the facts the reply carries. This file owns the threads, the
//! storage and the Bloom index's rebuilds; nothing here decides queue order or measures facts.
//!
//! Supervision: a job's execution (storage, emulation: what client data reaches) runs under
//! `catch_unwind`; a panic is logged, counted (`tailor_worker_panics_total`), its job answered
//! with an error naming the panic and its worker slot freed. A panic anywhere else in a worker
//! ends that worker's loop, and a fresh loop replaces it on the same thread (logged and counted
//! alike). The replica reports itself unhealthy ([`Replica::healthy`]) while no worker thread is
//! alive, or while its last jobs, as many as it has workers, all panicked within
//! [`UNHEALTHY_FOR`]; peers then route around it.
//!
//! Queue bound: the replica core's rule (`ReplicaCore::admits`): above `max_queue` waiting
//! requests, a new one is answered "busy" at once.

use crate::emulation::Emulation;
use crate::metrics::Metrics;
use crate::size_cache::SizeCache;
use crate::storage::{Applied, Storage, Versioned};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tailor_core::facts::Feedback;
use tailor_core::local::LocalQueue;
use tailor_core::model::{JobMeta, NodeId, Tags};
use tailor_core::oracle::bloom::LargeKeyIndex;
use tailor_core::replica::{Arrival, ReplicaCore};
use tailor_core::time::Nanos;
use tokio::sync::oneshot;

/// Most worker threads `TAILOR.SET workers` may ask for.
pub const MAX_WORKERS: usize = 256;

/// How long panicking workers keep a replica unhealthy without a job succeeding since: after
/// it, the replica says healthy again so peers send it work and find out.
pub const UNHEALTHY_FOR: Duration = Duration::from_secs(10);

/// What a replica executes.
#[derive(Debug)]
pub enum Work {
    /// Read a key.
    Read {
        /// Key.
        key: Vec<u8>,
    },
    /// Write a key at a version (`None` deletes).
    Write {
        /// Key.
        key: Vec<u8>,
        /// Last-writer-wins version.
        version: u64,
        /// Value or `None`; shared with the coordinator (and its other copies), not copied.
        value: Option<Arc<Vec<u8>>>,
    },
}

/// The result of executing [`Work`].
#[derive(Debug)]
pub enum Outcome {
    /// A read's value.
    Read(Versioned),
    /// A write; false if a newer version was already stored.
    Written(bool),
}

/// What a worker sends back: the outcome (or an error text) and the facts at completion.
#[derive(Debug)]
pub struct Done {
    /// Outcome or error.
    pub outcome: Result<Outcome, String>,
    /// Facts measured when the response left.
    pub feedback: Feedback,
}

/// A queued request (opaque outside the replica).
pub struct Job {
    work: Work,
    size: u64,
    /// Hash of the key ([`crate::key_hash`]), the Bloom filter's key.
    key_hash: u64,
    /// Coordinator the reply goes to (its Bloom delta cursor), if known.
    receiver: Option<NodeId>,
    reply: oneshot::Sender<Done>,
}

/// What running a job gave: its outcome, its service time and when it ended (the replica's
/// clock), and whether its reply waits for the committer's sync.
struct Executed {
    outcome: Result<Outcome, String>,
    service: Nanos,
    end: Nanos,
    committed: bool,
}

/// The replica core and the ids it gives jobs; every use is under the replica's lock.
struct State {
    core: ReplicaCore<Job>,
    next_id: u64,
}

/// Largest generation gap a replica closes when a peer is ahead; a bigger one is treated as a
/// one-step rebuild (such a gap means a corrupt or foreign peer, not a missed rebuild).
const MAX_CATCH_UP: u32 = 1024;

/// The replica side of Héron's size oracle.
///
/// Choices:
/// - Rebuilds run in a background thread ([`Replica::start_bloom_rebuilds`]) and take the live
///   large keys from a scan of the storage engine's small metadata keyspace (no value is read),
///   so keys whose value was deleted or shrunk drop out and no extra memory tracks them. The
///   scan runs without any lock; large writes applied during it are logged and added to the new
///   filter; the Bloom lock is held only for the inserts (about 10 hash-and-set steps per key).
///   Requests never wait for it; only the filling of a reply's Bloom fields may.
/// - Generations stay aligned across the cluster: a replica that sees a peer at a newer
///   generation (in any feedback its coordinator receives) rebuilds up to it at once, and
///   restarts its own interval. A restarted node (back at generation 0) thereby rejoins the
///   current generation within a heartbeat, and a rebuild anywhere triggers one everywhere, so
///   coordinators switch generations quickly. At start the filter (generation 0) is seeded from
///   the same storage scan.
/// - Bits handed to a reply are gone from the cursor even if the reply is lost (a timeout); they
///   come back at the next rebuild. Failed requests carry no facts, so they take no bits.
struct BloomState {
    index: LargeKeyIndex,
    /// Large keys written while a rebuild scans storage (`Some` during the scan).
    during_scan: Option<Vec<u64>>,
    /// Newest generation seen at a peer; above ours means catch up now.
    target: u32,
    /// When the last rebuild finished (replica clock).
    last_rebuild: Nanos,
}

/// A node's replica side.
pub struct Replica {
    clock: Instant,
    state: Mutex<State>,
    ready: Condvar,
    spawned: Mutex<usize>,
    shutdown: AtomicBool,
    storage: Arc<Storage>,
    /// Value sizes of the keys this replica read or wrote (a read's size without a lookup).
    sizes: SizeCache,
    emulation: Arc<Emulation>,
    metrics: Arc<Metrics>,
    bloom: Option<Mutex<BloomState>>,
    bloom_cv: Condvar,
    /// Mirror of the index's generation, read without the Bloom lock on every feedback.
    generation: AtomicU32,
    /// Worker supervision and health.
    health: Health,
    /// Jobs still to panic on purpose (`TAILOR.SET debug_panic_next`, test hook).
    inject_panics: AtomicU64,
}

/// What the replica's health verdict is made of.
#[derive(Default)]
struct Health {
    /// Worker threads running their loop.
    alive: AtomicUsize,
    /// Jobs that panicked since the last one that did not.
    panics_since_success: AtomicUsize,
    /// When the last panic happened (replica clock).
    last_panic: AtomicU64,
}

impl Replica {
    /// A replica with `queue` as local policy and `workers` threads (started here); `bloom` is
    /// the Héron index to keep (`None` when coordinators use the exact oracle).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        id: NodeId,
        clock: Instant,
        queue: Box<dyn LocalQueue<Job>>,
        workers: usize,
        large: u64,
        storage: Arc<Storage>,
        emulation: Arc<Emulation>,
        metrics: Arc<Metrics>,
        bloom: Option<LargeKeyIndex>,
    ) -> Arc<Replica> {
        let r = Arc::new(Replica {
            clock,
            state: Mutex::new(State {
                core: ReplicaCore::new(id, queue, workers.clamp(1, MAX_WORKERS), large),
                next_id: 0,
            }),
            ready: Condvar::new(),
            spawned: Mutex::new(0),
            shutdown: AtomicBool::new(false),
            storage,
            sizes: SizeCache::default(),
            emulation,
            metrics,
            bloom: bloom.map(|index| Mutex::new(BloomState { index, during_scan: None, target: 0, last_rebuild: 0 })),
            bloom_cv: Condvar::new(),
            generation: AtomicU32::new(0),
            health: Health::default(),
            inject_panics: AtomicU64::new(0),
        });
        r.set_workers(workers);
        r
    }

    fn now(&self) -> Nanos {
        self.clock.elapsed().as_nanos() as Nanos
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_bloom<'a>(&self, b: &'a Mutex<BloomState>) -> std::sync::MutexGuard<'a, BloomState> {
        b.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Change the read parallelism `P` at runtime (1..=[`MAX_WORKERS`]).
    pub fn set_workers(self: &Arc<Self>, n: usize) {
        let n = n.clamp(1, MAX_WORKERS);
        self.lock().core.set_workers(n);
        let mut spawned = self.spawned.lock().unwrap_or_else(|p| p.into_inner());
        while *spawned < n {
            let me = self.clone();
            let idx = *spawned;
            // counted alive from here, so a just-started replica is healthy before its threads run
            self.health.alive.fetch_add(1, Ordering::Relaxed);
            let ok = std::thread::Builder::new().name(format!("tailor-worker-{idx}")).spawn(move || me.supervise());
            if let Err(e) = ok {
                self.health.alive.fetch_sub(1, Ordering::Relaxed);
                tracing::error!("cannot start worker thread {idx}: {e}");
                break;
            }
            *spawned += 1;
        }
        self.ready.notify_all();
    }

    /// Answer "busy" rather than queue more than `n` waiting requests (`max_queue`).
    pub fn set_max_queue(&self, n: usize) {
        assert!(n > 0, "a replica must queue at least one request");
        self.lock().core.set_max_queue(Some(n));
    }

    /// Make the next `n` jobs panic on their worker (test hook behind `debug_hooks`).
    pub fn inject_panics(&self, n: u64) {
        self.inject_panics.store(n, Ordering::Relaxed);
    }

    /// Whether this replica can run requests: its disk has not failed (`disk.rs`), some worker
    /// thread is alive, and its
    /// last jobs (as many as it has workers) did not all panic within [`UNHEALTHY_FOR`].
    /// Heartbeat answers carry it, so peers route around a replica that cannot serve.
    pub fn healthy(&self) -> bool {
        if self.storage.disk_state().failed() {
            return false;
        }
        let h = &self.health;
        let alive = h.alive.load(Ordering::Relaxed);
        if alive == 0 {
            return false;
        }
        // the usual case, asked on every local read: no panic since the last success, and the
        // core keeps at least one worker, so no clock read and no lock are needed
        let panics = h.panics_since_success.load(Ordering::Relaxed);
        if panics == 0 {
            return true;
        }
        let since = self.now().saturating_sub(h.last_panic.load(Ordering::Relaxed));
        let recent = since < UNHEALTHY_FOR.as_nanos() as Nanos;
        !(recent && panics >= self.workers().min(alive))
    }

    /// The current read parallelism.
    pub fn workers(&self) -> usize {
        self.lock().core.workers()
    }

    /// Requests waiting or running.
    pub fn queue_len(&self) -> u32 {
        let s = self.lock();
        (s.core.waiting() + s.core.running()) as u32
    }

    /// Stop the workers (they finish the request they run) and the Bloom rebuild thread.
    pub fn shutdown(&self) {
        self.shutdown.store(true, Ordering::Relaxed);
        self.ready.notify_all();
        if let Some(b) = &self.bloom {
            let _g = self.lock_bloom(b);
            self.bloom_cv.notify_all();
        }
    }

    /// Estimated processing time of a value of `size` bytes, the replica core's
    /// (`tailor_core::replica::ServiceEstimate`) with this node's model: orders the local
    /// policies and feeds `pending_work`, EFT's estimate in the store.
    fn estimate(&self, size: u64) -> Nanos {
        self.emulation.estimate().of(size)
    }

    /// Current facts without Bloom fields (metrics, tests).
    pub fn feedback(&self) -> Feedback {
        self.feedback_for(None)
    }

    /// Current facts for a message to coordinator `receiver` (heartbeat replies), with its Bloom
    /// delta when the receiver is known.
    pub fn feedback_for(&self, receiver: Option<NodeId>) -> Feedback {
        let now = self.now();
        let mut fb = self.lock().core.facts(now);
        self.fill_bloom(receiver, &mut fb);
        fb
    }

    /// Put the Bloom delta for `receiver` and the generation into `fb`.
    fn fill_bloom(&self, receiver: Option<NodeId>, fb: &mut Feedback) {
        let Some(b) = &self.bloom else { return };
        let mut g = self.lock_bloom(b);
        match receiver {
            Some(r) => g.index.fill_feedback(r, fb),
            None => fb.bloom_generation = g.index.generation(),
        }
    }

    /// An applied write stored `size` bytes under `key_hash`: remember the key if it is large.
    fn record_write(&self, key_hash: u64, size: u64) {
        let Some(b) = &self.bloom else { return };
        let mut g = self.lock_bloom(b);
        if g.index.record_write(key_hash, size) {
            if let Some(log) = g.during_scan.as_mut() {
                log.push(key_hash);
            }
        }
    }

    /// The Bloom index's generation, if this replica keeps one.
    pub fn bloom_generation(&self) -> Option<u32> {
        self.bloom.as_ref().map(|_| self.generation.load(Ordering::Relaxed))
    }

    /// Whether this replica's own filter says `key_hash` is large (`None` without an index).
    pub fn bloom_contains(&self, key_hash: u64) -> Option<bool> {
        self.bloom.as_ref().map(|b| self.lock_bloom(b).index.contains(key_hash))
    }

    /// A peer's facts showed its Bloom generation `generation`: catch up if it is ahead.
    pub fn observe_generation(&self, generation: u32) {
        let Some(b) = &self.bloom else { return };
        if generation <= self.generation.load(Ordering::Relaxed) {
            return;
        }
        let mut g = self.lock_bloom(b);
        if generation > g.target {
            g.target = generation;
            self.bloom_cv.notify_all();
        }
    }

    /// Ask the rebuild thread for a rebuild now (generation g+1).
    pub fn request_rebuild(&self) {
        let Some(b) = &self.bloom else { return };
        let mut g = self.lock_bloom(b);
        g.target = g.target.max(g.index.generation().wrapping_add(1));
        self.bloom_cv.notify_all();
    }

    /// Start the background thread that seeds the Bloom index from storage, then rebuilds it
    /// every `every` (none = only on request or to catch up with peers). No-op without an index.
    pub fn start_bloom_rebuilds(self: &Arc<Self>, every: Option<Duration>) {
        if self.bloom.is_none() {
            return;
        }
        let me = self.clone();
        let every = every.map(|d| d.as_nanos() as Nanos);
        let spawned = std::thread::Builder::new().name("tailor-bloom".into()).spawn(move || me.bloom_loop(every));
        if let Err(e) = spawned {
            tracing::warn!("cannot start the Bloom rebuild thread: {e}");
        }
    }

    fn bloom_loop(self: Arc<Self>, every: Option<Nanos>) {
        let Some(b) = &self.bloom else { return };
        self.seed_bloom(b);
        loop {
            let mut g = self.lock_bloom(b);
            loop {
                if self.shutdown.load(Ordering::Relaxed) {
                    return;
                }
                let now = self.now();
                let due = every.map(|e| g.last_rebuild.saturating_add(e));
                if g.target > g.index.generation() || due.is_some_and(|d| d <= now) {
                    break;
                }
                let wait = due.map_or(Duration::from_secs(3600), |d| Duration::from_nanos(d - now));
                g = self.bloom_cv.wait_timeout(g, wait).map(|r| r.0).unwrap_or_else(|p| p.into_inner().0);
            }
            drop(g);
            self.rebuild_bloom(b);
        }
    }

    /// Put every large key already in storage into the generation-0 filter (after a restart).
    fn seed_bloom(&self, b: &Mutex<BloomState>) {
        let threshold = self.lock_bloom(b).index.threshold();
        match self.storage.large_keys(threshold) {
            Ok(keys) => {
                let mut g = self.lock_bloom(b);
                for k in keys {
                    g.index.record_write(k, u64::MAX);
                }
                g.last_rebuild = self.now();
            }
            Err(e) => tracing::warn!("Bloom seeding skipped: {e}"),
        }
    }

    /// Rebuild the filter from a storage scan, to the target generation or g+1.
    fn rebuild_bloom(&self, b: &Mutex<BloomState>) {
        let threshold = {
            let mut g = self.lock_bloom(b);
            g.during_scan = Some(Vec::new());
            g.index.threshold()
        };
        let scanned = self.storage.large_keys(threshold);
        let mut g = self.lock_bloom(b);
        let extra = g.during_scan.take().unwrap_or_default();
        let now = self.now();
        let keys = match scanned {
            Ok(k) => k,
            Err(e) => {
                tracing::warn!("Bloom rebuild skipped: {e}");
                g.last_rebuild = now;
                g.target = g.index.generation();
                return;
            }
        };
        let gen = g.index.generation();
        let mut steps = g.target.saturating_sub(gen).max(1);
        if steps > MAX_CATCH_UP {
            tracing::warn!(gen, target = g.target, "Bloom generation gap too large; rebuilding one step");
            g.target = gen;
            steps = 1;
        }
        // skipped generations are empty: coordinators only keep the newest complete one
        for _ in 1..steps {
            g.index.rebuild(std::iter::empty());
        }
        g.index.rebuild(keys.into_iter().chain(extra));
        g.last_rebuild = now;
        self.generation.store(g.index.generation(), Ordering::Relaxed);
        tracing::debug!(generation = g.index.generation(), "Bloom filter rebuilt");
    }

    /// Queue `work` (with the coordinator's `tags`, after `age` at the coordinator) for
    /// coordinator `receiver` (if known); the reply arrives on the returned channel once a
    /// worker executed it.
    pub fn submit(&self, work: Work, tags: Tags, age: Nanos, receiver: Option<NodeId>) -> oneshot::Receiver<Done> {
        let (tx, rx) = oneshot::channel();
        let (size, key_hash) = match &work {
            Work::Read { key } => {
                let h = crate::key_hash(key);
                (self.sizes.get(h).unwrap_or_else(|| self.stored_size(key, h)), h)
            }
            Work::Write { key, value, .. } => (value.as_ref().map_or(0, |v| v.len() as u64), crate::key_hash(key)),
        };
        let now = self.now();
        let service = self.estimate(size);
        let mut s = self.lock();
        // the replica core's queue cap (`max_queue`): refused requests are answered "busy" at once
        if !s.core.admits() {
            let max = s.core.max_queue().unwrap_or(usize::MAX);
            let feedback = s.core.facts(now);
            drop(s);
            self.metrics.busy_refusals.fetch_add(1, Ordering::Relaxed);
            let outcome = Err(format!("replica busy: {max} requests already queued (max_queue)"));
            let _ = tx.send(Done { outcome, feedback });
            return rx;
        }
        s.next_id += 1;
        let arrival = Arrival { id: s.next_id, age, service, size, tags };
        // Run on the caller's thread when the core starts the job at once (nothing waits and a
        // worker slot is free): no hand-off to a worker thread and back, the reply is in the
        // channel before this returns. Only with emulation off (no emulated sleep may block the
        // caller, a runtime thread); the slot counts as taken meanwhile, so the core's worker
        // bound holds, and the core, not this shortcut, still chooses what starts.
        let inline = s.core.waiting() == 0 && s.core.running() < s.core.workers() && self.emulation.off();
        s.core.admit(now, arrival, Job { work, size, key_hash, receiver, reply: tx });
        if inline {
            if let Some((meta, job)) = s.core.start(now) {
                drop(s);
                self.run(meta, job);
                return rx;
            }
        }
        drop(s);
        self.ready.notify_one();
        rx
    }

    /// The size of `key`'s value from storage's metadata (0 if absent), remembered.
    fn stored_size(&self, key: &[u8], key_hash: u64) -> u64 {
        let size = self.storage.size_of(key).ok().flatten().map_or(0, |(s, _)| s);
        self.sizes.put(key_hash, size);
        size
    }

    /// The next job the core lets this worker run; `None` at shutdown.
    fn next_job(&self) -> Option<(JobMeta, Job)> {
        let mut s = self.lock();
        loop {
            if self.shutdown.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(x) = s.core.start(self.now()) {
                return Some(x);
            }
            s = self
                .ready
                .wait_timeout(s, Duration::from_millis(100))
                .map(|r| r.0)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// Execute one job against storage with the emulation knobs; its outcome, service time and
    /// end, and whether the reply must wait for the committer's sync ([`Applied::Committed`]).
    fn execute(&self, work: Work, key_hash: u64, size: u64) -> Executed {
        let inject = |n: u64| n.checked_sub(1);
        if self.inject_panics.fetch_update(Ordering::Relaxed, Ordering::Relaxed, inject).is_ok() {
            panic!("injected worker panic (TAILOR.SET debug_panic_next)");
        }
        if let Some(d) = self.emulation.stall_remaining(|| self.now()) {
            std::thread::sleep(d);
        }
        let start = self.now();
        let is_write = matches!(work, Work::Write { .. });
        let mut committed = false;
        let outcome = match work {
            Work::Read { key } => self.storage.get(&key).map(|v| {
                self.sizes.put(key_hash, v.value.as_ref().map_or(0, |v| v.len() as u64));
                Outcome::Read(v)
            }),
            Work::Write { key, version, value } => {
                self.storage.apply(&key, version, value.as_deref().map(Vec::as_slice)).map(|a| {
                    committed = a == Applied::Committed;
                    Outcome::Written(a != Applied::Stale)
                })
            }
        };
        if is_write && matches!(outcome, Ok(Outcome::Written(true))) {
            self.sizes.put(key_hash, size);
            // before the reply's facts are filled, so the ack carries this key's new bits
            self.record_write(key_hash, size);
        }
        let mut end = self.now();
        let extra = self.emulation.extra_delay(start, end.saturating_sub(start), size);
        if !extra.is_zero() {
            std::thread::sleep(extra);
            end = self.now();
        }
        let service = end.saturating_sub(start).max(1);
        match &outcome {
            Ok(Outcome::Read(_)) => self.metrics.reads_served.fetch_add(1, Ordering::Relaxed),
            Ok(Outcome::Written(_)) => self.metrics.writes_served.fetch_add(1, Ordering::Relaxed),
            Err(_) => 0,
        };
        self.metrics.service(service);
        Executed { outcome: outcome.map_err(|e| e.to_string()), service, end, committed }
    }

    /// A worker thread: runs the worker loop, and a fresh one whenever a panic ends it, until
    /// shutdown.
    fn supervise(self: Arc<Self>) {
        loop {
            match catch_unwind(AssertUnwindSafe(|| self.worker())) {
                Ok(()) => break,
                Err(panic) => self.panicked(&panic_text(&*panic), true),
            }
        }
        self.health.alive.fetch_sub(1, Ordering::Relaxed);
    }

    fn worker(&self) {
        while let Some((meta, job)) = self.next_job() {
            self.run(meta, job);
        }
    }

    /// Execute a job the core started, report it finished and send its reply (after the
    /// committer's sync for a `sync` write).
    fn run(&self, meta: JobMeta, job: Job) {
        let Job { work, size, key_hash, receiver, reply } = job;
        let run = catch_unwind(AssertUnwindSafe(|| self.execute(work, key_hash, size)));
        let Executed { outcome, service, end, committed } = match run {
            Ok(done) => {
                self.health.panics_since_success.store(0, Ordering::Relaxed);
                done
            }
            Err(panic) => {
                let text = panic_text(&*panic);
                self.panicked(&text, false);
                let outcome = Err(format!("the replica's worker panicked: {text}"));
                Executed { outcome, service: 1, end: self.now(), committed: false }
            }
        };
        let mut feedback = self.lock().core.finish(end, meta.id, service);
        if outcome.is_ok() {
            self.fill_bloom(receiver, &mut feedback);
        }
        if committed {
            // the ack leaves after the committer's sync; the worker serves the next job
            // meanwhile, so the sync wait is not service time
            self.storage.when_durable(move |synced| {
                let outcome = synced.and(outcome);
                let _ = reply.send(Done { outcome, feedback });
            });
        } else {
            let _ = reply.send(Done { outcome, feedback });
        }
    }

    /// Log, count and remember a worker panic: in a job (answered with an error, the worker
    /// carries on) or in the worker's loop (`restarted`: a fresh loop replaces it).
    fn panicked(&self, text: &str, restarted: bool) {
        let name = std::thread::current().name().unwrap_or("worker").to_string();
        if restarted {
            tracing::error!(worker = %name, "worker loop panicked; a fresh loop replaces it: {text}");
        } else {
            tracing::error!(worker = %name, "job panicked; answered with an error, the worker carries on: {text}");
        }
        self.metrics.worker_panics.fetch_add(1, Ordering::Relaxed);
        self.health.panics_since_success.fetch_add(1, Ordering::Relaxed);
        self.health.last_panic.store(self.now().max(1), Ordering::Relaxed);
    }
}

/// The message a panic carried.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(s), _) => s.to_string(),
        (_, Some(s)) => s.clone(),
        _ => "a panic without a message".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Durability, EmulationConfig};

    fn replica(local: &str, workers: usize) -> (tempfile::TempDir, Arc<Replica>) {
        let dir = tempfile::tempdir().unwrap();
        let storage = Arc::new(Storage::open(dir.path(), Durability::Buffer).unwrap());
        let q = tailor_core::local::build(local, &Default::default(), 1).unwrap();
        let em = Arc::new(Emulation::new(&EmulationConfig::default(), 1));
        let r = Replica::start(3, Instant::now(), q, workers, 100, storage, em, Arc::new(Metrics::new(4)), None);
        (dir, r)
    }

    fn bloom_replica() -> (tempfile::TempDir, Arc<Replica>) {
        let dir = tempfile::tempdir().unwrap();
        let storage = Arc::new(Storage::open(dir.path(), Durability::Buffer).unwrap());
        let q = tailor_core::local::build("fcfs", &Default::default(), 1).unwrap();
        let em = Arc::new(Emulation::new(&EmulationConfig::default(), 1));
        let index = LargeKeyIndex::new(&Default::default(), 100).unwrap();
        let r = Replica::start(3, Instant::now(), q, 1, 100, storage, em, Arc::new(Metrics::new(4)), Some(index));
        (dir, r)
    }

    fn write(r: &Replica, key: &[u8], version: u64, len: usize, to: Option<NodeId>) -> Done {
        let w = Work::Write { key: key.to_vec(), version, value: Some(Arc::new(vec![7; len])) };
        r.submit(w, Tags::default(), 0, to).blocking_recv().unwrap()
    }

    #[test]
    fn writes_acks_carry_bloom_deltas_per_receiver() {
        let (_d, r) = bloom_replica();
        let small = write(&r, b"s", 1, 50, Some(0));
        assert!(small.feedback.bloom_bits.is_empty(), "small values set no bits");
        let big = write(&r, b"big", 1, 500, Some(0));
        assert!(!big.feedback.bloom_bits.is_empty(), "the ack carries the large key's bits");
        assert_eq!(big.feedback.bloom_generation, 0);
        assert_eq!(r.bloom_contains(crate::key_hash(b"big")), Some(true));
        // the same bits again for another coordinator, once
        let to1 = r.feedback_for(Some(1));
        assert_eq!(to1.bloom_bits, big.feedback.bloom_bits);
        assert!(r.feedback_for(Some(1)).bloom_bits.is_empty());
        // a read reply to coordinator 0 has nothing new; an older version that loses adds nothing
        let rd = r.submit(Work::Read { key: b"big".to_vec() }, Tags::default(), 0, Some(0)).blocking_recv().unwrap();
        assert!(rd.feedback.bloom_bits.is_empty());
        write(&r, b"x", 5, 50, Some(0));
        let stale = write(&r, b"x", 3, 500, Some(0));
        assert!(matches!(stale.outcome, Ok(Outcome::Written(false))));
        assert!(stale.feedback.bloom_bits.is_empty(), "a write that lost to a newer version sets nothing");
        assert_eq!(r.bloom_contains(crate::key_hash(b"x")), Some(false));
        // a coordinator's oracle learning the deltas classes the key large
        let mut o = tailor_core::oracle::bloom::BloomSizeOracle::new(&Default::default(), 4).unwrap();
        o.apply(3, 0, &big.feedback.bloom_bits);
        assert!(o.contains(crate::key_hash(b"big")));
        assert!(!o.contains(crate::key_hash(b"s")));
        r.shutdown();
    }

    #[test]
    fn rebuilds_drop_shrunk_keys_and_catch_up_with_peers() {
        let (_d, r) = bloom_replica();
        write(&r, b"a", 1, 500, Some(0));
        write(&r, b"b", 1, 500, Some(0));
        write(&r, b"b", 2, 5, Some(0));
        assert_eq!(r.bloom_contains(crate::key_hash(b"b")), Some(true), "stays until the rebuild");
        let b = r.bloom.as_ref().unwrap();
        r.request_rebuild();
        r.rebuild_bloom(b);
        assert_eq!(r.bloom_generation(), Some(1));
        assert_eq!(r.bloom_contains(crate::key_hash(b"a")), Some(true));
        assert_eq!(r.bloom_contains(crate::key_hash(b"b")), Some(false));
        // the first message of generation 1 resends the whole filter
        let fb = r.feedback_for(Some(0));
        assert_eq!(fb.bloom_generation, 1);
        let mut expect = tailor_core::oracle::bloom::BloomFilter::from_config(&Default::default()).unwrap();
        expect.insert(crate::key_hash(b"a"));
        let mut bits = fb.bloom_bits.clone();
        bits.sort_unstable();
        assert_eq!(bits, expect.set_bits().collect::<Vec<_>>());
        // a peer at generation 4: one rebuild jumps there
        r.observe_generation(4);
        r.observe_generation(2);
        r.rebuild_bloom(b);
        assert_eq!(r.bloom_generation(), Some(4));
        assert_eq!(r.bloom_contains(crate::key_hash(b"a")), Some(true));
        r.shutdown();
    }

    #[test]
    fn a_restarted_replica_seeds_its_filter_from_storage() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Arc::new(Storage::open(dir.path(), Durability::Buffer).unwrap());
        // written before this replica existed (the node's previous life)
        storage.put(b"old-big", 1, Some(&[0; 500])).unwrap();
        storage.put(b"old-small", 1, Some(&[0; 5])).unwrap();
        let q = tailor_core::local::build("fcfs", &Default::default(), 1).unwrap();
        let em = Arc::new(Emulation::new(&EmulationConfig::default(), 1));
        let index = LargeKeyIndex::new(&Default::default(), 100).unwrap();
        let r = Replica::start(0, Instant::now(), q, 1, 100, storage, em, Arc::new(Metrics::new(1)), Some(index));
        r.seed_bloom(r.bloom.as_ref().unwrap());
        assert_eq!(r.bloom_generation(), Some(0));
        assert_eq!(r.bloom_contains(crate::key_hash(b"old-big")), Some(true));
        assert_eq!(r.bloom_contains(crate::key_hash(b"old-small")), Some(false));
        assert!(!r.feedback_for(Some(2)).bloom_bits.is_empty());
        r.shutdown();
    }

    #[test]
    fn executes_writes_then_reads_with_feedback() {
        let (_d, r) = replica("fcfs", 2);
        let w = r.submit(
            Work::Write { key: b"a".to_vec(), version: 1, value: Some(Arc::new(vec![1; 200])) },
            Tags::default(),
            0,
            None,
        );
        let done = w.blocking_recv().unwrap();
        assert!(matches!(done.outcome, Ok(Outcome::Written(true))));
        assert_eq!(done.feedback.from, 3);
        assert_eq!(done.feedback.completed, 1);
        let rd = r.submit(Work::Read { key: b"a".to_vec() }, Tags::default(), 0, None).blocking_recv().unwrap();
        match rd.outcome {
            Ok(Outcome::Read(v)) => assert_eq!(v.value.map(|v| v.len()), Some(200)),
            other => panic!("{other:?}"),
        }
        assert_eq!(rd.feedback.completed, 2);
        assert!(rd.feedback.timestamp >= done.feedback.timestamp);
        assert_eq!(rd.feedback.queue_len, 0);
        assert_eq!(rd.feedback.pending_work, 0);
        r.set_workers(5);
        assert_eq!(r.workers(), 5);
        r.shutdown();
    }

    #[test]
    fn a_panicking_job_gets_an_error_and_the_worker_goes_on() {
        let (_d, r) = replica("fcfs", 2);
        let read = |k: &[u8]| r.submit(Work::Read { key: k.to_vec() }, Tags::default(), 0, None).blocking_recv();
        assert!(r.healthy());
        r.inject_panics(1);
        let done = read(b"a").expect("a panicking job is answered, never dropped");
        assert!(done.outcome.unwrap_err().contains("worker panicked: injected worker panic"));
        assert_eq!(r.metrics.worker_panics.load(Ordering::Relaxed), 1);
        assert!(r.healthy(), "one panic of two workers");
        // every worker's slot was freed: more jobs than workers still run
        for _ in 0..5 {
            assert!(read(b"a").unwrap().outcome.is_ok());
        }
        // as many panics in a row as workers: unhealthy until a job succeeds
        r.inject_panics(2);
        assert!(read(b"a").unwrap().outcome.is_err());
        assert!(read(b"a").unwrap().outcome.is_err());
        assert!(!r.healthy());
        assert!(read(b"a").unwrap().outcome.is_ok());
        assert!(r.healthy());
        r.shutdown();
    }

    #[test]
    fn a_full_queue_answers_busy() {
        let (_d, r) = replica("fcfs", 1);
        r.set_max_queue(2);
        // a stall keeps the one worker busy while the queue fills
        r.emulation.set("stall_every_ms", "86400000").unwrap();
        r.emulation.set("stall_ms", "300").unwrap();
        let rxs: Vec<_> =
            (0..6).map(|_| r.submit(Work::Read { key: b"k".to_vec() }, Tags::default(), 0, None)).collect();
        let outcomes: Vec<_> = rxs.into_iter().map(|rx| rx.blocking_recv().unwrap().outcome).collect();
        let busy = outcomes.iter().filter(|o| o.as_ref().is_err_and(|e| e.contains("(max_queue)"))).count();
        assert!(busy >= 3, "{outcomes:?}");
        assert_eq!(busy as u64, r.metrics.busy_refusals.load(Ordering::Relaxed));
        assert!(outcomes.iter().filter(|o| o.is_ok()).count() >= 2);
        r.shutdown();
    }

    #[test]
    fn every_local_policy_serves() {
        for local in tailor_core::local::LOCALS {
            let (_d, r) = replica(local, 1);
            let rxs: Vec<_> = (0..20u64)
                .map(|i| {
                    r.submit(
                        Work::Write { key: vec![i as u8], version: 1, value: Some(Arc::new(vec![0; i as usize * 10])) },
                        Tags::default(),
                        0,
                        None,
                    )
                })
                .collect();
            for rx in rxs {
                assert!(rx.blocking_recv().unwrap().outcome.is_ok(), "{local}");
            }
            r.shutdown();
        }
    }
}
