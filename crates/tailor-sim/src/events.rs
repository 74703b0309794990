//! The event queue: events ordered by (time, insertion sequence), so simultaneous events run in
//! the order they were scheduled and every run is deterministic.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use tailor_core::time::Nanos;

/// Low bits of a heap key that hold the slab slot; the sequence number sits above them and the
/// time in the high 64 bits, so one 128-bit comparison orders keys by (time, sequence).
const SLOT_BITS: u32 = 24;

/// The order of an event scheduled at `time` as the `seq`-th: its heap key without the slot.
fn order(time: Nanos, seq: u64) -> u128 {
    ((time as u128) << 64) | ((seq as u128) << SLOT_BITS)
}

/// A future-event list in two parts that pop as one, in (time, sequence) order:
///
/// - a binary heap of 16-byte keys `time << 64 | seq << 24 | slot` whose events stay in a slab,
///   so sifting moves and compares one `u128` instead of whole events;
/// - a FIFO for events scheduled a fixed delay ahead (every network hop): their times never
///   decrease, so they need no sifting at all. Half of a request's events are hops.
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<u128>>,
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    fifo: VecDeque<(Nanos, u64, E)>,
    seq: u64,
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(4096),
            slab: Vec::with_capacity(4096),
            free: Vec::new(),
            fifo: VecDeque::with_capacity(4096),
            seq: 0,
        }
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
        self.heap.push(Reverse(order(time, self.seq) | slot as u128));
    }

    /// Schedule `event` at `time`, no earlier than any event scheduled this way before (a fixed
    /// delay after the current time). Pops exactly as [`EventQueue::push`] would.
    pub fn push_in_order(&mut self, time: Nanos, event: E) {
        self.seq += 1;
        assert!(self.fifo.back().is_none_or(|b| b.0 <= time), "in-order events never go back in time");
        self.fifo.push_back((time, self.seq, event));
    }

    /// The earliest event, if any.
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let heap_first = match (self.heap.peek(), self.fifo.front()) {
            (None, None) => return None,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(Reverse(key)), Some(&(time, seq, _))) => *key < order(time, seq),
        };
        if !heap_first {
            let (time, _, event) = self.fifo.pop_front().expect("peeked");
            return Some((time, event));
        }
        let Reverse(key) = self.heap.pop().expect("peeked");
        let (time, slot) = ((key >> 64) as Nanos, (key as u32) & ((1 << SLOT_BITS) - 1));
        self.free.push(slot);
        let event = self.slab[slot as usize].take().expect("a pending event's slot holds it");
        Some((time, event))
    }

    /// The time of the earliest event, if any.
    pub fn next_time(&self) -> Option<Nanos> {
        let heap = self.heap.peek().map(|k| (k.0 >> 64) as Nanos);
        let fifo = self.fifo.front().map(|f| f.0);
        heap.into_iter().chain(fifo).min()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.fifo.is_empty()
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

    #[test]
    fn in_order_events_interleave_as_if_pushed_on_the_heap() {
        let mut q = EventQueue::new();
        q.push(5, 'a');
        q.push_in_order(2, 'b');
        q.push_in_order(5, 'c');
        q.push(5, 'd');
        q.push(1, 'e');
        q.push_in_order(7, 'f');
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, [(1, 'e'), (2, 'b'), (5, 'a'), (5, 'c'), (5, 'd'), (7, 'f')]);
    }

    #[test]
    #[should_panic(expected = "never go back in time")]
    fn an_in_order_event_earlier_than_the_last_is_a_bug() {
        let mut q = EventQueue::new();
        q.push_in_order(5, 'a');
        q.push_in_order(4, 'b');
    }
}
