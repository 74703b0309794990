//! Starting a node: opens storage, builds the replica, coordinator, peers and the node's shared
//! state ([`crate::node::Node`]), binds the listeners (RESP clients in plain text and over TLS,
//! internode, metrics), spawns the background tasks, and runs until asked to stop.

use crate::config::NodeConfig;
use crate::coordinator::{Coordinator, CoordinatorParts};
use crate::emulation::Emulation;
use crate::hints::Hints;
use crate::hlc::Hlc;
use crate::internode::Seal;
use crate::limits::{Budget, Shares};
use crate::metrics::Metrics;
use crate::node::Node;
use crate::peer::Peer;
use crate::replica::Replica;
use crate::storage::Storage;
use crate::transport::Network;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tailor_core::coordinator::{CoordinatorConfig, CoordinatorCore};
use tailor_core::oracle::bloom::LargeKeyIndex;
use tailor_core::oracle::size::{self, Knowledge, OracleKind};
use tailor_core::ring::Ring;
use tailor_core::selector::SelectorEnv;
use tokio::net::TcpListener;

/// The log target of a node's start-up and background tasks (as when they lived in `node.rs`;
/// log filters and the log-format test name it).
const TARGET: &str = "tailor_store::node";

/// Errors starting a node.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Bad configuration.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The storage engine failed to open.
    #[error(transparent)]
    Storage(#[from] crate::storage::StorageError),
    /// A listener could not bind.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// The error.
        source: std::io::Error,
    },
    /// The ring or a strategy could not be built.
    #[error("{0}")]
    Build(String),
}

/// Tree and key-list scans a node runs for its peers at once.
const REPAIR_SCANS: usize = 2;

/// Extra bytes an internode frame may carry beyond the largest value.
const FRAME_SLACK: u64 = 1 << 20;

async fn bind(addr: std::net::SocketAddr) -> Result<TcpListener, NodeError> {
    TcpListener::bind(addr).await.map_err(|source| NodeError::Bind { addr, source })
}

