//! The request model every engine shares (docs/strategies.md, The model).

use crate::time::Nanos;
use serde::{Deserialize, Serialize};

/// A replica (server) index, `0..m`.
pub type NodeId = u32;
/// A coordinator (client) index; in the store every node is also a coordinator.
pub type CoordinatorId = u32;
/// A request's unique id within a run.
pub type RequestId = u64;

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Served by one replica chosen by the selector.
    Read,
    /// Sent to every replica.
    Write,
}

/// Tags a coordinator attaches to a request; they travel with it to the replica.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Tags {
    /// Priority level chosen by the selector (0 = highest); local policies may use it.
    pub priority: u8,
    /// Size class from the coordinator's oracle (0 = small, 1 = large, ...); picks RML's sub-queue.
    pub size_class: u8,
    /// The bottleneck of the read's multi-get: the largest processing time the coordinator
    /// estimates among its keys, in µs (saturating at 65.5 ms; 0 = a single read or no
    /// estimate). Rein's `rein-sbf` serves the smallest first. 16 bits keep the simulator's
    /// events within 48 bytes.
    #[serde(default, skip_serializing_if = "crate::is_default")]
    pub bottleneck_us: u16,
    /// The flow the request belongs to: its coordinator's id (a client in the simulator, a
    /// node in the store) modulo 2^16, set by the coordinator core; `las` charges service to
    /// it. The tags stay in 6 bytes, so the simulator's events stay in 48 bytes.
    #[serde(default, skip_serializing_if = "crate::is_default")]
    pub flow: u16,
}

/// A request as the engine knows it, including its true value size.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// Unique id.
    pub id: RequestId,
    /// Key (already hashed or small integer; the ring hashes it again).
    pub key: u64,
    /// Read or write.
    pub op: Op,
    /// True value size in bytes (known exactly only at the replica).
    pub size: u64,
    /// Release time: arrival at the coordinator.
    pub release: Nanos,
    /// Coordinator that received it.
    pub coordinator: CoordinatorId,
    /// Tags set by the coordinator.
    pub tags: Tags,
}

/// What the coordinator's size oracle says about a request (never the truth itself).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SizeHint {
    /// Estimated value size in bytes, if the oracle has one.
    pub bytes: Option<u64>,
    /// Estimated processing time at a replica, if the engine can derive one.
    pub service: Option<Nanos>,
    /// Whether the oracle classes the value as large (above the large-value threshold).
    pub large: bool,
}

/// The part of a request a selector may look at: no true size, only the oracle's hint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestView {
    /// Unique id.
    pub id: RequestId,
    /// Key.
    pub key: u64,
    /// Read or write.
    pub op: Op,
    /// Release time at the coordinator.
    pub release: Nanos,
    /// Coordinator handling it.
    pub coordinator: CoordinatorId,
    /// Oracle estimate of its size.
    pub hint: SizeHint,
}

impl RequestView {
    /// The selector's view of `req` with the given oracle hint.
    pub fn of(req: &Request, hint: SizeHint) -> Self {
        RequestView { id: req.id, key: req.key, op: req.op, release: req.release, coordinator: req.coordinator, hint }
    }
}

/// What a replica's local queue knows about a queued job.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobMeta {
    /// Request id.
    pub id: RequestId,
    /// Release time at the coordinator (`r_i`).
    pub release: Nanos,
    /// When the job entered this queue.
    pub enqueued: Nanos,
    /// Processing time estimated from the replica's exact value size (`p_i`), at least 1 ns.
    pub service: Nanos,
    /// Exact value size in bytes.
    pub size: u64,
    /// Tags from the coordinator.
    pub tags: Tags,
}

/// How many replicas must acknowledge (writes) or answer (reads) before the client gets a reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Consistency {
    /// One replica.
    One,
    /// A majority of the replication factor.
    #[default]
    Quorum,
    /// Every replica.
    All,
}

impl Consistency {
    /// Replies needed out of `k` replicas.
    pub fn required(self, k: usize) -> usize {
        match self {
            Consistency::One => 1,
            Consistency::Quorum => k / 2 + 1,
            Consistency::All => k,
        }
    }

    /// Parse `one`, `quorum` or `all` (any case).
    pub fn parse(s: &str) -> Option<Consistency> {
        match s.to_ascii_lowercase().as_str() {
            "one" => Some(Consistency::One),
            "quorum" => Some(Consistency::Quorum),
            "all" => Some(Consistency::All),
            _ => None,
        }
    }
}
