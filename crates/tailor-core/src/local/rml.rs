//! `rml`: being implemented (see ALGORITHMS.md §3).

use super::fcfs::Fcfs;
use super::LocalQueue;
use crate::model::JobMeta;
use crate::time::Nanos;
use serde::{Deserialize, Serialize};

/// Tunables of Random Multi-Level.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RmlConfig {}

/// `rml` queue.
pub struct Rml<T> {
    inner: Fcfs<T>,
}

impl<T> Rml<T> {
    /// An empty queue.
    pub fn new(_cfg: &RmlConfig, _seed: u64) -> Self {
        Rml { inner: Fcfs::new() }
    }
}

impl<T: Send> LocalQueue<T> for Rml<T> {
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
