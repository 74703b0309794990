//! The replica path: requests enter the configured local queue and `P` worker threads execute
//! them against the storage engine, applying the emulation knobs; every reply carries the
//! replica's facts.

use crate::emulation::Emulation;
use crate::metrics::Metrics;
use crate::storage::{Storage, Versioned};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tailor_core::facts::Feedback;
use tailor_core::local::LocalQueue;
use tailor_core::model::{JobMeta, NodeId, Tags};
use tailor_core::time::{Nanos, MS, US};
use tokio::sync::oneshot;

/// Window of TAP's `dq` (queue-length change).
const DQ_WINDOW: Nanos = 20 * MS;
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
        /// Value or `None`.
        value: Option<Vec<u8>>,
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
    reply: oneshot::Sender<Done>,
}

struct State {
    queue: Box<dyn LocalQueue<Job>>,
    running: u32,
    large_running: u32,
    pending_work: Nanos,
    /// (time, queue length) samples covering at least the last `DQ_WINDOW`.
    history: VecDeque<(Nanos, u32)>,
    next_id: u64,
}

/// A node's replica side.
pub struct Replica {
    id: NodeId,
    clock: Instant,
    state: Mutex<State>,
    ready: Condvar,
    completed: AtomicU64,
    workers: AtomicUsize,
    spawned: Mutex<usize>,
    large: u64,
    shutdown: AtomicBool,
    storage: Arc<Storage>,
    emulation: Arc<Emulation>,
    metrics: Arc<Metrics>,
}

