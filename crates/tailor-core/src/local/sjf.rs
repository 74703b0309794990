//! `sjf`: shortest estimated processing time (`meta.service`) first, ties first come, first
//! served. A binary heap keyed on `(service, push order)` gives `O(log N)` push and pop; the
//! push order rather than `meta.enqueued` breaks ties so that jobs pushed in the same instant
//! still leave in the order they came.

use super::LocalQueue;
use crate::model::JobMeta;
use crate::time::Nanos;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// A heap entry ordered by `(service, seq)` only; the payload takes no part in the order.
struct Entry<T> {
    service: Nanos,
    seq: u64,
    meta: JobMeta,
    payload: T,
}

impl<T> Entry<T> {
    fn key(&self) -> (Nanos, u64) {
        (self.service, self.seq)
    }
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// Shortest-job-first queue.
pub struct Sjf<T> {
    heap: BinaryHeap<Reverse<Entry<T>>>,
    next_seq: u64,
}

impl<T> Sjf<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Sjf { heap: BinaryHeap::new(), next_seq: 0 }
    }
}

impl<T> Default for Sjf<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send> LocalQueue<T> for Sjf<T> {
    fn push(&mut self, _now: Nanos, meta: JobMeta, payload: T) {
        let before = self.heap.len();
        self.heap.push(Reverse(Entry { service: meta.service, seq: self.next_seq, meta, payload }));
        self.next_seq += 1;
        debug_assert!(self.heap.len() == before + 1 && self.heap.len() as u64 <= self.next_seq, "one more job, seqs unique");
    }

    fn pop(&mut self, _now: Nanos) -> Option<(JobMeta, T)> {
        let popped = self.heap.pop().map(|Reverse(e)| e);
        // the shortest left first: nothing still waiting is shorter (or as short and older)
        debug_assert!(
            popped.as_ref().zip(self.heap.peek()).is_none_or(|(e, Reverse(next))| e.key() < next.key()),
            "a shorter job was left waiting"
        );
        popped.map(|e| (e.meta, e.payload))
    }

    fn len(&self) -> usize {
        self.heap.len()
    }
}


/// `sjf`: shortest job first.
pub const REGISTRATION: super::LocalRegistration = super::LocalRegistration { name: "sjf", source: "shortest job first" };

/// Build a `sjf` queue.
pub fn build<T: Send + 'static>(_cfg: &super::LocalConfig, _seed: u64) -> Box<dyn LocalQueue<T>> {
    Box::new(Sjf::new())
}

#[cfg(test)]
mod tests {
    use super::super::testkit::job;
    use super::*;

    #[test]
    fn shortest_first_ties_fifo() {
        let mut q = Sjf::new();
        q.push(0, job(1, 0, 30), 'a');
        q.push(1, job(2, 1, 10), 'b');
        q.push(2, job(3, 2, 20), 'c');
        q.push(3, job(4, 3, 10), 'd');
        q.push(3, job(5, 3, 10), 'e');
        assert_eq!(q.len(), 5);
        let order: Vec<char> = std::iter::from_fn(|| q.pop(10).map(|j| j.1)).collect();
        assert_eq!(order, vec!['b', 'd', 'e', 'c', 'a']);
    }

    #[test]
    fn interleaved_pushes_and_pops() {
        let mut q = Sjf::new();
        q.push(0, job(1, 0, 50), 1);
        q.push(0, job(2, 0, 5), 2);
        assert_eq!(q.pop(1).map(|j| j.0.id), Some(2));
        q.push(2, job(3, 2, 50), 3); // ties with job 1, which came first
        q.push(2, job(4, 2, 49), 4);
        assert_eq!(q.pop(3).map(|j| j.0.id), Some(4));
        assert_eq!(q.pop(3).map(|j| j.0.id), Some(1));
        assert_eq!(q.pop(3).map(|j| j.0.id), Some(3));
        assert!(q.pop(4).is_none());
    }
}
