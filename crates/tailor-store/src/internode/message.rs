//! Messages between nodes: requests a coordinator sends to a replica and the replies that carry
//! the replica's facts.

use crate::merkle::Hash;
use crate::storage::KeyVersion;
use tailor_core::facts::Feedback;
use tailor_core::model::Tags;

/// One internode message; every request carries an id its reply echoes.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// Read `key` (coordinator → replica).
    Read {
        /// Request id.
        id: u64,
        /// Client key.
        key: Vec<u8>,
        /// Tags the selector attached.
        tags: Tags,
        /// Nanoseconds the read spent at its coordinator before being sent (the replica's
        /// release time is its arrival minus this).
        age: u64,
    },
    /// Write `key` at `version`; `value: None` deletes.
    Write {
        /// Request id.
        id: u64,
        /// Client key.
        key: Vec<u8>,
        /// Last-writer-wins version.
        version: u64,
        /// New value or `None` for a delete.
        value: Option<Vec<u8>>,
        /// Tags the coordinator core gave the copy (the replica queues it by them, as the
        /// local replica and the simulator do).
        tags: Tags,
        /// Nanoseconds the write spent at its coordinator before being sent.
        age: u64,
    },
    /// First frame on a connection: names the coordinator whose requests follow, so replies can
    /// carry that coordinator's Bloom delta. Has no reply.
    Hello {
        /// Request id (unused, 0).
        id: u64,
        /// The connecting node.
        from: u32,
    },
    /// Heartbeat of the failure detector.
    Ping {
        /// Request id.
        id: u64,
        /// The sender's hybrid logical clock, in µs (the receiver's moves past it).
        clock: u64,
    },
    /// Answer to [`Message::Read`].
    ReadReply {
        /// Request id.
        id: u64,
        /// Stored version (0 = never written).
        version: u64,
        /// The value if present.
        value: Option<Vec<u8>>,
        /// Piggybacked facts.
        feedback: Feedback,
    },
    /// Answer to [`Message::Write`] once durable.
    WriteAck {
        /// Request id.
        id: u64,
        /// False if a newer version was already stored (still a success).
        applied: bool,
        /// Piggybacked facts.
        feedback: Feedback,
    },
    /// Answer to [`Message::Ping`].
    Pong {
        /// Request id.
        id: u64,
        /// Current facts.
        feedback: Feedback,
        /// Whether the node's workers can run requests; a peer treats an unhealthy node as
        /// down (routes around it) until it answers healthy again.
        healthy: bool,
        /// The answering node's hybrid logical clock, in µs.
        clock: u64,
        /// The answering node's wall clock when it answered, in µs since the Unix epoch: the
        /// pinging node measures its clock's offset from it (`hlc.rs`).
        wall: u64,
        /// Hints the answering node holds for the pinging one: a node restarted after a crash
        /// is recovering until every peer answered 0 (`recovery.rs`).
        hints: u64,
        /// Whether the answering node is recovering (`recovery.rs`'s level: 0 caught up, 1
        /// recovering, 2 recovering and a peer holds hints for it): coordinators read the up
        /// replicas of the lowest level at ONE.
        recovering: u8,
    },
    /// Anti-entropy: the Merkle tree of the replica's keys whose token is in `first..=last`
    /// (a repairing node → a replica of that range).
    TreeRequest {
        /// Request id.
        id: u64,
        /// First token of the range.
        first: u64,
        /// Last token of the range (inclusive).
        last: u64,
        /// The tree has `2^depth` leaves (at most [`crate::merkle::MAX_DEPTH`]).
        depth: u8,
        /// Tombstones with a version below this are past their grace: left out of the tree, as
        /// if already dropped (the repairing node's cutoff, so every replica uses the same).
        cutoff: u64,
    },
    /// Answer to [`Message::TreeRequest`].
    TreeReply {
        /// Request id.
        id: u64,
        /// The tree's leaves, in token order.
        leaves: Vec<Hash>,
    },
    /// Anti-entropy: the keys and versions the replica holds with tokens in `first..=last`, in
    /// token order, after `after` (one page).
    KeysRequest {
        /// Request id.
        id: u64,
        /// First token.
        first: u64,
        /// Last token (inclusive).
        last: u64,
        /// The last key of the previous page (`None`: from the first).
        after: Option<Vec<u8>>,
    },
    /// Answer to [`Message::KeysRequest`].
    KeysReply {
        /// Request id.
        id: u64,
        /// Keys with their versions (tombstones included), in token order.
        entries: Vec<KeyVersion>,
        /// The page is full: ask again after its last key.
        more: bool,
    },
    /// Lead an increment of counter `key` (a coordinator → the key's counter leader;
    /// `commands/counters.rs`). Answered with [`Message::IncrReply`], or [`Message::Failed`]
    /// with the client's error text.
    Incr {
        /// Request id.
        id: u64,
        /// Client key.
        key: Vec<u8>,
        /// The increment.
        by: i64,
        /// The write consistency (0: the leader's configured level, 1 ONE, 2 QUORUM, 3 ALL).
        level: u8,
    },
    /// Answer to [`Message::Incr`]: the counter's new total at its leader.
    IncrReply {
        /// Request id.
        id: u64,
        /// The new total.
        total: i64,
    },
    /// Cancel the copy sent as request `id` on this connection (a hedged read's losing copy;
    /// coordinator → replica). Has no reply of its own: a replica that drops the copy while it
    /// still waits answers the copy's `id` with [`Message::Failed`] at once; a copy already
    /// running finishes and answers as usual.
    Cancel {
        /// The copy's request id.
        id: u64,
    },
    /// Ask the replica how loaded it is (Prequal; coordinator → replica). Answered at once with
    /// [`Message::ProbeReply`], never queued behind requests; a probe with no answer is simply
    /// forgotten by its sender.
    Probe {
        /// Request id.
        id: u64,
    },
    /// Answer to [`Message::Probe`]: the replica core's requests in flight and its latency
    /// estimate at that many ([`tailor_core::facts::ProbeReply`], the simulator's answer too).
    ProbeReply {
        /// Request id.
        id: u64,
        /// Requests waiting or running at the replica (at most [`MAX_PROBE_RIF`]).
        rif: u32,
        /// Latency estimate for a request arriving now, ns (0: nothing measured yet; at most
        /// [`MAX_PROBE_LATENCY`]).
        latency: u64,
    },
    /// The replica could not execute the request.
    Failed {
        /// Request id.
        id: u64,
        /// Why.
        reason: String,
        /// How final the failure is: whether a hint or a retry can help.
        failure: Failure,
    },
}

