//! How a coordinator's copies reach replicas: the one seam between the coordinator driver and
//! the network. The node plugs in [`Network`] (the local replica's channel, peers over TCP);
//! tests plug in scripted replicas, so the store's own coordinator path runs under a virtual
//! clock (tokio's paused time) with answers, delays and failures chosen by the test.

use crate::internode::{Failure, Message};
use crate::metrics::Metrics;
use crate::peer::{Peer, PeerError};
use crate::recovery::Recovery;
use crate::replica::{Outcome, Replica, Work};
use crate::storage::Versioned;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use tailor_core::coordinator::{Send, SendKind, Ticket};
use tailor_core::facts::{Feedback, ProbeReply};
use tailor_core::model::NodeId;
use tailor_core::model::RequestId;
use tokio::sync::oneshot;
use tokio::sync::oneshot::error::TryRecvError;

/// A replica's answer to one copy, or why there is none.
pub type Exchanged = Result<(Outcome, Feedback), CopyError>;

/// Why a copy has no answer: what a coordinator, a hint replay or a repair does next depends on
/// which (a refused copy is never hinted or retried; a copy that failed or got no answer is).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct CopyError {
    /// What became of the copy.
    pub kind: CopyFailure,
    /// The replica's or the network's words.
    pub reason: String,
}

/// What became of a copy that has no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyFailure {
    /// The replica answered that it will never apply it (a key or value over its limits, the
    /// empty key): retrying or hinting it cannot help.
    Refused,
    /// The replica answered that it could not apply it now (busy, a storage error).
    Failed,
    /// The replica refused a version ahead of its clock by more than the allowed offset
    /// ([`Failure::FromTheFuture`]: not hinted, a hint of it retried a bounded number of times).
    FromTheFuture,
    /// No answer: a timeout, a broken connection, a stopped replica.
    Unreachable,
}

impl CopyError {
    /// A copy the replica refused for good.
    pub fn refused(reason: impl Into<String>) -> CopyError {
        CopyError { kind: CopyFailure::Refused, reason: reason.into() }
    }

    /// A copy the replica could not apply now.
    pub fn failed(reason: impl Into<String>) -> CopyError {
        CopyError { kind: CopyFailure::Failed, reason: reason.into() }
    }

    /// The replica's [`Message::Failed`] answer.
    pub fn answered(failure: Failure, reason: String) -> CopyError {
        let kind = match failure {
            Failure::Now => CopyFailure::Failed,
            Failure::ForGood => CopyFailure::Refused,
            Failure::FromTheFuture => CopyFailure::FromTheFuture,
        };
        CopyError { kind, reason }
    }

    /// A copy with no answer.
    pub fn unreachable(reason: impl Into<String>) -> CopyError {
        CopyError { kind: CopyFailure::Unreachable, reason: reason.into() }
    }
}

impl From<CopyError> for String {
    fn from(e: CopyError) -> String {
        e.reason
    }
}

/// An exchange in progress.
pub type Exchange<'a> = Pin<Box<dyn Future<Output = Exchanged> + std::marker::Send + 'a>>;

/// Where a coordinator's copies go.
pub trait Transport: std::marker::Send + Sync + 'static {
    /// Members of the cluster (node ids are `0..members`).
    fn members(&self) -> usize;

    /// The failure detector's verdict on member `node`.
    fn is_up(&self, node: NodeId) -> bool;

    /// Member `node`'s recovery level (0: caught up; `recovery.rs`): a read at ONE goes to the
    /// up replicas of the lowest level.
    fn recovering(&self, _node: NodeId) -> u8 {
        0
    }

    /// Execute `work` at `node` as the core's send `s` says; resolves with the answer, an error,
    /// or a timeout (every exchange ends).
    fn exchange(&self, node: NodeId, work: Work, s: Send) -> Exchange<'_>;

    /// Facts from `from` arrived (lets the local replica follow a peer's Bloom generation).
    fn observed(&self, _from: NodeId, _feedback: &Feedback) {}

    /// Whether an exchange with `node` may execute its job on the caller's thread (this node's
    /// own replica): the coordinator starts such exchanges after every other, so a slow or
    /// panicking local job never holds back the copies bound for peers.
    fn runs_here(&self, _node: NodeId) -> bool {
        false
    }

    /// The core cancelled the copy sent to `node` with `ticket` (a hedged read's losing copy):
    /// drop it there if it still waits. Best effort; its exchange still ends as every one does.
    fn cancel(&self, _node: NodeId, _ticket: Ticket) {}

    /// Ask `node` how loaded it is (a Prequal probe): its answer, or `None` when none came in
    /// time (the probe is then forgotten; a transport that cannot probe never answers).
    fn probe(&self, _node: NodeId) -> Probing<'_> {
        Box::pin(std::future::ready(None))
    }
}

