//! A request the coordinator core is handling, from arrival until its last copy is answered.

use crate::model::{CoordinatorId, NodeId, Op, RequestId, RequestView, SizeHint};
use crate::node_map::LINE;
use crate::ring::ReplicaSet;
use crate::selector::Reach;
use crate::time::Nanos;

/// How a request reaches its replicas.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// A read at ONE: the selector picks one replica (plus read-repair shadows).
    Selected {
        /// The replica of the attempt in flight, if one is.
        chosen: Option<NodeId>,
        /// When that attempt was sent.
        sent_at: Nanos,
        /// The replica of the speculative attempt in flight, if one is.
        hedge: Option<NodeId>,
        /// When it was sent.
        hedge_sent_at: Nanos,
        /// Whether the read was hedged already (at most once).
        hedged: bool,
        /// When the shadow copies were sent (with the first attempt).
        shadow_sent_at: Nanos,
        /// Replicas already tried and failed, by position in the replica set.
        tried: u8,
        /// Shadow copies not yet answered.
        shadows: u8,
        /// Whether the client has had its answer (shadows may still be out).
        done: bool,
    },
    /// A write, or a read at QUORUM or ALL: sent to every up replica.
    FanOut {
        /// Answers needed.
        need: u8,
        /// Answers received.
        answered: u8,
        /// Copies not yet answered or failed.
        outstanding: u8,
        /// Whether the client has had its reply or failure.
        done: bool,
    },
}

/// A [`SizeHint`]'s estimates in 16 bytes instead of 32 (no `Option` tags), its `large` flag
/// kept beside them in [`Pending`]: what brings a `Pending` to 128 bytes, two cache lines. At
/// thousands of coordinators a request's record is a miss to memory when its answer lands, once
/// per line it spans.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Estimates {
    /// The estimated bytes, or [`NO_ESTIMATE`].
    bytes: u64,
    /// The estimated processing time, or [`NO_ESTIMATE`].
    service: Nanos,
}

/// An estimate that is absent (no size or time comes near it).
const NO_ESTIMATE: u64 = u64::MAX;

impl Estimates {
    fn of(h: &SizeHint) -> Self {
        assert!(h.bytes != Some(NO_ESTIMATE) && h.service != Some(NO_ESTIMATE), "an estimate of 2^64 - 1: {h:?}");
        Estimates { bytes: h.bytes.unwrap_or(NO_ESTIMATE), service: h.service.unwrap_or(NO_ESTIMATE) }
    }

    fn hint(self, large: bool) -> SizeHint {
        let unpack = |v: u64| (v != NO_ESTIMATE).then_some(v);
        SizeHint { bytes: unpack(self.bytes), service: unpack(self.service), large }
    }
}

/// One request in flight or parked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pending {
    /// The engine's id of the request.
    pub id: RequestId,
    /// Key (hashed).
    pub key: u64,
    /// Read or write.
    pub op: Op,
    /// Arrival at this coordinator.
    pub release: Nanos,
    /// The size oracle's estimates at arrival (see [`Estimates`]).
    estimates: Estimates,
    /// Whether the size oracle classed the value as large at arrival.
    large: bool,
    /// Its multi-get's bottleneck, µs, every copy's tag (0: not part of one).
    bottleneck_us: u16,
    /// The key's replicas, primary first (up or not).
    pub replicas: ReplicaSet,
    /// How it is being served.
    pub mode: Mode,
}

impl Pending {
    /// A read at ONE, before the selector saw it.
    pub fn selected(id: RequestId, key: u64, release: Nanos, hint: SizeHint, replicas: ReplicaSet) -> Self {
        let mode = Mode::Selected {
            chosen: None,
            sent_at: 0,
            hedge: None,
            hedge_sent_at: 0,
            hedged: false,
            shadow_sent_at: 0,
            tried: 0,
            shadows: 0,
            done: false,
        };
        let estimates = Estimates::of(&hint);
        Pending { id, key, op: Op::Read, release, estimates, large: hint.large, bottleneck_us: 0, replicas, mode }
    }

