//! Connections to peers and the failure detector.
//!
//! One multiplexed TCP connection per peer: a writer task drains an outgoing channel and a
//! reader task routes replies to waiting callers by request id. A heartbeat every
//! `heartbeat_ms` (and every timed-out request) counts as a miss when unanswered; after
//! `down_after_misses` consecutive misses the peer is down, and one answered heartbeat brings it
//! back up. A heartbeat answered "unhealthy" (the node's workers cannot run requests) marks the
//! peer down at once: requests then go around it until it answers healthy again.
//!
//! Every new connection starts with a [`Message::Hello`] naming this node, so the remote replica
//! knows which coordinator's Bloom delta to piggyback on its replies.
//!
//! A heartbeat's answer also says whether the peer is recovering (restarted, not caught up:
//! kept here, set before the answer marks the peer up, so a peer back from a crash is never
//! taken for caught up) and how many hints it holds for this node (handed to this node's
//! [`Recovery`]).

use crate::hlc::Hlc;
use crate::internode::{read_frame, Message, Seal};
use crate::limits::Budget;
use crate::recovery::Recovery;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tailor_core::facts::Feedback;
use tailor_core::model::NodeId;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

/// Why a call to a peer failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum PeerError {
    /// No answer within the timeout.
    #[error("node {0} timed out")]
    Timeout(NodeId),
    /// The connection could not be made or broke.
    #[error("node {0} unreachable: {1}")]
    Unreachable(NodeId, String),
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Message>>>>;

struct Conn {
    tx: mpsc::Sender<Vec<u8>>,
    alive: Arc<AtomicBool>,
}

/// One remote node.
pub struct Peer {
    /// Signs and checks frames with the cluster secret.
    seal: Seal,
    /// Its node id.
    pub id: NodeId,
    /// This node's id (sent in the connection's hello).
    local: NodeId,
    addr: SocketAddr,
    max_frame: u64,
    conn: tokio::sync::Mutex<Option<Conn>>,
    pending: Pending,
    misses: AtomicU32,
    up: AtomicBool,
    down_after: u32,
    /// The recovery level its last heartbeat answer said (0: caught up; `recovery.rs`).
    recovering: AtomicU8,
    /// The emulated one-way delay to it when it sits in another rack (`emulation.racks`).
    cross_delay: Option<Duration>,
}

impl Peer {
    /// Peer `id` at `addr` as seen from node `local`, assumed up until heartbeats say otherwise.
    pub fn new(local: NodeId, id: NodeId, addr: SocketAddr, max_frame: u64, down_after: u32, seal: Seal) -> Peer {
        Peer {
            seal,
            id,
            local,
            addr,
            max_frame,
            conn: tokio::sync::Mutex::new(None),
            pending: Arc::default(),
            misses: AtomicU32::new(0),
            up: AtomicBool::new(true),
            down_after: down_after.max(1),
            // not heard yet: recovering as far as this node knows (`recovery.rs`)
            recovering: AtomicU8::new(1),
            cross_delay: None,
        }
    }

    /// The same peer in another rack: every frame to it and every reply from it takes `delay`
    /// more (the emulated cross-rack link; [`crate::internode::delay`]).
    pub fn with_cross_delay(mut self, delay: Duration) -> Peer {
        self.cross_delay = Some(delay);
        self
    }

    /// The recovery level the peer said (0: caught up; else it is not read at ONE while a
    /// replica of a lower level is up: `recovery.rs`).
    pub fn recovering(&self) -> u8 {
        self.recovering.load(Ordering::Relaxed)
    }

    /// The peer's answer said its recovery level.
    fn set_recovering(&self, level: u8) {
        let was = self.recovering.swap(level, Ordering::Relaxed);
        if (was == 0) != (level == 0) {
            let state = if level > 0 { "is recovering (not read at ONE)" } else { "caught up" };
            tracing::info!(peer = self.id, addr = %self.addr, "peer {state}");
        }
    }