/// A probe in progress ([`Transport::probe`]).
pub type Probing<'a> = Pin<Box<dyn Future<Output = Option<ProbeReply>> + std::marker::Send + 'a>>;

/// The real network: this node's replica through its channel, peers through their connections.
pub struct Network {
    /// This node.
    pub id: NodeId,
    /// This node's replica side.
    pub replica: Arc<Replica>,
    /// Peers by node id (`None` for this node).
    pub peers: Vec<Option<Arc<Peer>>>,
    /// Request id source shared with heartbeats.
    pub ids: Arc<AtomicU64>,
    /// Timeout of one replica request.
    pub timeout: Duration,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// This node's recovery state (its own replica's answer to [`Transport::recovering`]).
    pub recovery: Arc<Recovery>,
    /// The read copies in flight that a cancel can name: by (node, request) the id the replica
    /// knows the copy by (the wire id for a peer, the job id for this node's replica). `None`
    /// when this coordinator never cancels (`hedge_cancel` off): no map on the read path.
    pub copies: Option<Mutex<Copies>>,
}

impl Transport for Network {
    fn members(&self) -> usize {
        self.peers.len()
    }

    fn is_up(&self, node: NodeId) -> bool {
        match self.peers.get(node as usize) {
            Some(Some(p)) => p.is_up(),
            // this node's own replica: up while its workers can run (its heartbeats say the same)
            Some(None) => self.replica.healthy(),
            None => false,
        }
    }

    fn recovering(&self, node: NodeId) -> u8 {
        match self.peers.get(node as usize) {
            Some(Some(p)) => p.recovering(),
            Some(None) => self.recovery.level(|n| self.is_up(n)),
            None => 0,
        }
    }

    fn exchange(&self, node: NodeId, work: Work, s: Send) -> Exchange<'_> {
        Box::pin(async move {
            let reading = matches!(work, Work::Read { .. });
            let (outcome, feedback) = match self.peers.get(node as usize) {
                Some(None) => self.local(work, s).await?,
                Some(Some(peer)) => self.remote(peer, work, s).await?,
                None => return Err(CopyError::refused(format!("node {node} is not a member"))),
            };
            match (&outcome, reading) {
                (Outcome::Read(_), true) | (Outcome::Written(_), false) => Ok((outcome, feedback)),
                _ => Err(CopyError::failed(format!("node {node} answered with the wrong kind of reply"))),
            }
        })
    }

    fn observed(&self, from: NodeId, feedback: &Feedback) {
        if from != self.id {
            self.replica.observe_generation(feedback.bloom_generation);
        }
    }

    fn runs_here(&self, node: NodeId) -> bool {
        node == self.id
    }

    fn cancel(&self, node: NodeId, ticket: Ticket) {
        let Some(id) = self.copies.as_ref().and_then(|c| lock(c).remove(&(node, ticket.id))) else { return };
        match self.peers.get(node as usize) {
            Some(None) => {
                self.replica.cancel(id);
            }
            Some(Some(peer)) => peer.tell(&Message::Cancel { id }),
            None => {}
        }
    }

    fn probe(&self, node: NodeId) -> Probing<'_> {
        Box::pin(async move {
            match self.peers.get(node as usize)? {
                None => Some(self.replica.probe()),
                Some(peer) => {
                    // not a miss when unanswered: the failure detector's heartbeats judge liveness
                    let id = self.ids.fetch_add(1, Ordering::Relaxed);
                    match peer.call(Message::Probe { id }, self.timeout).await {
                        Ok(Message::ProbeReply { rif, latency, .. }) => Some(ProbeReply { rif, latency }),
                        _ => None,
                    }
                }
            }
        })
    }
}

