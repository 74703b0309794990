//! Admission and hand-out: a request enters the replica core (or is answered "busy" above
//! `max_queue`), runs inline when the core starts it at once, and otherwise waits for a worker
//! the core gives it to; the worker threads' count follows `set_workers`.
//!
//! The decisions (refuse, queue, run inline, which job a free worker runs, the facts at a
//! finish) are [`Admission`]'s, a clock-free step function over the replica core under the
//! replica's lock; the threads and the real clock only call it. So a test drives the store's
//! own decisions with a scripted clock (`tests/replica_differential.rs`).

use super::{Done, Job, Replica, Work, MAX_WORKERS};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tailor_core::facts::{Feedback, ProbeReply};
use tailor_core::local::LocalQueue;
use tailor_core::model::{JobMeta, NodeId, RequestId, Tags};
use tailor_core::replica::{Arrival, ReplicaCore};
use tailor_core::time::Nanos;
use tokio::sync::oneshot;

/// The replica's scheduling decisions and the ids it gives jobs, apart from its threads,
/// storage and clock: every call takes the time it happens at.
pub struct Admission<J> {
    pub(super) core: ReplicaCore<J>,
    next_id: RequestId,
}

/// What became of a request that reached the replica.
#[derive(Debug)]
pub enum Entry<J> {
    /// Refused by the queue cap (`max`): answered "busy" at once with these facts.
    Refused {
        /// The cap.
        max: usize,
        /// The facts at the refusal.
        feedback: Feedback,
        /// The job, handed back unqueued.
        job: J,
    },
    /// Started at once on the caller's thread.
    Inline(JobMeta, J),
    /// Queued for a worker thread.
    Queued,
}

/// What the replica knows of a request before it queues it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Incoming {
    /// The estimated processing time of its value's size.
    pub service: Nanos,
    /// Its value's size in bytes.
    pub size: u64,
    /// The coordinator's tags.
    pub tags: Tags,
    /// Its time at the coordinator before being sent.
    pub age: Nanos,
}

impl<J> Admission<J> {
    /// Replica `id`'s decisions with local policy `queue`, `workers` slots (clamped to
    /// 1..=[`MAX_WORKERS`]) and values above `large` bytes large.
    pub fn new(id: NodeId, queue: Box<dyn LocalQueue<J>>, workers: usize, large: u64) -> Self {
        // a coordinator may cancel a hedged read's losing copy while it waits, or probe the
        // replica (Prequal): its own config says whether it does, so every replica can take both
        let core = ReplicaCore::new(id, queue, workers.clamp(1, MAX_WORKERS), large)
            .with_cancellation()
            .with_probe_estimates();
        Admission { core, next_id: 0 }
    }

    /// The id the last admitted job got.
    pub fn last_id(&self) -> RequestId {
        self.next_id
    }

    /// Drop job `id` if it still waits: its estimated work if it did ([`ReplicaCore::cancel`]).
    pub fn cancel(&mut self, id: RequestId) -> Option<Nanos> {
        let before = self.core.cancelled().1;
        self.core.cancel(id).then(|| self.core.cancelled().1 - before)
    }

    /// A probe's answer at `now`: the replica core's (as in the simulator), never queued.
    pub fn probe(&self, now: Nanos) -> ProbeReply {
        self.core.probe(now)
    }

    /// Answer "busy" rather than queue more than `n` waiting requests (`max_queue`).
    pub fn set_max_queue(&mut self, n: usize) {
        assert!(n > 0, "a replica must queue at least one request");
        self.core.set_max_queue(Some(n));
    }

    /// A request arrives at `now`: refused by the queue cap, or admitted and, when `inline` may
    /// be used (no emulated sleep would block the caller) and the core starts it at once
    /// (nothing waits and a worker slot is free), started on the caller's thread; the slot counts
    /// as taken meanwhile, so the core's worker bound holds, and the core still chooses.
    pub fn enter(&mut self, now: Nanos, r: Incoming, job: J, inline: bool) -> Entry<J> {
        if !self.core.admits() {
            let max = self.core.max_queue().unwrap_or(usize::MAX);
            return Entry::Refused { max, feedback: self.core.facts(now), job };
        }
        self.next_id += 1;
        let arrival = Arrival { id: self.next_id, age: r.age, service: r.service, size: r.size, tags: r.tags };
        let inline = inline && self.core.waiting() == 0 && self.core.running() < self.core.workers();
        self.core.admit(now, arrival, job);
        if inline {
            if let Some((meta, job)) = self.core.start(now) {
                // nothing waited before this admission, so the core can only have started it
                debug_assert_eq!(meta.id, self.next_id, "an inline start runs the job just admitted");
                return Entry::Inline(meta, job);
            }
        }
        Entry::Queued
    }

    /// The job a free worker runs next at `now`, if the core starts one.
    pub fn next(&mut self, now: Nanos) -> Option<(JobMeta, J)> {
        self.core.start(now)
    }

