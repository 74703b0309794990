//! The replica path: a driver of tailor-core's [`ReplicaCore`] (local queue, worker slots, the
//! one facts accountant). Requests enter the core; worker threads ask it for the next job when
//! a slot is free, execute it against the storage engine with the emulation knobs, and report
//! it finished, which answers the facts the reply carries. This module owns the threads, the
//! storage and the Bloom index's rebuilds; nothing here decides queue order or measures facts.
//!
//! One job per file: this one holds the replica's state and the facts it reports; admission
//! and hand-out to workers in `queue.rs`, the worker threads and their supervision in
//! `workers.rs`, a job's execution against storage in `execute.rs`, the Héron Bloom index in
//! `bloom.rs`.
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

mod bloom;
mod device;
mod execute;
mod queue;
mod workers;

use crate::emulation::Emulation;
use crate::metrics::Metrics;
use crate::size_cache::SizeCache;
use crate::storage::{Storage, Versioned};
use bloom::BloomState;
pub use queue::{Admission, Entry, Incoming};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;
use tailor_core::facts::Feedback;
use tailor_core::local::LocalQueue;
use tailor_core::model::NodeId;
use tailor_core::oracle::bloom::LargeKeyIndex;
use tailor_core::time::Nanos;
use tokio::sync::oneshot;
use workers::Health;
pub use workers::UNHEALTHY_FOR;

/// Most worker threads `TAILOR.SET workers` may ask for.
pub const MAX_WORKERS: usize = 256;

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

/// A node's replica side.
pub struct Replica {
    clock: Instant,
    /// The replica core and the ids it gives jobs; every use is under this lock.
    state: Mutex<Admission<Job>>,
    ready: Condvar,
    spawned: Mutex<usize>,
    shutdown: AtomicBool,
    storage: Arc<Storage>,
    /// Value sizes of the keys this replica read or wrote (a read's size without a lookup).
    sizes: SizeCache,
    emulation: Arc<Emulation>,
    /// The device the jobs in service share when the `shared_capacity` knob is set.
    device: device::Device,
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
            state: Mutex::new(Admission::new(id, queue, workers, large)),
            ready: Condvar::new(),
            spawned: Mutex::new(0),
            shutdown: AtomicBool::new(false),
            storage,
            sizes: SizeCache::default(),
            emulation,
            device: device::Device::default(),
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

    fn lock(&self) -> std::sync::MutexGuard<'_, Admission<Job>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Answer "busy" rather than queue more than `n` waiting requests (`max_queue`).
    pub fn set_max_queue(&self, n: usize) {
        self.lock().set_max_queue(n);
    }

    /// Make the next `n` jobs panic on their worker (test hook behind `debug_hooks`).
    pub fn inject_panics(&self, n: u64) {
        self.inject_panics.store(n, Ordering::Relaxed);
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Durability, EmulationConfig};
    use tailor_core::model::Tags;

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