    /// A write or a QUORUM/ALL read, before it is sent.
    pub fn fanned(id: RequestId, key: u64, op: Op, release: Nanos, hint: SizeHint, replicas: ReplicaSet) -> Self {
        let mode = Mode::FanOut { need: 0, answered: 0, outstanding: 0, done: false };
        Pending {
            id,
            key,
            op,
            release,
            estimates: Estimates::of(&hint),
            large: hint.large,
            bottleneck_us: 0,
            replicas,
            mode,
        }
    }

    /// Part of a multi-get whose bottleneck is `bottleneck_us` (0: a single request).
    pub fn in_multiget(self, bottleneck_us: u16) -> Self {
        debug_assert!(bottleneck_us == 0 || self.op == Op::Read, "request {} is a write in a multi-get", self.id);
        Pending { bottleneck_us, ..self }
    }

    /// Its multi-get's bottleneck, µs (0: not part of one).
    pub fn bottleneck_us(&self) -> u16 {
        self.bottleneck_us
    }

    /// What a selector may see of it.
    pub fn view(&self, coordinator: CoordinatorId) -> RequestView {
        RequestView { id: self.id, key: self.key, op: self.op, release: self.release, coordinator, hint: self.hint() }
    }

    /// The size oracle's hint at arrival.
    pub fn hint(&self) -> SizeHint {
        self.estimates.hint(self.large)
    }

    /// Whether the oracle classed the value as large at arrival.
    pub fn large(&self) -> bool {
        self.large
    }

    /// The copy of this selected read that `replica` held is settled (answered or failed): returns
    /// whether it was an attempt (the chosen replica or the hedge) rather than a read-repair
    /// shadow, and when it was sent.
    pub fn settle_copy(&mut self, replica: NodeId) -> (bool, Nanos) {
        let id = self.id;
        let Mode::Selected { chosen, sent_at, hedge, hedge_sent_at, shadow_sent_at, shadows, .. } = &mut self.mode
        else {
            panic!("request {id} is not a selected read")
        };
        let settled = if *chosen == Some(replica) {
            *chosen = None;
            (true, *sent_at)
        } else if *hedge == Some(replica) {
            *hedge = None;
            (true, *hedge_sent_at)
        } else {
            assert!(*shadows > 0, "a copy at {replica} that request {id} did not send");
            *shadows -= 1;
            (false, *shadow_sent_at)
        };
        debug_assert!(self.consistent(), "request {id} after settling its copy at {replica}: {:?}", self.mode);
        settled
    }

    /// When a selected read's attempt in flight was sent.
    pub fn sent_at(&self) -> Nanos {
        let Mode::Selected { sent_at, .. } = self.mode else { panic!("only a selected read has attempts") };
        sent_at
    }

    /// The position of `replica` in the replica set.
    pub fn position(&self, replica: NodeId) -> Option<usize> {
        self.replicas.iter().position(|&r| r == replica)
    }

    /// Whether the mode's counters and replicas are consistent with the replica set (checked
    /// with `debug_assert!` wherever the core changes a mode): attempts and shadows name
    /// replicas of the set, never the same one twice, and no count exceeds the set.
    pub fn consistent(&self) -> bool {
        let n = self.replicas.len();
        let ours = |r: Option<NodeId>| r.is_none_or(|r| self.position(r).is_some());
        match self.mode {
            Mode::Selected { chosen, hedge, hedged, tried, shadows, .. } => {
                ours(chosen)
                    && ours(hedge)
                    && (chosen.is_none() || chosen != hedge)
                    && (hedge.is_none() || hedged)
                    && (tried as usize) < (1usize << n)
                    && (shadows as usize) < n.max(1)
            }
            Mode::FanOut { need, answered, outstanding, .. } => {
                need as usize <= n && answered as usize + outstanding as usize <= n
            }
        }
    }
}

/// Where the core keeps a request. The core hands it out with every copy it sends, and the
/// engine hands it back with the copy's answer or failure: a slot index instead of a hash
/// lookup on the simulator's hot path, and the id to tell a reused slot from its old tenant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket {
    /// Slot in the core's table.
    pub slot: u32,
    /// The request's id.
    pub id: RequestId,
}

#[cfg(test)]
impl Ticket {
    /// A ticket whose slot is its id (tests).
    pub fn of(id: RequestId) -> Ticket {
        Ticket { slot: id as u32, id }
    }
}

