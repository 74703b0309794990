//! A node's shared state: the parts every connection, command and background task of a running
//! node reaches (storage, replica, coordinator, peers, limits). Building them, binding the
//! listeners and spawning the tasks is `start.rs`.

use crate::clients::Registry;
use crate::config::NodeConfig;
use crate::coordinator::Coordinator;
use crate::emulation::Emulation;
use crate::hints::Hints;
use crate::hlc::Hlc;
use crate::internode::Seal;
use crate::limits::{Budget, Shares};
use crate::metrics::Metrics;
use crate::peer::Peer;
use crate::replica::Replica;
use crate::storage::Storage;
use crate::transport::Network;
use std::sync::Arc;

/// A running node's shared parts.
pub struct Node {
    /// Its configuration.
    pub cfg: NodeConfig,
    /// Storage engine.
    pub storage: Arc<Storage>,
    /// Replica side.
    pub replica: Arc<Replica>,
    /// Coordinator side.
    pub coordinator: Arc<Coordinator>,
    /// Emulation knobs.
    pub emulation: Arc<Emulation>,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// Peers by node id (`None` for this node).
    pub peers: Vec<Option<Arc<Peer>>>,
    /// Write versions: issued by the coordinator, admitted by the replica side.
    pub hlc: Arc<Hlc>,
    /// Writes peers missed, replayed when they are up (`None`: hinted handoff off).
    pub hints: Option<Arc<Hints>>,
    /// Bytes all client connections' partly received input may hold (`max_buffered_bytes`).
    pub budget: Arc<Budget>,
    /// The same for internode connections, a pool of the same size of its own: clients that
    /// fill theirs cannot keep a peer's heartbeat or replica write from being read, so they
    /// cannot make this node look dead to its peers.
    pub peer_budget: Arc<Budget>,
    /// Each client's share of `budget`: what all connections from one source address may hold
    /// at once (`max_buffered_bytes_per_client`), so one client cannot stall the others.
    pub client_shares: Arc<Shares>,
    /// Signs and checks internode frames with the cluster secret.
    pub seal: Seal,
    /// How copies reach replicas (anti-entropy's reads and write-backs).
    pub network: Arc<Network>,
    /// Peers' tree and key-list requests scanning storage at once, at most.
    pub repair_scans: tokio::sync::Semaphore,
    /// Client connections (`CLIENT LIST`, `INFO clients`).
    pub clients: Arc<Registry>,
    /// Internode connections from peers, at most `max_peer_connections` (the permits taken are
    /// the connections open).
    pub peer_slots: Arc<tokio::sync::Semaphore>,
}
