//! Messages between nodes: requests a coordinator sends to a replica and the replies that carry
//! the replica's facts.

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
    },
    /// The replica could not execute the request.
    Failed {
        /// Request id.
        id: u64,
        /// Why.
        reason: String,
    },
}

impl Message {
    /// The request id this message carries.
    pub fn id(&self) -> u64 {
        match self {
            Message::Read { id, .. }
            | Message::Write { id, .. }
            | Message::Hello { id, .. }
            | Message::Ping { id }
            | Message::ReadReply { id, .. }
            | Message::WriteAck { id, .. }
            | Message::Pong { id, .. }
            | Message::Failed { id, .. } => *id,
        }
    }
}
