//! `max-stretch`: being implemented (see ALGORITHMS.md §3).

use super::fcfs::Fcfs;
use super::LocalQueue;
use crate::model::JobMeta;
use crate::time::Nanos;

/// `max-stretch` queue.
pub struct MaxStretch<T> {
    inner: Fcfs<T>,
}

impl<T> MaxStretch<T> {
    /// An empty queue.
    pub fn new() -> Self {
        MaxStretch { inner: Fcfs::new() }
    }
}

impl<T: Send> LocalQueue<T> for MaxStretch<T> {
    fn push(&mut self, now: Nanos, meta: JobMeta, payload: T) {
        self.inner.push(now, meta, payload)
    }

    fn pop(&mut self, now: Nanos) -> Option<(JobMeta, T)> {
        self.inner.pop(now)
    }

    fn len(&self) -> usize {
        self.inner.len()
    }
}
