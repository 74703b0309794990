//! `sjf`: being implemented (see ALGORITHMS.md §3).

use super::fcfs::Fcfs;
use super::LocalQueue;
use crate::model::JobMeta;
use crate::time::Nanos;

/// `sjf` queue.
pub struct Sjf<T> {
    inner: Fcfs<T>,
}

impl<T> Sjf<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Sjf { inner: Fcfs::new() }
    }
}

impl<T: Send> LocalQueue<T> for Sjf<T> {
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