/// Run a node until `shutdown` resolves, then stop its workers and sync the engine.
pub async fn run(cfg: NodeConfig, shutdown: impl Future<Output = ()>) -> Result<(), NodeError> {
    cfg.validate()?;
    let clock = Instant::now();
    let m = cfg.members.len();
    let tls = crate::tls::acceptor(&cfg)?;
    std::fs::create_dir_all(&cfg.data_dir).map_err(|e| NodeError::Build(format!("data_dir: {e}")))?;
    let storage = Storage::open_with_cache(&cfg.data_dir, cfg.durability, Some(cfg.cache_mb << 20))?;
    let storage = Arc::new(storage.with_row_cache(cfg.row_cache_mb << 20));
    storage.set_gc_grace(Duration::from_secs(cfg.gc_grace_s));
    let metrics = Arc::new(Metrics::new(m));
    let seed = cfg.seed ^ (cfg.id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let emulation = Arc::new(Emulation::new(&cfg.emulation, seed));
    let queue =
        tailor_core::local::build(&cfg.local, &cfg.locals, seed).map_err(|e| NodeError::Build(e.to_string()))?;
    let bloom_on = cfg.size_oracle == OracleKind::Bloom;
    let build = |e: tailor_core::oracle::bloom::BloomError| NodeError::Build(format!("bloom: {e}"));
    let index =
        if bloom_on { Some(LargeKeyIndex::new(&cfg.bloom, cfg.large_value_bytes).map_err(build)?) } else { None };
    let replica = Replica::start(
        cfg.id,
        clock,
        queue,
        cfg.workers,
        cfg.large_value_bytes,
        storage.clone(),
        emulation.clone(),
        metrics.clone(),
        index,
    );
    replica.set_max_queue(cfg.max_queue);
    let every = (cfg.bloom_rebuild_ms > 0).then(|| Duration::from_millis(cfg.bloom_rebuild_ms));
    replica.start_bloom_rebuilds(every);
    let max_frame = cfg.max_value_bytes + FRAME_SLACK;
    let mut hlc = Hlc::new(cfg.id, Duration::from_millis(cfg.max_clock_offset_ms));
    if m > 1 {
        hlc = hlc.expecting_peers();
    }
    let hlc = Arc::new(hlc);
    let peers: Vec<Option<Arc<Peer>>> = cfg
        .members
        .iter()
        .map(|mem| {
            (mem.id != cfg.id).then(|| {
                let seal = Seal::new(cfg.cluster_secret.as_deref()).stamped(hlc.clone());
                let peer = Peer::new(cfg.id, mem.id, mem.peer, max_frame, cfg.down_after_misses, seal);
                Arc::new(match cfg.emulation.cross_delay(cfg.id, mem.id) {
                    Some(d) => peer.with_cross_delay(d),
                    None => peer,
                })
            })
        })
        .collect();
    let ring = Ring::new(m, cfg.replication, cfg.vnodes).map_err(|e| NodeError::Build(e.to_string()))?;
    let env = SelectorEnv {
        coordinator: cfg.id,
        coordinators: m,
        servers: m,
        replication: cfg.replication,
        workers: cfg.workers,
        seed,
    };
    let core = coordinator_core(&cfg, &env, &emulation)?;
    let ids = Arc::new(AtomicU64::new(1));
    let timeout = Duration::from_millis(cfg.request_timeout_ms);
    let hints = match cfg.hint_max_bytes {
        0 => None,
        max => Some(Arc::new(Hints::open(storage.clone(), m, max)?)),
    };
    // listening only once the storage is open: a node whose ports answer is past creating its
    // keyspaces, which a kill cut short left unopenable (seen in the repair tests under load)
    let client = match cfg.client_addr.port() {
        0 => None,
        _ => Some(bind(cfg.client_addr).await?),
    };
    let tls_client = match (cfg.tls_addr, tls) {
        (Some(addr), Some(acceptor)) => Some((bind(addr).await?, acceptor)),
        _ => None,
    };
    let internode = bind(cfg.peer_listen()).await?;
    let metrics_l = match cfg.metrics_addr {
        Some(a) => Some(bind(a).await?),
        None => None,
    };
    // recovering from now on (a node with peers), until they replayed their hints for it
    let recovery = crate::recovery::Recovery::start(cfg.id, m, Duration::from_secs(cfg.recovery_max_s), clock);
    let network = Arc::new(Network {
        id: cfg.id,
        replica: replica.clone(),
        peers: peers.clone(),
        ids: ids.clone(),
        timeout,
        metrics: metrics.clone(),
        recovery: Arc::new(recovery),
        copies: cfg.hedge_cancel.then(Default::default),
    });
    let coordinator = Coordinator::start(CoordinatorParts {
        clock: tokio::time::Instant::from_std(clock),
        ring,
        core,
        transport: network.clone(),
        ids: ids.clone(),
        timeout,
        metrics: metrics.clone(),
        hlc: hlc.clone(),
        hints: hints.clone(),
        emulation: Some(emulation.clone()),
    });
    let (budget, peer_budget) = (Budget::new(cfg.max_buffered_bytes), Budget::new(cfg.max_buffered_bytes));
    let seal = Seal::new(cfg.cluster_secret.as_deref()).stamped(hlc.clone());
    let repair_scans = tokio::sync::Semaphore::new(REPAIR_SCANS);
    let max_peer_connections = cfg.max_peer_connections;
    let max_buffered_bytes_per_client = cfg.max_buffered_bytes_per_client;
    let node = Arc::new(Node {
        cfg,
        storage,
        replica,
        coordinator,
        emulation,
        metrics,
        peers,
        hlc,
        hints,
        budget,
        peer_budget,
        client_shares: Shares::new(max_buffered_bytes_per_client),
        seal,
        network: network.clone(),
        repair_scans,
        clients: Default::default(),
        peer_slots: Arc::new(tokio::sync::Semaphore::new(max_peer_connections)),
    });
    let mut tasks = Vec::new();
    for p in node.peers.iter().flatten() {
        let hb = Duration::from_millis(node.cfg.heartbeat_ms);
        let (c, from) = (node.coordinator.clone(), p.id);
        let learn = move |fb: &tailor_core::facts::Feedback| c.facts(from, fb.clone());
        let (hlc, recovery) = (node.hlc.clone(), node.network.recovery.clone());
        tasks.push(tokio::spawn(p.clone().heartbeat(ids.clone(), hlc, recovery, hb, timeout.max(hb * 2), learn)));
    }
    if node.network.recovery.is_recovering() {
        tasks.push(tokio::spawn(node.network.recovery.clone().bounded()));
    }
    if bloom_on {
        // the local replica's deltas reach this coordinator at heartbeat pace too, not only on
        // the requests it happens to serve locally
        let n = node.clone();
        tasks.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(n.cfg.heartbeat_ms));
            loop {
                tick.tick().await;
                n.coordinator.facts(n.cfg.id, n.replica.feedback_for(Some(n.cfg.id)));
            }
        }));
    }
    if node.cfg.repair_every_s > 0 {
        tasks.push(tokio::spawn(repair_periodically(node.clone())));
    }
    if node.cfg.gc_every_s > 0 {
        tasks.push(tokio::spawn(crate::gc::periodically(node.clone())));
    }
    if let Some(h) = node.hints.clone() {
        let every = Duration::from_millis(node.cfg.hint_replay_ms);
        tasks.push(tokio::spawn(replay_hints(h, network, node.coordinator.clone(), every)));
    }
    tasks.push(tokio::spawn(crate::disk_watch::watch(node.clone())));
    tasks.push(tokio::spawn(crate::client_conn::serve(node.clone(), client, tls_client)));
    tasks.push(tokio::spawn(crate::peer_conn::serve(node.clone(), internode, max_frame)));
    if let Some(l) = metrics_l {
        let n = node.clone();
        let render = Arc::new(move || crate::scrape::render(&n));
        tasks.push(tokio::spawn(crate::metrics::serve(l, render)));
    }
    tracing::info!(target: TARGET, id = node.cfg.id, client = %node.cfg.client_addr, tls = ?node.cfg.tls_addr, selector = %node.cfg.selector, local = %node.cfg.local, "node up");
    shutdown.await;
    tracing::info!(target: TARGET, id = node.cfg.id, "node stopping");
    for t in tasks {
        t.abort();
    }
    node.replica.shutdown();
    node.storage.flush()?;
    Ok(())
}

