//! Cancelling a waiting job (hedge cancellation: Dean and Barroso's tied requests drop the copy
//! still queued once the other one runs or answered). A job already running finishes: its work
//! is spent, and stopping a worker midway is an engine matter no store here supports.
//!
//! Choice: a local policy's queue is not searched. A cancelled job stays in it, marked, and is
//! skipped when the policy pops it; the accountant's counts and sums leave it at once, so facts
//! and probes stop counting it. A policy that keeps state per popped job (fair queueing's
//! virtual times) charges it as if it ran: the copy was admitted under that policy's rule.

use crate::model::RequestId;
use crate::time::Nanos;
use rustc_hash::{FxHashMap, FxHashSet};

/// A waiting job's estimate and whether its value is large, as the accountant counted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Withdrawn {
    /// Estimated processing time.
    pub service: Nanos,
    /// Whether the value is large.
    pub large: bool,
}

/// The waiting jobs a replica can still cancel, and those it cancelled that its queue holds.
#[derive(Debug, Default)]
pub struct Cancels {
    waiting: FxHashMap<RequestId, Withdrawn>,
    dropped: FxHashSet<RequestId>,
    cancelled: u64,
    saved: Nanos,
}

impl Cancels {
    /// Job `id` was queued.
    pub fn queued(&mut self, id: RequestId, job: Withdrawn) {
        let fresh = self.waiting.insert(id, job).is_none();
        debug_assert!(fresh && !self.dropped.contains(&id), "job {id} queued twice");
    }

    /// The queue popped job `id`: false if it was cancelled (the engine skips it).
    pub fn popped(&mut self, id: RequestId) -> bool {
        if self.dropped.remove(&id) {
            return false;
        }
        let known = self.waiting.remove(&id).is_some();
        debug_assert!(known, "job {id} popped without being queued");
        true
    }

    /// Cancel job `id` if it still waits: what the accountant must take out.
    pub fn cancel(&mut self, id: RequestId) -> Option<Withdrawn> {
        let job = self.waiting.remove(&id)?;
        self.dropped.insert(id);
        self.cancelled += 1;
        self.saved += job.service;
        Some(job)
    }

    /// Cancelled jobs the queue still holds.
    pub fn zombies(&self) -> usize {
        self.dropped.len()
    }

    /// Jobs cancelled so far, and their estimated work.
    pub fn totals(&self) -> (u64, Nanos) {
        (self.cancelled, self.saved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_waiting_job_is_cancelled_once_and_then_skipped() {
        let mut c = Cancels::default();
        let job = Withdrawn { service: 7, large: false };
        c.queued(1, job);
        c.queued(2, job);
        assert!(c.popped(1), "a live job runs");
        assert_eq!(c.cancel(1), None, "a running job is not cancelled");
        assert_eq!(c.cancel(2), Some(job));
        assert_eq!((c.cancel(2), c.zombies()), (None, 1), "cancelled once");
        assert!(!c.popped(2), "a cancelled job is skipped");
        assert_eq!((c.zombies(), c.totals()), (0, (1, 7)));
    }
}
