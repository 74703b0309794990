//! How a coordinator's copies reach replicas: the one seam between the coordinator driver and
//! the network. The node plugs in [`Network`] (the local replica's channel, peers over TCP);
//! tests plug in scripted replicas, so the store's own coordinator path runs under a virtual
//! clock (tokio's paused time) with answers, delays and failures chosen by the test.

use crate::internode::Message;
use crate::metrics::Metrics;
use crate::peer::{Peer, PeerError};
use crate::replica::{Outcome, Replica, Work};
use crate::storage::Versioned;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tailor_core::coordinator::Send;
use tailor_core::facts::Feedback;
use tailor_core::model::NodeId;
use tokio::sync::oneshot::error::TryRecvError;

/// A replica's answer to one copy, or why there is none.
pub type Exchanged = Result<(Outcome, Feedback), String>;

/// An exchange in progress.
pub type Exchange<'a> = Pin<Box<dyn Future<Output = Exchanged> + std::marker::Send + 'a>>;

/// Where a coordinator's copies go.
pub trait Transport: std::marker::Send + Sync + 'static {
    /// Members of the cluster (node ids are `0..members`).
    fn members(&self) -> usize;

    /// The failure detector's verdict on member `node`.
    fn is_up(&self, node: NodeId) -> bool;

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
}

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

    fn exchange(&self, node: NodeId, work: Work, s: Send) -> Exchange<'_> {
        Box::pin(async move {
            let reading = matches!(work, Work::Read { .. });
            let (outcome, feedback) = match self.peers.get(node as usize) {
                Some(None) => self.local(work, s).await?,
                Some(Some(peer)) => self.remote(peer, work, s).await?,
                None => return Err(format!("node {node} is not a member")),
            };
            match (&outcome, reading) {
                (Outcome::Read(_), true) | (Outcome::Written(_), false) => Ok((outcome, feedback)),
                _ => Err(format!("node {node} answered with the wrong kind of reply")),
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
}

impl Network {
    async fn local(&self, work: Work, s: Send) -> Exchanged {
        let mut rx = self.replica.submit(work, s.tags, s.age, Some(self.id));
        // a job the replica ran inline has answered already: no timer for it (arming one reads
        // the clock twice, about 3 % of a GET's CPU)
        let answer = match rx.try_recv() {
            Ok(done) => Ok(Ok(done)),
            Err(TryRecvError::Closed) => Ok(Err(())),
            Err(TryRecvError::Empty) => tokio::time::timeout(self.timeout, rx).await.map(|r| r.map_err(drop)),
        };
        match answer {
            Ok(Ok(done)) => done.outcome.map(|o| (o, done.feedback)),
            Ok(Err(())) => Err("local replica stopped".into()),
            Err(_) => {
                self.metrics.timeouts.fetch_add(1, Ordering::Relaxed);
                Err(format!("node {} timed out", self.id))
            }
        }
    }

    async fn remote(&self, peer: &Peer, work: Work, s: Send) -> Exchanged {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let msg = match work {
            Work::Read { key } => Message::Read { id, key, tags: s.tags, age: s.age },
            Work::Write { key, version, value } => {
                Message::Write { id, key, version, value: value.map(Arc::unwrap_or_clone) }
            }
        };
        match peer.call(msg, self.timeout).await {
            Ok(Message::ReadReply { version, value, feedback, .. }) => {
                Ok((Outcome::Read(Versioned { version, value }), feedback))
            }
            Ok(Message::WriteAck { applied, feedback, .. }) => Ok((Outcome::Written(applied), feedback)),
            Ok(Message::Failed { reason, .. }) => Err(reason),
            Ok(other) => Err(format!("unexpected reply {other:?}")),
            Err(e) => {
                if matches!(e, PeerError::Timeout(_)) {
                    self.metrics.timeouts.fetch_add(1, Ordering::Relaxed);
                }
                peer.miss();
                Err(e.to_string())
            }
        }
    }
}