    /// Whether the failure detector considers the peer up.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// Whether a connection to the peer is open now (not while one is being made).
    pub fn connected(&self) -> bool {
        self.conn.try_lock().is_ok_and(|c| c.as_ref().is_some_and(|c| c.alive.load(Ordering::Relaxed)))
    }

    /// Record an unanswered request or heartbeat.
    pub fn miss(&self) {
        let m = self.misses.fetch_add(1, Ordering::Relaxed) + 1;
        if m >= self.down_after && self.up.swap(false, Ordering::Relaxed) {
            tracing::warn!(peer = self.id, addr = %self.addr, misses = m, "peer marked down");
        }
    }

    /// The peer said its workers cannot run requests: down now, without waiting for misses.
    fn unhealthy(&self) {
        self.misses.store(self.down_after, Ordering::Relaxed);
        if self.up.swap(false, Ordering::Relaxed) {
            tracing::warn!(peer = self.id, addr = %self.addr, "peer marked down: it reports itself unhealthy");
        }
    }

    fn answered(&self) {
        self.misses.store(0, Ordering::Relaxed);
        if !self.up.swap(true, Ordering::Relaxed) {
            tracing::info!(peer = self.id, addr = %self.addr, "peer back up");
        }
    }

    async fn sender(&self, timeout: Duration) -> Result<mpsc::Sender<Vec<u8>>, PeerError> {
        let mut guard = self.conn.lock().await;
        if let Some(c) = guard.as_ref() {
            if c.alive.load(Ordering::Relaxed) {
                return Ok(c.tx.clone());
            }
        }
        let stream = tokio::time::timeout(timeout, TcpStream::connect(self.addr))
            .await
            .map_err(|_| PeerError::Timeout(self.id))?
            .map_err(|e| PeerError::Unreachable(self.id, e.to_string()))?;
        let _ = stream.set_nodelay(true);
        // logged once per connection: failed attempts (a peer down) are the failure detector's
        tracing::info!(peer = self.id, addr = %self.addr, "connected to peer");
        let (mut rd, wr) = stream.into_split();
        let (tx, rx) = mpsc::channel::<Vec<u8>>(1024);
        // queued before anything else can be: the first frame the peer reads
        let _ = tx.try_send(self.seal.encode(&Message::Hello { id: 0, from: self.local }));
        let rx = match self.cross_delay {
            Some(d) => crate::internode::delay::delayed(rx, d),
            None => rx,
        };
        let alive = Arc::new(AtomicBool::new(true));
        let a = alive.clone();
        tokio::spawn(async move {
            crate::internode::writer::write_frames(rx, wr).await;
            a.store(false, Ordering::Relaxed);
        });
        let a = alive.clone();
        let pending = self.pending.clone();
        let (max, id, seal, addr, delay) = (self.max_frame, self.id, self.seal.clone(), self.addr, self.cross_delay);
        tokio::spawn(async move {
            // replies to requests this node sent: bounded by the frame limit, not the budget
            let mut lease = Budget::unlimited().lease();
            let why = loop {
                let frame = read_frame(&mut rd, max, &mut lease).await;
                lease.resize(0).expect("shrinking a lease cannot fail");
                match frame {
                    Ok(Some(body)) => match seal.decode(&body) {
                        Ok(msg) => {
                            let waiter = pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&msg.id());
                            match (waiter, delay) {
                                (Some(w), None) => drop(w.send(msg)),
                                // the reply's way back over the slow link, without holding the reader
                                (Some(w), Some(d)) => drop(tokio::spawn(async move {
                                    tokio::time::sleep(d).await;
                                    let _ = w.send(msg);
                                })),
                                (None, _) => {}
                            }
                        }
                        Err(e) => break format!("bad frame: {e}"),
                    },
                    Ok(None) => break "closed by the peer".to_string(),
                    Err(e) => break e.to_string(),
                }
            };
            tracing::warn!(peer = id, %addr, %why, "connection to peer lost");
            a.store(false, Ordering::Relaxed);
            // fail every caller waiting on this connection now rather than at its timeout
            pending.lock().unwrap_or_else(|p| p.into_inner()).clear();
        });
        *guard = Some(Conn { tx: tx.clone(), alive });
        Ok(tx)
    }

    /// Send `msg` and wait for its reply (matched by id) for at most `timeout`.
    pub async fn call(&self, msg: Message, timeout: Duration) -> Result<Message, PeerError> {
        let id = msg.id();
        let (tx, rx) = oneshot::channel();
        let run = async {
            let sender = self.sender(timeout).await?;
            self.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(id, tx);
            sender
                .send(self.seal.encode(&msg))
                .await
                .map_err(|_| PeerError::Unreachable(self.id, "connection closed".into()))?;
            rx.await.map_err(|_| PeerError::Unreachable(self.id, "connection closed".into()))
        };
        let res = match tokio::time::timeout(timeout, run).await {
            Ok(r) => r,
            Err(_) => Err(PeerError::Timeout(self.id)),
        };
        if res.is_err() {
            self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        }
        res
    }

    /// Send `msg`, which has no reply, on the open connection if there is one (best effort: a
    /// cancel for a copy sent on a connection since lost has nothing left to cancel).
    pub fn tell(&self, msg: &Message) {
        let Ok(guard) = self.conn.try_lock() else { return };
        if let Some(c) = guard.as_ref().filter(|c| c.alive.load(Ordering::Relaxed)) {
            let _ = c.tx.try_send(self.seal.encode(msg));
        }
    }

    /// Heartbeat forever: ping every `every`, counting misses, measuring the peer's clock
    /// against `hlc` (and moving `hlc` past the peer's), keeping whether the peer is recovering,
    /// telling `recovery` how many hints it holds for this node, and handing each answer's facts
    /// to `on_feedback` (the coordinator's size oracle).
    pub async fn heartbeat(
        self: Arc<Self>,
        ids: Arc<AtomicU64>,
        hlc: Arc<Hlc>,
        recovery: Arc<Recovery>,
        every: Duration,
        timeout: Duration,
        on_feedback: impl Fn(&Feedback) + Send + 'static,
    ) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let id = ids.fetch_add(1, Ordering::Relaxed);
            let sent = hlc.wall_us();
            let answer = self.call(Message::Ping { id, clock: hlc.peek_us() }, timeout).await;
            if let Ok(Message::Pong { clock, wall, hints, recovering, .. }) = &answer {
                hlc.sample(self.id, *wall, sent, hlc.wall_us());
                hlc.observe_micros(*clock);
                // before `answered` may mark it up
                self.set_recovering(*recovering);
                recovery.heard(self.id, *hints, std::time::Instant::now());
            }
            match answer {
                Ok(Message::Pong { feedback, healthy: true, .. }) => {
                    self.answered();
                    on_feedback(&feedback);
                }
                Ok(Message::Pong { healthy: false, .. }) => self.unhealthy(),
                _ => self.miss(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misses_mark_down_and_an_answer_brings_up() {
        let p = Peer::new(0, 1, "127.0.0.1:1".parse().unwrap(), 1024, 3, Seal::new(None));
        assert!(p.is_up());
        p.miss();
        p.miss();
        assert!(p.is_up());
        p.miss();
        assert!(!p.is_up());
        p.answered();
        assert!(p.is_up());
        p.unhealthy();
        assert!(!p.is_up(), "one unhealthy answer is enough");
        p.answered();
        assert!(p.is_up());
    }

    #[tokio::test]
    async fn call_to_a_closed_port_fails() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let p = Peer::new(0, 1, addr, 1024, 3, Seal::new(None));
        assert!(p.call(Message::Ping { id: 1, clock: 0 }, Duration::from_secs(2)).await.is_err());
    }
}
