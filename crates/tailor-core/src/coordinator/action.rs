//! What the coordinator core asks its engine to do.

use super::pending::Ticket;
use crate::model::{NodeId, RequestId, Tags};
use crate::time::Nanos;

/// Why a request is sent to a replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendKind {
    /// The read the selector chose this replica for; its answer goes to the client.
    Read,
    /// A speculative copy of a read whose first attempt is late; the first of the two answers
    /// goes to the client.
    Hedge,
    /// A read-repair copy: loads the replica and feeds the selector, never answers the client.
    Shadow,
    /// One replica's share of a read at QUORUM or ALL (no selector involved).
    QuorumRead,
    /// One replica's share of a write.
    Write,
    /// A probe the selector asked for (Prequal): the replica answers at once, without queueing
    /// it, with a [`crate::facts::ProbeReply`] that the engine hands to
    /// [`super::CoordinatorCore::probed`]. Its ticket's slot is [`PROBE_SLOT`] and its id the
    /// read whose routing sent it.
    Probe,
}

/// The ticket slot of every probe: probes hold no place in the core's table.
pub const PROBE_SLOT: u32 = u32::MAX - 1;

/// Send a copy of a request to `replica`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Send {
    /// The request's ticket: hand it back with the copy's answer or failure (its `id` is the
    /// engine's request id).
    pub ticket: Ticket,
    /// Where it goes.
    pub replica: NodeId,
    /// Tags it carries (the selector's priority, the coordinator's size class).
    pub tags: Tags,
    /// Time the request has spent at this coordinator (the replica's release time is its
    /// arrival minus this).
    pub age: Nanos,
    /// Why it is sent.
    pub kind: SendKind,
}

/// Why the core gave up on a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// Every replica of the key is down.
    #[error("no replica of this key is up")]
    NoReplica,
    /// The replica group's backlog is full, or the request waited there past the park timeout.
    #[error("replica group busy, try again")]
    Busy,
    /// Fewer replicas answered than needed.
    #[error("consistency level needs {need} replicas, {got} answered")]
    NotEnough {
        /// Answers needed.
        need: usize,
        /// Answers received.
        got: usize,
    },
}

/// One thing for the engine to do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// Send a request to a replica.
    Send(Send),
    /// The request is complete: answer the client (a read with `replica`'s answer at ONE, the
    /// newest of the answers received at QUORUM or ALL).
    Reply {
        /// The request.
        request: RequestId,
        /// The replica whose answer completed it.
        replica: NodeId,
    },
    /// The request failed.
    Fail {
        /// The request.
        request: RequestId,
        /// Why.
        failure: Failure,
    },
    /// The read at ONE is answered and its other attempt (the first one or the hedge) at
    /// `replica` is no longer wanted (hedge cancellation, on with
    /// [`super::CoordinatorCore::with_hedge_cancel`]): drop it if it still waits in the replica's
    /// queue ([`crate::replica::ReplicaCore::cancel`]); a copy already running finishes. The core
    /// has settled the copy already: an answer that still comes is ignored.
    Cancel {
        /// The request.
        request: RequestId,
        /// Where the unwanted copy went.
        replica: NodeId,
        /// The copy's ticket, as it was sent.
        ticket: Ticket,
    },
}
