//! What the FIFO policies (`fcfs`, each level of `rml`) share: a ring buffer that gives back
//! the room a burst took.

use std::collections::VecDeque;

/// Jobs an empty FIFO keeps room for. A burst may grow a queue far beyond it, and a ring
/// buffer cycles through all its room between two moments empty: a slow server's queue of
/// thousands streamed megabytes through the cache long after the burst, and at 5,000 servers
/// the room each queue once needed added up with the run's length. Once drained, the rest goes
/// back.
const KEPT_WHEN_EMPTY: usize = 64;

/// Push `job` at the back of `queue`. Into an empty queue, after giving back the room beyond
/// [`KEPT_WHEN_EMPTY`] and starting over at the buffer's first slot (where `fcfs`'s footprint
/// says such a push lands).
pub(super) fn push_back<J>(queue: &mut VecDeque<J>, job: J) {
    if queue.is_empty() {
        if queue.capacity() > KEPT_WHEN_EMPTY {
            queue.shrink_to(KEPT_WHEN_EMPTY);
        }
        queue.clear();
    }
    queue.push_back(job);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drained_queue_gives_back_what_a_burst_took() {
        let mut q = VecDeque::new();
        (0..1_000).for_each(|i| push_back(&mut q, i));
        assert!(q.capacity() >= 1_000);
        q.clear();
        push_back(&mut q, 1_000);
        assert!(q.capacity() <= 2 * KEPT_WHEN_EMPTY, "room for {}", q.capacity());
        assert_eq!(q.pop_front(), Some(1_000));
    }
}
