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

/// The order of "no event": above every real key, whose time is below `Nanos::MAX`, so an
/// empty part of the queue never wins a comparison and the hot path needs no `Option`s.
const NONE: u128 = u128::MAX;

/// Number of in-order lanes beside the heap (see [`EventQueue::push_in_order`]).
pub const LANES: usize = 3;

/// A future-event list in parts that pop as one, in (time, sequence) order:
///
/// - a binary heap of 16-byte keys `time << 64 | seq << 24 | slot` whose events stay in a slab,
///   so sifting moves and compares one `u128` instead of whole events;
/// - [`LANES`] FIFOs for streams of events whose times never decrease (every network hop, which
///   is a fixed delay ahead, one lane per delay; the workload's next arrival): they need no
///   sifting at all. Half of
///   a request's events are hops, and one more is its arrival.
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<u128>>,
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    /// Each entry holds its order (see [`order`]) computed once, when pushed.
    lanes: [VecDeque<(u128, E)>; LANES],
    /// The order of each lane's front ([`NONE`]: empty), kept beside the lanes so that a pop
    /// compares three numbers without looking into the FIFOs.
    fronts: [u128; LANES],
    seq: u64,
    /// The lane the last popped event came from ([`LANES`]: the heap).
    last: usize,
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(4096),
            slab: Vec::with_capacity(4096),
            free: Vec::new(),
            lanes: std::array::from_fn(|_| VecDeque::with_capacity(4096)),
            fronts: [NONE; LANES],
            seq: 0,
            last: LANES,
        }
    }

    /// Schedule `event` at `time`.
    #[inline]
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

    /// Schedule `event` at `time` in `lane`, no earlier than any event scheduled in that lane
    /// before (a fixed delay after the current time, or a stream that only moves forward).
    /// Pops exactly as [`EventQueue::push`] would.
    #[inline]
    pub fn push_in_order(&mut self, lane: usize, time: Nanos, event: E) {
        self.seq += 1;
        let fifo = &mut self.lanes[lane];
        let key = order(time, self.seq);
        assert!(fifo.back().is_none_or(|b| b.0 <= key), "in-order events never go back in time");
        if fifo.is_empty() {
            self.fronts[lane] = key;
        }
        fifo.push_back((key, event));
    }

    /// The lane whose front is the earliest of all lane fronts, with that front's order
    /// ([`NONE`] when every lane is empty).
    #[inline]
    fn earliest_lane(&self) -> (u128, usize) {
        let mut best = (NONE, 0);
        for (i, &key) in self.fronts.iter().enumerate() {
            if key < best.0 {
                best = (key, i);
            }
        }
        best
    }

    /// The earliest event, if any.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        // sequence numbers are unique, so a heap key (with its slot bits) never ties a lane's
        let (lane_key, i) = self.earliest_lane();
        let heap_key = self.heap.peek().map_or(NONE, |k| k.0);
        if lane_key < heap_key {
            let lane = &mut self.lanes[i];
            let (key, event) = lane.pop_front().expect("its front is the earliest");
            self.fronts[i] = lane.front().map_or(NONE, |f| f.0);
            self.last = i;
            return Some(((key >> 64) as Nanos, event));
        }
        if heap_key == NONE {
            return None;
        }
        self.last = LANES;
        let Reverse(key) = self.heap.pop().expect("peeked");
        let (time, slot) = ((key >> 64) as Nanos, (key as u32) & ((1 << SLOT_BITS) - 1));
        self.free.push(slot);
        let event = self.slab[slot as usize].take().expect("a pending event's slot holds it");
        Some((time, event))
    }

    /// Whether the last event popped came from `lane` (a message's lane tells which delay it
    /// took, when the request it belongs to may be gone).
    #[inline]
    pub fn popped_from(&self, lane: usize) -> bool {
        self.last == lane
    }

    /// The order of `lane`'s front event, unique to it (to tell whether the lane moved).
    #[inline]
    pub fn lane_front_order(&self, lane: usize) -> Option<u128> {
        (self.fronts[lane] != NONE).then_some(self.fronts[lane])
    }

    /// The `ahead`-th event (0: the front) of `lane`, if that many are queued there.
    #[inline]
    pub fn lane_ahead(&self, lane: usize, ahead: usize) -> Option<&E> {
        self.lanes[lane].get(ahead).map(|e| &e.1)
    }

    /// The key of the event at the top of the heap (unique to it) and where that event lies,
    /// without reading it (to prefetch it: the next heap event to pop, unless a lane's front is
    /// earlier).
    #[inline]
    pub fn heap_top(&self) -> Option<(u128, &Option<E>)> {
        let Reverse(key) = self.heap.peek()?;
        Some((*key, self.slab.get((*key as u32 & ((1 << SLOT_BITS) - 1)) as usize)?))
    }

    /// The time of the earliest event, if any.
    pub fn next_time(&self) -> Option<Nanos> {
        let heap = self.heap.peek().map(|k| (k.0 >> 64) as Nanos);
        let lanes = self.lanes.iter().filter_map(|l| l.front().map(|f| (f.0 >> 64) as Nanos));
        heap.into_iter().chain(lanes).min()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.lanes.iter().all(VecDeque::is_empty)
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
        q.push_in_order(0, 2, 'b');
        q.push_in_order(1, 5, 'c');
        q.push(5, 'd');
        q.push(1, 'e');
        q.push_in_order(0, 7, 'f');
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, [(1, 'e'), (2, 'b'), (5, 'a'), (5, 'c'), (5, 'd'), (7, 'f')]);
    }

    #[test]
    fn equal_times_pop_in_insertion_order_across_lanes_and_heap() {
        let mut q = EventQueue::new();
        q.push_in_order(1, 5, 'a');
        q.push_in_order(0, 5, 'b');
        q.push(5, 'c');
        q.push_in_order(1, 5, 'd');
        q.push(4, 'e');
        assert_eq!(q.next_time(), Some(4));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, [(4, 'e'), (5, 'a'), (5, 'b'), (5, 'c'), (5, 'd')]);
        assert!(q.is_empty());
    }

    #[test]
    #[should_panic(expected = "never go back in time")]
    fn an_in_order_event_earlier_than_the_last_is_a_bug() {
        let mut q = EventQueue::new();
        q.push_in_order(1, 5, 'a');
        q.push_in_order(1, 4, 'b');
    }
}
