//! Admission and hand-out: a request enters the replica core (or is answered "busy" above
//! `max_queue`), runs inline when the core starts it at once, and otherwise waits for a worker
//! the core gives it to; the worker threads' count follows `set_workers`.

use super::{Done, Job, Replica, Work, MAX_WORKERS};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tailor_core::model::{JobMeta, NodeId, Tags};
use tailor_core::replica::Arrival;
use tailor_core::time::Nanos;
use tokio::sync::oneshot;

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
                // nothing waited before this admission, so the core can only have started it
                debug_assert_eq!(meta.id, s.next_id, "an inline start runs the job just admitted");
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
}