impl Replica {
    /// A replica with `queue` as local policy and `workers` threads (started here).
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
    ) -> Arc<Replica> {
        let r = Arc::new(Replica {
            id,
            clock,
            state: Mutex::new(State {
                queue,
                running: 0,
                large_running: 0,
                pending_work: 0,
                history: VecDeque::new(),
                next_id: 0,
            }),
            ready: Condvar::new(),
            completed: AtomicU64::new(0),
            workers: AtomicUsize::new(0),
            spawned: Mutex::new(0),
            large,
            shutdown: AtomicBool::new(false),
            storage,
            emulation,
            metrics,
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

    /// Change the read parallelism `P` at runtime (1..=[`MAX_WORKERS`]).
    pub fn set_workers(self: &Arc<Self>, n: usize) {
        let n = n.clamp(1, MAX_WORKERS);
        self.workers.store(n, Ordering::Relaxed);
        let mut spawned = self.spawned.lock().unwrap_or_else(|p| p.into_inner());
        while *spawned < n {
            let me = self.clone();
            let idx = *spawned;
            let ok = std::thread::Builder::new().name(format!("tailor-worker-{idx}")).spawn(move || me.worker(idx));
            if ok.is_err() {
                break;
            }
            *spawned += 1;
        }
        self.ready.notify_all();
    }

    /// The current read parallelism.
    pub fn workers(&self) -> usize {
        self.workers.load(Ordering::Relaxed)
    }

    /// Requests waiting or running.
    pub fn queue_len(&self) -> u32 {
        let s = self.lock();
        s.queue.len() as u32 + s.running
    }

    /// Stop the workers (they finish the request they run).
    pub fn shutdown(&self) {
        self.shutdown.store(true, Ordering::Relaxed);
        self.ready.notify_all();
    }

    /// Estimated processing time of a value of `size` bytes: the emulated model if set, else
    /// 1 ns per byte + 20 µs (a rough local-SSD figure; only the local policies' ordering uses it).
    fn estimate(&self, size: u64) -> Nanos {
        let model = self.emulation.model_time(size);
        if model > 0 {
            model
        } else {
            size + 20 * US
        }
    }

    fn record_len(s: &mut State, now: Nanos) {
        let len = s.queue.len() as u32 + s.running;
        s.history.push_back((now, len));
        // keep one sample older than the window as its baseline
        while s.history.len() > 2 && s.history[1].0 + DQ_WINDOW <= now {
            s.history.pop_front();
        }
        if s.history.len() > 4096 {
            s.history.pop_front();
        }
    }

    fn feedback_locked(&self, s: &State, now: Nanos, service: Nanos) -> Feedback {
        let len = s.queue.len() as u32 + s.running;
        let base = s.history.iter().rev().find(|(t, _)| t + DQ_WINDOW <= now).or(s.history.front()).map_or(0, |x| x.1);
        Feedback {
            from: self.id,
            timestamp: now,
            queue_len: len,
            service_time: service,
            completed: self.completed.load(Ordering::Relaxed),
            busy: s.large_running > 0,
            dq: len as i64 - base as i64,
            pending_work: s.pending_work,
            bloom_bits: Vec::new(),
            bloom_generation: 0,
        }
    }

    /// Current facts (heartbeat replies).
    pub fn feedback(&self) -> Feedback {
        let now = self.now();
        let s = self.lock();
        self.feedback_locked(&s, now, 0)
    }

    /// Queue `work` (with the coordinator's `tags` and release time); the reply arrives on the
    /// returned channel once a worker executed it.
    pub fn submit(&self, work: Work, tags: Tags) -> oneshot::Receiver<Done> {
        let (tx, rx) = oneshot::channel();
        let size = match &work {
            Work::Read { key } => self.storage.size_of(key).ok().flatten().map_or(0, |(s, _)| s),
            Work::Write { value, .. } => value.as_ref().map_or(0, |v| v.len() as u64),
        };
        let now = self.now();
        let service = self.estimate(size).max(1);
        let mut s = self.lock();
        s.next_id += 1;
        // release = arrival here: the coordinator's clock is not comparable with ours
        let meta = JobMeta { id: s.next_id, release: now, enqueued: now, service, size, tags };
        s.pending_work += service;
        s.queue.push(now, meta, Job { work, size, reply: tx });
        Self::record_len(&mut s, now);
        drop(s);
        self.ready.notify_one();
        rx
    }

    fn worker(self: Arc<Self>, idx: usize) {
        loop {
            let mut s = self.lock();
            let (meta, job) = loop {
                if self.shutdown.load(Ordering::Relaxed) {
                    return;
                }
                if idx < self.workers.load(Ordering::Relaxed) {
                    let now = self.now();
                    if let Some(x) = s.queue.pop(now) {
                        break x;
                    }
                }
                s = self
                    .ready
                    .wait_timeout(s, Duration::from_millis(100))
                    .map(|r| r.0)
                    .unwrap_or_else(|p| p.into_inner().0);
            };
            s.running += 1;
            let large = job.size > self.large;
            if large {
                s.large_running += 1;
            }
            drop(s);
            if let Some(d) = self.emulation.stall_remaining(self.now()) {
                std::thread::sleep(d);
            }
            let start = self.now();
            let outcome = match job.work {
                Work::Read { key } => self.storage.get(&key).map(Outcome::Read),
                Work::Write { key, version, value } => {
                    self.storage.put(&key, version, value.as_deref()).map(Outcome::Written)
                }
            };
            let real = self.now().saturating_sub(start);
            let extra = self.emulation.extra_delay(start, real, job.size);
            if !extra.is_zero() {
                std::thread::sleep(extra);
            }
            let service = self.now().saturating_sub(start).max(1);
            match &outcome {
                Ok(Outcome::Read(_)) => self.metrics.reads_served.fetch_add(1, Ordering::Relaxed),
                Ok(Outcome::Written(_)) => self.metrics.writes_served.fetch_add(1, Ordering::Relaxed),
                Err(_) => 0,
            };
            self.metrics.service(service);
            self.completed.fetch_add(1, Ordering::Relaxed);
            let now = self.now();
            let mut s = self.lock();
            s.running -= 1;
            if large {
                s.large_running -= 1;
            }
            s.pending_work = s.pending_work.saturating_sub(meta.service);
            Self::record_len(&mut s, now);
            let feedback = self.feedback_locked(&s, now, service);
            drop(s);
            let _ = job.reply.send(Done { outcome: outcome.map_err(|e| e.to_string()), feedback });
        }
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
        let r = Replica::start(3, Instant::now(), q, workers, 100, storage, em, Arc::new(Metrics::new(4)));
        (dir, r)
    }

    #[test]
    fn executes_writes_then_reads_with_feedback() {
        let (_d, r) = replica("fcfs", 2);
        let w = r.submit(Work::Write { key: b"a".to_vec(), version: 1, value: Some(vec![1; 200]) }, Tags::default());
        let done = w.blocking_recv().unwrap();
        assert!(matches!(done.outcome, Ok(Outcome::Written(true))));
        assert_eq!(done.feedback.from, 3);
        assert_eq!(done.feedback.completed, 1);
        let rd = r.submit(Work::Read { key: b"a".to_vec() }, Tags::default()).blocking_recv().unwrap();
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
    fn every_local_policy_serves() {
        for local in tailor_core::local::LOCALS {
            let (_d, r) = replica(local, 1);
            let rxs: Vec<_> = (0..20u64)
                .map(|i| {
                    r.submit(
                        Work::Write { key: vec![i as u8], version: 1, value: Some(vec![0; i as usize * 10]) },
                        Tags::default(),
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
