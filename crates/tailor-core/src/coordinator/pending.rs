//! A request the coordinator core is handling, from arrival until its last copy is answered.

use crate::model::{CoordinatorId, NodeId, Op, RequestId, RequestView, SizeHint};
use crate::ring::ReplicaSet;
use crate::time::Nanos;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// How a request reaches its replicas.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// A read at ONE: the selector picks one replica (plus read-repair shadows).
    Selected {
        /// The replica of the attempt in flight, if one is.
        chosen: Option<NodeId>,
        /// When that attempt was sent.
        sent_at: Nanos,
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

/// One request in flight or parked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pending {
    /// Key (hashed).
    pub key: u64,
    /// Read or write.
    pub op: Op,
    /// Arrival at this coordinator.
    pub release: Nanos,
    /// The size oracle's hint at arrival.
    pub hint: SizeHint,
    /// The key's replicas, primary first (up or not).
    pub replicas: ReplicaSet,
    /// How it is being served.
    pub mode: Mode,
}

impl Pending {
    /// A read at ONE, before the selector saw it.
    pub fn selected(key: u64, release: Nanos, hint: SizeHint, replicas: ReplicaSet) -> Self {
        let mode = Mode::Selected { chosen: None, sent_at: 0, shadow_sent_at: 0, tried: 0, shadows: 0, done: false };
        Pending { key, op: Op::Read, release, hint, replicas, mode }
    }

    /// A write or a QUORUM/ALL read, before it is sent.
    pub fn fanned(key: u64, op: Op, release: Nanos, hint: SizeHint, replicas: ReplicaSet) -> Self {
        let mode = Mode::FanOut { need: 0, answered: 0, outstanding: 0, done: false };
        Pending { key, op, release, hint, replicas, mode }
    }

    /// What a selector may see of it.
    pub fn view(&self, id: RequestId, coordinator: CoordinatorId) -> RequestView {
        RequestView { id, key: self.key, op: self.op, release: self.release, coordinator, hint: self.hint }
    }

    /// The position of `replica` in the replica set.
    pub fn position(&self, replica: NodeId) -> Option<usize> {
        self.replicas.iter().position(|&r| r == replica)
    }
}

/// Request ids are unique integers already: hashing them again would only cost time on the
/// simulator's hot path, so the map mixes them with one multiplication (Fibonacci hashing).
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Requests by id.
pub type PendingMap = HashMap<RequestId, Pending, BuildHasherDefault<IdHasher>>;