/// A slab slot, aligned to a cache line so that a request's record spans exactly two.
#[derive(Debug)]
#[repr(align(64))]
struct Entry(Option<Pending>);

const _: () = assert!(size_of::<Entry>() == 128, "a request's record fits two cache lines");

/// Requests by slot; freed slots are reused first (they are warm in cache).
#[derive(Debug, Default)]
pub struct Slab {
    /// Slots ever used; those not in `free` hold a request.
    entries: Vec<Entry>,
    free: Vec<u32>,
}

impl Slab {
    /// Store `p`; its ticket.
    #[inline]
    pub fn insert(&mut self, p: Pending) -> Ticket {
        debug_assert!(p.consistent(), "an inconsistent request enters the slab: {p:?}");
        let (id, held) = (p.id, self.len());
        let slot = match self.free.pop() {
            Some(slot) => {
                debug_assert!(self.entries[slot as usize].0.is_none(), "a free slot holds no request");
                self.entries[slot as usize] = Entry(Some(p));
                slot
            }
            None => {
                self.entries.push(Entry(Some(p)));
                u32::try_from(self.entries.len() - 1).expect("fewer than 4 G requests in flight")
            }
        };
        let ticket = Ticket { slot, id };
        debug_assert!(self.len() == held + 1 && self.peek(ticket).is_some(), "request {id} is held at slot {slot}");
        ticket
    }

    /// The request a ticket names, if it is still held.
    #[inline]
    pub fn get_mut(&mut self, t: Ticket) -> Option<&mut Pending> {
        self.entries.get_mut(t.slot as usize)?.0.as_mut().filter(|p| p.id == t.id)
    }

    /// The request a ticket names, if it is still held, read-only.
    #[inline]
    pub fn peek(&self, t: Ticket) -> Option<&Pending> {
        self.entries.get(t.slot as usize)?.0.as_ref().filter(|p| p.id == t.id)
    }

    /// Where the slot a ticket names lies, without reading it (see
    /// [`super::CoordinatorCore::footprint`]).
    #[inline]
    pub fn slot(&self, t: Ticket) -> Option<&impl Sized> {
        self.entries.get(t.slot as usize)
    }

    /// Where the next [`Slab::insert`] lands, one step at a time and without reading it:
    /// `Index`, the free list's top (the slot number the insert reads); `Entry`, that slot's two
    /// lines (reading the free list, which the step before asked for). Null where there is
    /// nothing to ask for (no free slot and no room to push into).
    #[inline]
    pub fn landing(&self, reach: Reach) -> [*const u8; 2] {
        let entry: *const Entry = match (reach, self.free.last()) {
            (Reach::Index, Some(top)) => return [(top as *const u32).cast(), std::ptr::null()],
            (Reach::Entry, Some(&slot)) => &self.entries[slot as usize],
            // a push lands just past the last entry while the buffer has room
            (Reach::Entry, None) if self.entries.len() < self.entries.capacity() => {
                self.entries.as_ptr().wrapping_add(self.entries.len())
            }
            _ => return [std::ptr::null(); 2],
        };
        let at = entry.cast::<u8>();
        [at, at.wrapping_add(LINE)]
    }

    /// The request a ticket names, read-only; it must be held.
    #[inline]
    pub fn held(&self, t: Ticket) -> &Pending {
        self.peek(t).expect("the ticket's request is held")
    }

    /// The request a ticket names; it must be held.
    #[inline]
    pub fn at(&mut self, t: Ticket) -> &mut Pending {
        self.get_mut(t).expect("the ticket's request is held")
    }

    /// Forget a held request.
    #[inline]
    pub fn remove(&mut self, t: Ticket) {
        let entry = &mut self.entries[t.slot as usize].0;
        assert!(entry.as_ref().is_some_and(|p| p.id == t.id), "remove only a held request");
        *entry = None;
        self.free.push(t.slot);
        debug_assert!(self.free.len() <= self.entries.len(), "more free slots than slots");
        debug_assert!(self.peek(t).is_none(), "request {} is forgotten", t.id);
    }

