//! The event queue: a binary heap ordered by (time, insertion sequence), so simultaneous events
//! run in the order they were scheduled and every run is deterministic.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use tailor_core::time::Nanos;

/// Bits of a heap key's second word that hold the slab slot; the rest hold the sequence number.
const SLOT_BITS: u32 = 24;

/// A future-event list.
///
/// The heap orders 16-byte keys `(time, seq << 24 | slot)` while the events themselves stay in a
/// slab: sifting moves two words instead of whole events, which is where a simulator spends
/// most of its time. The sequence number in the high bits keeps ties in insertion order.
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<(Nanos, u64)>>,
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    seq: u64,
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(4096), slab: Vec::with_capacity(4096), free: Vec::new(), seq: 0 }
    }

    /// Schedule `event` at `time`.
    pub fn push(&mut self, time: Nanos, event: E) {
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slab[slot as usize] = Some(event);
                slot
            }
            None => {
                self.slab.push(Some(event));
                (self.slab.len() - 1) as u32
            }
        };
        assert!(slot < (1 << SLOT_BITS), "more than 16M events pending");
        self.heap.push(Reverse((time, (self.seq << SLOT_BITS) | slot as u64)));
    }

    /// The earliest event, if any.
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let Reverse((time, key)) = self.heap.pop()?;
        let slot = (key & ((1 << SLOT_BITS) - 1)) as u32;
        self.free.push(slot);
        let event = self.slab[slot as usize].take().expect("a pending event's slot holds it");
        Some((time, event))
    }

    /// Events scheduled so far (a progress and cost measure).
    pub fn scheduled(&self) -> u64 {
        self.seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(5, 'a');
        q.push(1, 'b');
        q.push(5, 'c');
        q.push(3, 'd');
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, [(1, 'b'), (3, 'd'), (5, 'a'), (5, 'c')]);
    }
}