/// Read copies by (node, request): the id the replica knows each by.
pub type Copies = HashMap<(NodeId, RequestId), u64>;

fn lock(copies: &Mutex<Copies>) -> std::sync::MutexGuard<'_, Copies> {
    copies.lock().unwrap_or_else(|p| p.into_inner())
}

impl Network {
    /// Run `exchange` for a read copy that a cancel may name by `id` meanwhile (writes are
    /// never cancelled: not tracked).
    async fn cancellable<R, F: Future<Output = R>>(&self, node: NodeId, s: &Send, id: u64, exchange: F) -> R {
        let copies = self.copies.as_ref().filter(|_| matches!(s.kind, SendKind::Read | SendKind::Hedge));
        let Some(copies) = copies else { return exchange.await };
        lock(copies).insert((node, s.ticket.id), id);
        let result = exchange.await;
        lock(copies).remove(&(node, s.ticket.id));
        result
    }

    async fn local(&self, work: Work, s: Send) -> Exchanged {
        let (job, rx) = self.replica.submit_tracked(work, s.tags, s.age, Some(self.id));
        self.cancellable(self.id, &s, job, self.local_answer(rx)).await
    }

    /// The local replica's answer, or a timeout.
    async fn local_answer(&self, mut rx: oneshot::Receiver<crate::replica::Done>) -> Exchanged {
        // a job the replica ran inline has answered already: no timer for it (arming one reads
        // the clock twice, about 3 % of a GET's CPU)
        let answer = match rx.try_recv() {
            Ok(done) => Ok(Ok(done)),
            Err(TryRecvError::Closed) => Ok(Err(())),
            Err(TryRecvError::Empty) => tokio::time::timeout(self.timeout, rx).await.map(|r| r.map_err(drop)),
        };
        match answer {
            Ok(Ok(done)) => done.outcome.map(|o| (o, done.feedback)).map_err(CopyError::failed),
            Ok(Err(())) => Err(CopyError::unreachable("local replica stopped")),
            Err(_) => {
                self.metrics.timeouts.fetch_add(1, Ordering::Relaxed);
                Err(CopyError::unreachable(format!("node {} timed out", self.id)))
            }
        }
    }

    async fn remote(&self, peer: &Peer, work: Work, s: Send) -> Exchanged {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let msg = match work {
            Work::Read { key } => Message::Read { id, key, tags: s.tags, age: s.age },
            Work::Write { key, version, value } => {
                Message::Write { id, key, version, value: value.map(Arc::unwrap_or_clone), tags: s.tags, age: s.age }
            }
        };
        match self.cancellable(peer.id, &s, id, peer.call(msg, self.timeout)).await {
            Ok(Message::ReadReply { version, value, feedback, .. }) => {
                Ok((Outcome::Read(Versioned { version, value }), feedback))
            }
            Ok(Message::WriteAck { applied, feedback, .. }) => Ok((Outcome::Written(applied), feedback)),
            Ok(Message::Failed { reason, failure, .. }) => Err(CopyError::answered(failure, reason)),
            Ok(other) => Err(CopyError::failed(format!("unexpected reply {other:?}"))),
            Err(e) => {
                if matches!(e, PeerError::Timeout(_)) {
                    self.metrics.timeouts.fetch_add(1, Ordering::Relaxed);
                }
                peer.miss();
                Err(CopyError::unreachable(e.to_string()))
            }
        }
    }
}
