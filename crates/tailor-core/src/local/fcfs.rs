//! `fcfs`: first come, first served.

use super::LocalQueue;
use crate::model::JobMeta;
use crate::time::Nanos;
use std::collections::VecDeque;

/// A FIFO queue.
pub struct Fcfs<T> {
    queue: VecDeque<(JobMeta, T)>,
}

impl<T> Fcfs<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Fcfs { queue: VecDeque::new() }
    }
}

impl<T> Default for Fcfs<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send> LocalQueue<T> for Fcfs<T> {
    fn push(&mut self, _now: Nanos, meta: JobMeta, payload: T) {
        self.queue.push_back((meta, payload));
    }

    fn pop(&mut self, _now: Nanos) -> Option<(JobMeta, T)> {
        self.queue.pop_front()
    }

    fn len(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::job;
    use super::*;

    #[test]
    fn serves_in_arrival_order() {
        let mut q = Fcfs::new();
        q.push(0, job(1, 0, 50), 'a');
        q.push(1, job(2, 1, 1), 'b');
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop(2).map(|j| j.1), Some('a'));
        assert_eq!(q.pop(2).map(|j| j.1), Some('b'));
        assert!(q.pop(3).is_none() && q.is_empty());
    }
}