    /// Job `id` finished at `end` after `service` of work: the facts its reply carries.
    pub fn finish(&mut self, end: Nanos, id: RequestId, service: Nanos) -> Feedback {
        self.core.finish(end, id, service)
    }

    /// The replica core (waiting and running jobs, workers, facts).
    pub fn core(&self) -> &ReplicaCore<J> {
        &self.core
    }
}

impl Replica {
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
        debug_assert!(*spawned <= MAX_WORKERS, "{} worker threads, at most {MAX_WORKERS}", *spawned);
        self.ready.notify_all();
    }

    /// Estimated processing time of a value of `size` bytes, the replica core's
    /// (`tailor_core::replica::ServiceEstimate`) with this node's model: orders the local
    /// policies and feeds `pending_work`, EFT's estimate in the store.
    pub(super) fn estimate(&self, size: u64) -> Nanos {
        self.emulation.estimate().of(size)
    }

    /// Queue `work` (with the coordinator's `tags`, after `age` at the coordinator) for
    /// coordinator `receiver` (if known); the reply arrives on the returned channel once a
    /// worker executed it.
    pub fn submit(&self, work: Work, tags: Tags, age: Nanos, receiver: Option<NodeId>) -> oneshot::Receiver<Done> {
        self.submit_tracked(work, tags, age, receiver).1
    }

    /// [`Replica::submit`], also giving the job's id for [`Replica::cancel`] (0: refused, never
    /// queued).
    pub fn submit_tracked(
        &self,
        work: Work,
        tags: Tags,
        age: Nanos,
        receiver: Option<NodeId>,
    ) -> (RequestId, oneshot::Receiver<Done>) {
        let (tx, rx) = oneshot::channel();
        let (size, key_hash) = match &work {
            Work::Read { key } => {
                let h = crate::key_hash(key);
                (self.sizes.get(h).unwrap_or_else(|| self.stored_size(key, h)), h)
            }
            Work::Write { key, value, .. } => (value.as_ref().map_or(0, |v| v.len() as u64), crate::key_hash(key)),
        };
        let incoming = Incoming { service: self.estimate(size), size, tags, age };
        let job = Job { work, size, key_hash, receiver, reply: tx };
        let now = self.now();
        let mut s = self.lock();
        let entry = s.enter(now, incoming, job, self.emulation.off());
        let id = if matches!(entry, Entry::Refused { .. }) { 0 } else { s.last_id() };
        match entry {
            Entry::Refused { max, feedback, job } => {
                drop(s);
                self.metrics.busy_refusals.fetch_add(1, Ordering::Relaxed);
                let outcome = Err(format!("replica busy: {max} requests already queued (max_queue)"));
                let _ = job.reply.send(Done { outcome, feedback });
            }
            Entry::Inline(meta, job) => {
                drop(s);
                // A job queued meanwhile found this slot taken and no worker will ask for it
                // until another request or the workers' 100 ms wait: wake one now.
                if self.run(meta, job) {
                    self.ready.notify_one();
                }
            }
            Entry::Queued => {
                drop(s);
                self.ready.notify_one();
            }
        }
        (id, rx)
    }

    /// Answer a probe now (Prequal): requests in flight and the latency estimate at that many,
    /// from the replica core, without queueing; counted in `tailor_probes_answered_total`.
    pub fn probe(&self) -> ProbeReply {
        let now = self.now();
        let reply = self.lock().probe(now);
        self.metrics.probes_answered.fetch_add(1, Ordering::Relaxed);
        reply
    }

    /// Drop job `id` if it still waits (its coordinator cancelled the copy): true if it will
    /// not run. Its reply channel closes once the queue reaches it (the local policy is not
    /// searched, see `tailor_core::replica::cancel`).
    pub fn cancel(&self, id: RequestId) -> bool {
        let Some(saved) = self.lock().cancel(id) else { return false };
        self.metrics.cancelled_copies.fetch_add(1, Ordering::Relaxed);
        self.metrics.cancel_saved_ns.fetch_add(saved, Ordering::Relaxed);
        true
    }

    /// The size of `key`'s value from storage's metadata (0 if absent), remembered.
    pub(super) fn stored_size(&self, key: &[u8], key_hash: u64) -> u64 {
        let size = self.storage.size_of(key).ok().flatten().map_or(0, |(s, _)| s);
        self.sizes.put(key_hash, size);
        size
    }

    /// The next job the core lets this worker run; `None` at shutdown.
    pub(super) fn next_job(&self) -> Option<(JobMeta, Job)> {
        let mut s = self.lock();
        loop {
            if self.shutdown.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(x) = s.next(self.now()) {
                return Some(x);
            }
            s = self
                .ready
                .wait_timeout(s, Duration::from_millis(100))
                .map(|r| r.0)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }
}