    /// The slab's accounting (debug builds): the free list names distinct slots that hold no
    /// request, every other slot holds one, no request is held twice, and each held request's
    /// mode is consistent. A pass over the slab: the core calls it after each event it handles.
    pub fn check_invariants(&self) {
        if !cfg!(debug_assertions) {
            return;
        }
        let mut free = vec![false; self.entries.len()];
        for &slot in &self.free {
            let at = &mut free[slot as usize];
            debug_assert!(!*at, "slot {slot} is free twice");
            *at = true;
            debug_assert!(self.entries[slot as usize].0.is_none(), "free slot {slot} holds a request");
        }
        let mut ids = rustc_hash::FxHashSet::default();
        for (slot, e) in self.entries.iter().enumerate() {
            debug_assert_eq!(e.0.is_some(), !free[slot], "slot {slot} is neither free nor held");
            if let Some(p) = &e.0 {
                debug_assert!(ids.insert(p.id), "request {} is held twice", p.id);
                debug_assert!(p.consistent(), "request {}: {p:?}", p.id);
            }
        }
    }

    /// Attempts (chosen replicas and hedges of reads at ONE) now in flight at `replica`: a pass
    /// over the table, for the fallback of an engine that cannot park (off every hot path).
    pub fn attempts_at(&self, replica: NodeId) -> u32 {
        let at = |p: &Pending| match p.mode {
            Mode::Selected { chosen, hedge, .. } => (chosen == Some(replica)) as u32 + (hedge == Some(replica)) as u32,
            Mode::FanOut { .. } => 0,
        };
        self.entries.iter().filter_map(|e| e.0.as_ref()).map(at).sum()
    }

    /// The ticket of held request `id` (tests).
    #[cfg(test)]
    pub fn find(&self, id: RequestId) -> Option<Ticket> {
        let slot = self.entries.iter().position(|e| e.0.as_ref().is_some_and(|p| p.id == id))?;
        Some(Ticket { slot: slot as u32, id })
    }

    /// Requests held.
    pub fn len(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::ReplicaSet;

    #[test]
    fn a_pending_request_gives_back_the_hint_it_was_made_with() {
        let set = ReplicaSet::from_slice(&[1, 2, 3]);
        for bytes in [None, Some(0), Some(1 << 40)] {
            for service in [None, Some(0), Some(7_000)] {
                for large in [false, true] {
                    let hint = SizeHint { bytes, service, large };
                    let p = Pending::selected(9, 4, 100, hint, set);
                    assert_eq!((p.hint(), p.large(), p.view(2).hint), (hint, large, hint));
                }
            }
        }
    }

    #[test]
    fn the_landing_is_where_the_next_insert_writes() {
        let mut slab = Slab::default();
        let set = ReplicaSet::from_slice(&[1]);
        let read = |id| Pending::selected(id, 1, 0, SizeHint::default(), set);
        let lines = |slab: &Slab, slot: usize| {
            let at = (&slab.entries[slot] as *const Entry).cast::<u8>();
            [at, at.wrapping_add(LINE)]
        };
        // an empty slab with no room: nothing to ask for
        assert_eq!(slab.landing(Reach::Entry), [std::ptr::null(); 2]);
        slab.entries.reserve(4);
        let push_at = slab.entries.as_ptr().cast::<u8>();
        assert_eq!(slab.landing(Reach::Entry), [push_at, push_at.wrapping_add(LINE)], "a push lands past the end");
        assert!(slab.landing(Reach::Index).iter().all(|p| p.is_null()), "no free slot to read");
        let tickets: Vec<_> = (0..3).map(|id| slab.insert(read(id))).collect();
        slab.remove(tickets[1]);
        let top = slab.free.last().map(|s| (s as *const u32).cast::<u8>());
        assert_eq!(slab.landing(Reach::Index), [top.unwrap(), std::ptr::null()]);
        let expected = lines(&slab, 1);
        assert_eq!(slab.landing(Reach::Entry), expected, "the freed slot is reused first");
        assert_eq!(slab.insert(read(7)).slot, 1);
    }

    #[test]
    #[should_panic(expected = "an estimate of 2^64 - 1")]
    fn an_estimate_that_reads_as_none_is_refused() {
        let hint = SizeHint { bytes: Some(u64::MAX), service: None, large: true };
        Pending::fanned(1, 1, Op::Write, 0, hint, ReplicaSet::from_slice(&[0]));
    }
}
