//! The requests in flight in the simulator, each in a slot reused once it is over ([`Requests`]).

use tailor_core::time::Nanos;
use tailor_core::{Op, RequestId};

/// A request's life in the simulator (what the cores do not keep: the truth and the times
/// the recorder needs). Its replicas are not kept: the ring never changes during a run, and
/// only the rare bound sample needs them again. Held in [`Requests`] only while in flight,
/// each on a cache line of its own: at thousands of servers a request's record is a miss to
/// memory at every hop, and unaligned most of them spanned two lines.
#[repr(align(64))]
pub(crate) struct Req {
    /// Its id in the cores (see [`Requests`]).
    id: RequestId,
    /// Copies sent (reads, shadows, hedges, write copies, probes) whose answers have not
    /// reached the coordinator yet.
    outstanding: u32,
    /// Whether the client has its reply.
    done: bool,
    pub(crate) key: u64,
    pub(crate) size: u64,
    pub(crate) op: Op,
    pub(crate) client: u32,
    pub(crate) release: Nanos,
    /// Nominal processing time at a replica (stretch denominator, local policies' `p`).
    pub(crate) nominal: Nanos,
}

impl Req {
    /// A request issued at `release` by `client`, not yet in [`Requests`].
    #[inline]
    pub(crate) fn new(key: u64, size: u64, op: Op, client: u32, release: Nanos, nominal: Nanos) -> Self {
        Req { id: 0, outstanding: 0, done: false, key, size, op, client, release, nominal }
    }
}

const _: () = assert!(size_of::<Req>() == 64, "a request's record is one cache line");

/// Low bits of a request id that hold its slot in [`Requests`]; the request's sequence number
/// (0, 1, 2... in issue order) sits above them, so ids are unique and ordered like issues.
const SLOT_BITS: u32 = 24;

/// The requests in flight, in slots reused once a request is answered and every copy of it is
/// back: memory follows the requests in flight, not the length of the run.
#[derive(Default)]
pub(crate) struct Requests {
    slots: Vec<Req>,
    free: Vec<u32>,
    /// Requests issued so far: the next one's sequence number.
    issued: u64,
    reads: u64,
}

impl Requests {
    /// Reads issued so far.
    #[inline]
    pub(crate) fn reads(&self) -> u64 {
        self.reads
    }

    /// Take a slot for `req` and return its id.
    #[inline]
    pub(crate) fn insert(&mut self, mut req: Req) -> RequestId {
        let slot = self.free.pop().unwrap_or(self.slots.len() as u32);
        assert!(slot < (1 << SLOT_BITS), "more than 16M requests in flight");
        req.id = (self.issued << SLOT_BITS) | slot as u64;
        self.issued += 1;
        self.reads += (req.op == Op::Read) as u64;
        let id = req.id;
        match self.slots.get_mut(slot as usize) {
            Some(s) => *s = req,
            None => self.slots.push(req),
        }
        id
    }

    /// The request in flight with `id`.
    #[inline]
    pub(crate) fn get(&self, id: RequestId) -> &Req {
        let r = &self.slots[slot(id)];
        debug_assert_eq!(r.id, id, "a request is used only while in flight");
        r
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, id: RequestId) -> &mut Req {
        let r = &mut self.slots[slot(id)];
        assert_eq!(r.id, id, "a request is used only while in flight");
        r
    }

    /// The slot request `id` had, whoever holds it now (for a prefetch, which reads nothing).
    #[inline]
    pub(crate) fn slot_of(&self, id: RequestId) -> Option<&Req> {
        self.slots.get(slot(id))
    }

    /// A copy of request `id` was sent.
    #[inline]
    pub(crate) fn sent(&mut self, id: RequestId) {
        self.get_mut(id).outstanding += 1;
    }

    /// A copy's answer reached the coordinator (after the coordinator acted on it).
    #[inline]
    pub(crate) fn answered(&mut self, id: RequestId) {
        let r = self.get_mut(id);
        assert!(r.outstanding > 0, "request {id}: more answers than copies");
        r.outstanding -= 1;
        self.release_if_over(id);
    }

    /// The client got request `id`'s reply.
    #[inline]
    pub(crate) fn replied(&mut self, id: RequestId) {
        let r = self.get_mut(id);
        assert!(!r.done, "request {id} answered twice");
        r.done = true;
        self.release_if_over(id);
    }

    #[inline]
    fn release_if_over(&mut self, id: RequestId) {
        let r = self.get_mut(id);
        if r.done && r.outstanding == 0 {
            r.id = RequestId::MAX;
            self.free.push(slot(id) as u32);
        }
    }
}

/// A request's sequence number (its index in issue order).
#[inline]
pub(crate) fn seq(id: RequestId) -> u64 {
    id >> SLOT_BITS
}

/// A request's slot in [`Requests`].
#[inline]
fn slot(id: RequestId) -> usize {
    (id & ((1 << SLOT_BITS) - 1)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(client: u32) -> Req {
        Req::new(7, 100, Op::Read, client, 0, 1)
    }

    #[test]
    fn a_slot_is_reused_only_once_the_reply_and_every_copy_are_back() {
        let mut r = Requests::default();
        let a = r.insert(read(1));
        r.sent(a);
        r.sent(a);
        r.replied(a);
        r.answered(a);
        let b = r.insert(read(2));
        assert_ne!(slot(a), slot(b), "a copy of the first is still out");
        r.answered(a);
        let c = r.insert(read(3));
        assert_eq!(slot(c), slot(a), "the first's slot is free again");
        assert_eq!((seq(a), seq(b), seq(c)), (0, 1, 2), "ids follow the issue order");
        assert_eq!((r.get(c).client, r.reads()), (3, 3));
    }

    #[test]
    #[should_panic(expected = "more answers than copies")]
    fn an_answer_for_a_copy_never_sent_is_a_bug() {
        let mut r = Requests::default();
        let a = r.insert(read(1));
        r.answered(a);
    }
}
