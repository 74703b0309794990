//! `max-wait-over-size`: Hector's MWF queue. When a worker frees at time `t`, run the request
//! with the largest `(t - enqueued) / size`, a stretch-like rule that needs only the value size
//! in bytes, not a processing-time model.
//!
//! Choices: the wait counts from `meta.enqueued` (arrival at this replica, on the replica's own
//! clock, so no cross-node skew); a size of 0 bytes counts as 1; ties go to the job enqueued
//! first. As with `max-stretch`, the order depends on `t`, so `pop` scans (`O(N)`), comparing
//! ratios exactly in integers.

use super::max_stretch::{positive, signed_wait, RatioQueue};
use super::LocalQueue;
use crate::model::JobMeta;
use crate::time::Nanos;

/// Max-wait-over-size queue: pops the job with the largest `(t - meta.enqueued) / meta.size`.
pub struct MaxWaitOverSize<T> {
    pool: RatioQueue<T>,
}

impl<T> MaxWaitOverSize<T> {
    /// An empty queue.
    pub fn new() -> Self {
        MaxWaitOverSize { pool: RatioQueue::new() }
    }
}

impl<T> Default for MaxWaitOverSize<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send> LocalQueue<T> for MaxWaitOverSize<T> {
    fn push(&mut self, _now: Nanos, meta: JobMeta, payload: T) {
        self.pool.push(meta, payload);
    }

    fn pop(&mut self, now: Nanos) -> Option<(JobMeta, T)> {
        self.pool.pop_max(|m| (signed_wait(now, m.enqueued), positive(m.size)))
    }

    fn len(&self) -> usize {
        self.pool.len()
    }
}


/// `max-wait-over-size`: largest wait over size first.
pub const REGISTRATION: super::LocalRegistration = super::LocalRegistration { name: "max-wait-over-size", source: "largest wait over size first" };

/// Build a `max-wait-over-size` queue.
pub fn build<T: Send + 'static>(_cfg: &super::LocalConfig, _seed: u64) -> Box<dyn LocalQueue<T>> {
    Box::new(MaxWaitOverSize::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Tags;

    /// A job enqueued at `enqueued` for a value of `size` bytes (service is irrelevant here).
    fn sized(id: u64, enqueued: Nanos, size: u64) -> JobMeta {
        JobMeta { id, release: 0, enqueued, service: 1, size, tags: Tags::default() }
    }

    #[test]
    fn largest_wait_over_size_first() {
        let mut q = MaxWaitOverSize::new();
        q.push(0, sized(1, 0, 1_000_000), 'B'); // 1 MB waiting since 0
        q.push(900, sized(2, 900, 1_000), 's'); // 1 kB waiting since 900
        q.push(990, sized(3, 990, 1_000), 't'); // 1 kB waiting since 990
                                                // t = 1000: B 1e-3, s 0.1, t 0.01 -> s, then t, then B.
        assert_eq!(q.pop(1_000).map(|j| j.1), Some('s'));
        assert_eq!(q.pop(1_000).map(|j| j.1), Some('t'));
        assert_eq!(q.pop(1_000).map(|j| j.1), Some('B'));
        assert!(q.is_empty());
    }

    #[test]
    fn large_job_wins_after_waiting_long_enough() {
        let build = || {
            let mut q = MaxWaitOverSize::new();
            q.push(0, sized(1, 0, 100), 'B'); // wait/size = t/100
            q.push(90, sized(2, 90, 10), 's'); // (t-90)/10, crosses at t = 100
            q
        };
        for (t, expected) in [(95, 'B'), (99, 'B'), (100, 'B'), (101, 's'), (500, 's')] {
            let mut q = build();
            assert_eq!(q.pop(t).map(|j| j.1), Some(expected), "t = {t}");
        }
    }

    #[test]
    fn zero_size_counts_as_one_and_ties_are_fifo() {
        let mut q = MaxWaitOverSize::new();
        q.push(0, sized(1, 0, 1), 'a');
        q.push(0, sized(2, 0, 0), 'b'); // same key as 'a' once 0 counts as 1
        q.push(0, sized(3, 0, 2), 'c');
        assert_eq!(q.pop(10).map(|j| j.1), Some('a'));
        assert_eq!(q.pop(10).map(|j| j.1), Some('b'));
        assert_eq!(q.pop(10).map(|j| j.1), Some('c'));
    }
}