/// Most requests in flight a [`Message::ProbeReply`] may claim (a replica never holds more
/// than its queue cap plus its workers; above this a peer is lying or broken).
pub const MAX_PROBE_RIF: u32 = 1 << 24;

/// Longest latency estimate, ns, a [`Message::ProbeReply`] may claim (an hour: a larger one
/// would overflow the selector's sums of estimates).
pub const MAX_PROBE_LATENCY: u64 = 3_600_000_000_000;

/// How final a replica's [`Message::Failed`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// It might succeed later (busy, a storage error): hint it, retry it.
    Now,
    /// It never will (bad input: the empty key, a key or value over the limits): neither.
    ForGood,
    /// A write whose version is ahead of the replica's clock by more than the allowed offset:
    /// not hinted by its coordinator (if its clock is the fast one, a replay would overwrite
    /// every write acknowledged meanwhile), retried a bounded number of times by a hint replay
    /// (whose version was sane when issued: the replica's clock may be the slow one).
    FromTheFuture,
}

impl Failure {
    /// Its byte on the wire.
    pub fn code(self) -> u8 {
        match self {
            Failure::Now => 0,
            Failure::ForGood => 1,
            Failure::FromTheFuture => 2,
        }
    }

    /// The failure with wire byte `code`.
    pub fn from_code(code: u8) -> Option<Failure> {
        [Failure::Now, Failure::ForGood, Failure::FromTheFuture].into_iter().find(|f| f.code() == code)
    }
}

impl Message {
    /// The request id this message carries.
    pub fn id(&self) -> u64 {
        match self {
            Message::Read { id, .. }
            | Message::Write { id, .. }
            | Message::Hello { id, .. }
            | Message::Ping { id, .. }
            | Message::ReadReply { id, .. }
            | Message::WriteAck { id, .. }
            | Message::Pong { id, .. }
            | Message::TreeRequest { id, .. }
            | Message::TreeReply { id, .. }
            | Message::KeysRequest { id, .. }
            | Message::KeysReply { id, .. }
            | Message::Incr { id, .. }
            | Message::IncrReply { id, .. }
            | Message::Cancel { id }
            | Message::Probe { id }
            | Message::ProbeReply { id, .. }
            | Message::Failed { id, .. } => *id,
        }
    }
}
