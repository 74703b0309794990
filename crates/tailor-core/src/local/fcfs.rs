//! `fcfs`: first come, first served.

use super::{fifo, LocalQueue};
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
        let before = self.queue.len();
        fifo::push_back(&mut self.queue, (meta, payload));
        debug_assert!(self.queue.len() == before + 1 && self.queue.back().map(|j| j.0) == Some(meta), "pushed at the back");
    }

    fn pop(&mut self, _now: Nanos) -> Option<(JobMeta, T)> {
        let front = self.queue.front().map(|j| j.0);
        let job = self.queue.pop_front();
        debug_assert_eq!(job.as_ref().map(|j| j.0), front, "the job pushed first leaves first");
        job
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    /// The front job, and the back job's slot (the next push lands just after it) or, when
    /// empty, the buffer's first slot (see `fifo::push_back`).
    fn footprint(&self) -> [*const u8; 2] {
        let start = self.queue.as_slices().0.as_ptr().cast();
        let at = |j: Option<&(JobMeta, T)>| j.map_or(start, |j| (j as *const (JobMeta, T)).cast());
        [at(self.queue.front()), at(self.queue.back())]
    }
}


/// `fcfs`: first come, first served.
pub const REGISTRATION: super::LocalRegistration = super::LocalRegistration { name: "fcfs", source: "first come, first served" };

/// Build a `fcfs` queue.
pub fn build<T: Send + 'static>(_cfg: &super::LocalConfig, _seed: u64) -> Box<dyn LocalQueue<T>> {
    Box::new(Fcfs::new())
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

    #[test]
    fn the_footprint_is_where_the_next_pop_reads_and_the_next_push_lands() {
        let mut q = Fcfs::new();
        let addr = |j: &(JobMeta, char)| (j as *const (JobMeta, char)).cast::<u8>();
        for (at, c) in ['a', 'b', 'c'].into_iter().enumerate() {
            q.push(at as Nanos, job(at as u64, 0, 1), c);
        }
        q.pop(3);
        assert_eq!(q.footprint(), [addr(&q.queue[0]), addr(&q.queue[1])], "front and back");
        q.pop(4);
        q.pop(4);
        let empty = q.footprint();
        assert_eq!(empty[0], empty[1]);
        q.push(5, job(9, 5, 1), 'd');
        assert_eq!(empty[0], addr(&q.queue[0]), "an empty queue's next push lands where it said");
    }
}