/// The coordinator core this node's configuration asks for.
fn coordinator_core(cfg: &NodeConfig, env: &SelectorEnv, emulation: &Emulation) -> Result<CoordinatorCore, NodeError> {
    let err = |e: &dyn std::fmt::Display| NodeError::Build(e.to_string());
    let selector = tailor_core::selector::build(&cfg.selector, &cfg.effective_selectors(), env).map_err(|e| err(&e))?;
    let knowledge = Knowledge::Live { servers: cfg.members.len() };
    let service = emulation.service_model();
    let oracle = size::build(cfg.size_oracle, cfg.large_value_bytes, service, &cfg.bloom, knowledge)
        .map_err(|e| err(&format!("bloom: {e}")))?;
    let timeout = tailor_core::time::MS * cfg.request_timeout_ms;
    let core_cfg = CoordinatorConfig {
        id: cfg.id,
        read_consistency: cfg.read_consistency,
        write_consistency: cfg.write_consistency,
        read_repair: cfg.read_repair,
        park_capacity: cfg.park_capacity,
        park_timeout: Some(timeout),
        seed: env.seed,
    };
    let core = CoordinatorCore::new(core_cfg, selector, oracle);
    Ok(match cfg.speculation().map_err(|e| err(&e))? {
        Some(s) if cfg.hedge_cancel => core.with_speculation(s).with_hedge_cancel(),
        Some(s) => core.with_speculation(s),
        None => core,
    })
}

/// An anti-entropy pass every `repair_every_s` (the first one after a full period).
async fn repair_periodically(node: Arc<Node>) {
    let every = Duration::from_secs(node.cfg.repair_every_s);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tick.tick().await;
        // a pass logs its own start and end
        if let Err(e) = crate::anti_entropy::run(&node).await {
            tracing::error!(target: TARGET, "anti-entropy pass failed: {e}");
        }
    }
}

/// Replay hints to peers that are up, every `every`.
async fn replay_hints(hints: Arc<Hints>, network: Arc<Network>, coordinator: Arc<Coordinator>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    let tags = |key: &[u8], size: Option<u64>| coordinator.side_tags(key, size);
    loop {
        tick.tick().await;
        if let Err(e) = hints.replay(network.as_ref(), &tags).await {
            tracing::error!(target: TARGET, "hint replay failed: {e}");
        }
    }
}
