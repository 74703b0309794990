//! `fcfs`: first come, first served.

use super::LocalQueue;
use crate::model::JobMeta;
use crate::time::Nanos;
use std::collections::VecDeque;

/// Jobs an empty queue keeps room for. A burst may grow a queue far beyond it, and a ring
/// buffer cycles through all its room between two moments empty: a slow server's queue of
/// thousands streamed megabytes through the cache long after the burst, and at 5,000 servers
/// the room each queue once needed added up with the run's length. Once drained, the rest goes
/// back.
const KEPT_WHEN_EMPTY: usize = 64;

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
        if self.queue.is_empty() {
            if self.queue.capacity() > KEPT_WHEN_EMPTY {
                self.queue.shrink_to(KEPT_WHEN_EMPTY);
            }
            // starts the buffer over at its first slot, where `footprint` says a push into an
            // empty queue lands
            self.queue.clear();
        }
        self.queue.push_back((meta, payload));
    }

    fn pop(&mut self, _now: Nanos) -> Option<(JobMeta, T)> {
        self.queue.pop_front()
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    /// The front job, and the back job's slot (the next push lands just after it) or, when
    /// empty, the buffer's first slot (see `push`).
    fn footprint(&self) -> [*const u8; 2] {
        let start = self.queue.as_slices().0.as_ptr().cast();
        let at = |j: Option<&(JobMeta, T)>| j.map_or(start, |j| (j as *const (JobMeta, T)).cast());
        [at(self.queue.front()), at(self.queue.back())]
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

    #[test]
    fn a_drained_queue_gives_back_what_a_burst_took() {
        let mut q = Fcfs::new();
        for i in 0..1_000u64 {
            q.push(i, job(i, 0, 1), i);
        }
        assert!(q.queue.capacity() >= 1_000);
        while q.pop(0).is_some() {}
        q.push(0, job(1_000, 0, 1), 1_000);
        assert!(q.queue.capacity() <= 2 * KEPT_WHEN_EMPTY, "room for {}", q.queue.capacity());
        assert_eq!(q.pop(0).map(|j| j.1), Some(1_000));
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
