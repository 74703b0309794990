//! A node: wires storage, replica, coordinator, peers and the three listeners (RESP clients,
//! internode, metrics), and runs until asked to stop.

use crate::commands;
use crate::config::NodeConfig;
use crate::coordinator::{Coordinator, CoordinatorParts};
use crate::emulation::Emulation;
use crate::hints::Hints;
use crate::hlc::Hlc;
use crate::internode::{decode, encode, read_frame, Message};
use crate::metrics::Metrics;
use crate::peer::Peer;
use crate::replica::{Outcome, Replica, Work};
use crate::resp::{parse_bulk_header, parse_command, Limits, Parsed, Reply};
use crate::storage::Storage;
use crate::transport::Network;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tailor_core::coordinator::{CoordinatorConfig, CoordinatorCore};
use tailor_core::oracle::bloom::LargeKeyIndex;
use tailor_core::oracle::size::{self, Knowledge, OracleKind};
use tailor_core::ring::Ring;
use tailor_core::selector::SelectorEnv;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

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
}

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
    let client = bind(cfg.client_addr).await?;
    let internode = bind(cfg.peer_listen()).await?;
    let metrics_l = match cfg.metrics_addr {
        Some(a) => Some(bind(a).await?),
        None => None,
    };
    std::fs::create_dir_all(&cfg.data_dir).map_err(|e| NodeError::Build(format!("data_dir: {e}")))?;
    let storage = Arc::new(Storage::open(&cfg.data_dir, cfg.durability)?);
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
    let every = (cfg.bloom_rebuild_ms > 0).then(|| Duration::from_millis(cfg.bloom_rebuild_ms));
    replica.start_bloom_rebuilds(every);
    let max_frame = cfg.max_value_bytes + FRAME_SLACK;
    let peers: Vec<Option<Arc<Peer>>> = cfg
        .members
        .iter()
        .map(|mem| {
            (mem.id != cfg.id).then(|| Arc::new(Peer::new(cfg.id, mem.id, mem.peer, max_frame, cfg.down_after_misses)))
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
    let hlc = Arc::new(Hlc::new(cfg.id, Duration::from_millis(cfg.max_clock_offset_ms)));
    let hints = match cfg.hint_max_bytes {
        0 => None,
        max => Some(Arc::new(Hints::open(storage.clone(), m, max)?)),
    };
    let network = Arc::new(Network {
        id: cfg.id,
        replica: replica.clone(),
        peers: peers.clone(),
        ids: ids.clone(),
        timeout,
        metrics: metrics.clone(),
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
    });
    let node = Arc::new(Node { cfg, storage, replica, coordinator, emulation, metrics, peers, hlc, hints });
    let mut tasks = Vec::new();
    for p in node.peers.iter().flatten() {
        let hb = Duration::from_millis(node.cfg.heartbeat_ms);
        let (c, from) = (node.coordinator.clone(), p.id);
        let learn = move |fb: &tailor_core::facts::Feedback| c.facts(from, fb.clone());
        tasks.push(tokio::spawn(p.clone().heartbeat(ids.clone(), hb, timeout.max(hb * 2), learn)));
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
    if let Some(h) = node.hints.clone() {
        tasks.push(tokio::spawn(replay_hints(h, network, Duration::from_millis(node.cfg.hint_replay_ms))));
    }
    tasks.push(tokio::spawn(serve_clients(node.clone(), client)));
    tasks.push(tokio::spawn(serve_internode(node.clone(), internode, max_frame)));
    if let Some(l) = metrics_l {
        let n = node.clone();
        let render = Arc::new(move || render_metrics(&n));
        tasks.push(tokio::spawn(crate::metrics::serve(l, render)));
    }
    tracing::info!(id = node.cfg.id, client = %node.cfg.client_addr, selector = %node.cfg.selector, local = %node.cfg.local, "node up");
    shutdown.await;
    tracing::info!(id = node.cfg.id, "node stopping");
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
    let selector = tailor_core::selector::build(&cfg.selector, &cfg.selectors, env).map_err(|e| err(&e))?;
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
    Ok(CoordinatorCore::new(core_cfg, selector, oracle))
}

/// Replay hints to peers that are up, every `every`.
async fn replay_hints(hints: Arc<Hints>, network: Arc<Network>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        if let Err(e) = hints.replay(network.as_ref()).await {
            tracing::error!("hint replay failed: {e}");
        }
    }
}

fn render_metrics(node: &Node) -> String {
    let id = node.cfg.id;
    let mut gauges = vec![
        (format!("tailor_queue_length{{node=\"{id}\"}}"), node.replica.queue_len() as f64),
        (format!("tailor_workers{{node=\"{id}\"}}"), node.replica.workers() as f64),
    ];
    gauges.push((format!("tailor_read_repairs_total{{node=\"{id}\"}}"), node.coordinator.read_repairs() as f64));
    if let Some(h) = &node.hints {
        let st = h.stats();
        gauges.push((format!("tailor_hints_pending{{node=\"{id}\"}}"), st.pending as f64));
        gauges.push((format!("tailor_hints_stored_total{{node=\"{id}\"}}"), st.stored as f64));
        gauges.push((format!("tailor_hints_replayed_total{{node=\"{id}\"}}"), st.replayed as f64));
        gauges.push((format!("tailor_hints_dropped_total{{node=\"{id}\"}}"), st.dropped as f64));
    }
    for p in node.peers.iter().flatten() {
        gauges.push((format!("tailor_peer_up{{node=\"{id}\",peer=\"{}\"}}", p.id), p.is_up() as u8 as f64));
    }
    node.metrics.render(id, &node.cfg.selector, &node.cfg.local, &gauges)
}

async fn serve_clients(node: Arc<Node>, listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                let _ = sock.set_nodelay(true);
                tokio::spawn(client_conn(node.clone(), sock));
            }
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Bytes of an oversized argument (and the elements after it) still to throw away.
struct Discard {
    skip: u64,
    rest: usize,
    len: u64,
}

async fn client_conn(node: Arc<Node>, mut sock: TcpStream) {
    let limits = Limits::for_values(node.cfg.max_value_bytes);
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut start = 0usize;
    let mut out = Vec::new();
    let mut discard: Option<Discard> = None;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        // execute every complete command in the buffer, then flush replies together (pipelining)
        let mut close = false;
        loop {
            if let Some(d) = discard.as_mut() {
                if d.skip > 0 {
                    let take = d.skip.min((buf.len() - start) as u64);
                    start += take as usize;
                    d.skip -= take;
                    if d.skip > 0 {
                        break;
                    }
                }
                if d.rest > 0 {
                    match parse_bulk_header(&buf[start..], &limits) {
                        Ok(Some((len, used))) => {
                            start += used;
                            d.skip = len + 2;
                            d.rest -= 1;
                            continue;
                        }
                        Ok(None) => break,
                        Err(e) => {
                            node.metrics.protocol_errors.fetch_add(1, Ordering::Relaxed);
                            Reply::err(e).encode(&mut out);
                            close = true;
                            break;
                        }
                    }
                }
                let len = d.len;
                discard = None;
                Reply::err(format!("argument of {len} bytes exceeds the maximum of {} bytes", limits.max_arg))
                    .encode(&mut out);
                continue;
            }
            match parse_command(&buf[start..], &limits) {
                Ok(Parsed::Incomplete) => break,
                Ok(Parsed::Skip { used }) => start += used,
                Ok(Parsed::Command { args, used }) => {
                    start += used;
                    let done = commands::execute(&node, args).await;
                    done.reply.encode(&mut out);
                    if done.close {
                        close = true;
                        break;
                    }
                }
                Ok(Parsed::TooLarge { used, skip, rest, len }) => {
                    start += used;
                    discard = Some(Discard { skip, rest, len });
                }
                Err(e) => {
                    node.metrics.protocol_errors.fetch_add(1, Ordering::Relaxed);
                    Reply::err(e).encode(&mut out);
                    close = true;
                    break;
                }
            }
        }
        if !out.is_empty() {
            if sock.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        if close {
            let _ = sock.shutdown().await;
            return;
        }
        // compact consumed bytes so the buffer never holds more than one pending command
        if start > 0 {
            buf.drain(..start);
            start = 0;
        }
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

async fn serve_internode(node: Arc<Node>, listener: TcpListener, max_frame: u64) {
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                let _ = sock.set_nodelay(true);
                tokio::spawn(internode_conn(node.clone(), sock, max_frame));
            }
            Err(e) => {
                tracing::warn!("internode accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn internode_conn(node: Arc<Node>, sock: TcpStream, max_frame: u64) {
    let (mut rd, mut wr) = sock.into_split();
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(1024);
    // the coordinator on the other end, once its hello arrived (its Bloom delta cursor)
    let mut receiver: Option<u32> = None;
    let writer = tokio::spawn(async move {
        while let Some(frame) = rx.recv().await {
            if wr.write_all(&frame).await.is_err() {
                break;
            }
        }
    });
    loop {
        let body = match read_frame(&mut rd, max_frame).await {
            Ok(Some(b)) => b,
            Ok(None) => break,
            Err(e) => {
                node.metrics.protocol_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("dropping internode connection: {e}");
                break;
            }
        };
        let msg = match decode(&body) {
            Ok(m) => m,
            Err(e) => {
                node.metrics.protocol_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("dropping internode connection: {e}");
                break;
            }
        };
        let (id, work, tags, age) = match msg {
            Message::Hello { from, .. } if (from as usize) < node.cfg.members.len() => {
                receiver = Some(from);
                continue;
            }
            Message::Ping { id } => {
                let _ = tx.send(encode(&Message::Pong { id, feedback: node.replica.feedback_for(receiver) })).await;
                continue;
            }
            Message::Read { id, key, tags, age } => (id, Work::Read { key }, tags, age),
            Message::Write { id, key, version, value } => {
                if value.as_ref().is_some_and(|v| v.len() as u64 > node.cfg.max_value_bytes) {
                    let reason = "value exceeds the maximum size".to_string();
                    let _ = tx.send(encode(&Message::Failed { id, reason })).await;
                    continue;
                }
                if let Err(e) = node.hlc.admit(version) {
                    node.metrics.protocol_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!("refusing a write from a peer: {e}");
                    let _ = tx.send(encode(&Message::Failed { id, reason: e.to_string() })).await;
                    continue;
                }
                (id, Work::Write { key, version, value }, Default::default(), 0)
            }
            other => {
                node.metrics.protocol_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("dropping internode connection: unexpected {:?} request", other.id());
                break;
            }
        };
        let done = node.replica.submit(work, tags, age, receiver);
        let tx = tx.clone();
        tokio::spawn(async move {
            let reply = match done.await {
                Ok(d) => match d.outcome {
                    Ok(Outcome::Read(v)) => {
                        Message::ReadReply { id, version: v.version, value: v.value, feedback: d.feedback }
                    }
                    Ok(Outcome::Written(applied)) => Message::WriteAck { id, applied, feedback: d.feedback },
                    Err(reason) => Message::Failed { id, reason },
                },
                Err(_) => Message::Failed { id, reason: "replica stopped".into() },
            };
            let _ = tx.send(encode(&reply)).await;
        });
    }
    drop(tx);
    // let replies already queued go out; the writer ends when the last sender (a pending job) drops
    let _ = writer.await;
}
