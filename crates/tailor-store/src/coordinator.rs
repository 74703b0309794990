//! The coordinator path: reads pick a replica through the configured selector (parking when it
//! says wait, retrying on the next replica after a timeout); writes go to every replica and are
//! acknowledged at the configured consistency level.
//!
//! Choices on ambiguous points:
//! - A failed or timed-out read is reported to the selector as a response with `fresh: false`
//!   and empty facts, so its in-flight counts stay balanced; the retry asks the selector again
//!   among the replicas not yet tried, and takes the first of them if it says wait.
//! - Write acknowledgements carry facts that pass the freshness gate, but are not given to
//!   `on_response`: selectors only count requests they chose.
//! - The size oracle is configured (`size_oracle`). `exact` (the default): a table of sizes this
//!   coordinator has seen (writes it handled, values it read), bounded at 1 M keys, hints carry
//!   the byte count. `bloom` (Héron): a [`BloomSizeOracle`] that learns from the Bloom deltas
//!   piggybacked on every reply, write ack and heartbeat reply, whatever their freshness (bits
//!   are idempotent); its hints carry only `large`. Either way a hint marks values above
//!   `large_value_bytes` as large, and the coordinator raises the selector's `size_class` tag to
//!   1 for them (RML's sub-queue).
//! - Every feedback also tells the local replica the sender's Bloom generation, so a replica
//!   behind its peers rebuilds up to theirs (see `replica.rs`).
//! - Parked requests are re-offered on every response from their group and by a 2 ms tick
//!   (which also covers `retry_at` and the selector's own timers); a parked request waits at most
//!   the request timeout.
//! - Reads at QUORUM or ALL skip the selector: they ask every up replica and return the newest
//!   version once enough answered.

use crate::config::Consistency;
use crate::internode::Message;
use crate::metrics::Metrics;
use crate::peer::{Peer, PeerError};
use crate::replica::{Outcome, Replica, Work};
use crate::storage::Versioned;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tailor_core::facts::{Feedback, Freshness, Response};
use tailor_core::model::{NodeId, Op, RequestView, SizeHint, Tags};
use tailor_core::oracle::bloom::BloomSizeOracle;
use tailor_core::oracle::size::SizeOracle;
use tailor_core::ring::{ReplicaSet, Ring};
use tailor_core::selector::{Blind, Decision, ReplicaSelector};
use tailor_core::time::Nanos;
use tokio::sync::{mpsc, oneshot};

/// Why a client request failed at the coordinator.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum CoordError {
    /// Every replica of the key is down.
    #[error("no replica of this key is up")]
    NoReplica,
    /// The replica group's park queue is full or the request waited too long.
    #[error("replica group busy, try again")]
    Busy,
    /// Fewer replicas answered than the consistency level needs.
    #[error("consistency level needs {need} replicas, {got} answered ({last})")]
    NotEnough {
        /// Replies needed.
        need: usize,
        /// Replies received.
        got: usize,
        /// The last failure seen.
        last: String,
    },
}

/// Where a request goes: a replica and the tags it carries.
type Route = (NodeId, Tags);

/// The first decision for a read: go now, or wait parked for a grant.
enum First {
    Go(Route),
    Parked(oneshot::Receiver<Route>),
}

struct Parked {
    view: RequestView,
    full: ReplicaSet,
    grant: oneshot::Sender<Route>,
}

/// Most keys the size oracle remembers before it starts over.
const ORACLE_CAPACITY: usize = 1 << 20;

/// One node's coordinator.
pub struct Coordinator {
    id: NodeId,
    clock: Instant,
    ring: Ring,
    selector: Mutex<Box<dyn ReplicaSelector>>,
    freshness: Mutex<Freshness>,
    parked: Mutex<HashMap<NodeId, VecDeque<Parked>>>,
    park_capacity: usize,
    sizes: Mutex<HashMap<u64, u64>>,
    bloom: Option<Mutex<BloomSizeOracle>>,
    large: u64,
    replica: Arc<Replica>,
    peers: Vec<Option<Arc<Peer>>>,
    ids: Arc<AtomicU64>,
    timeout: Duration,
    read_cl: AtomicU8,
    write_cl: AtomicU8,
    last_version: AtomicU64,
    metrics: Arc<Metrics>,
}

fn cl_to_u8(c: Consistency) -> u8 {
    match c {
        Consistency::One => 0,
        Consistency::Quorum => 1,
        Consistency::All => 2,
    }
}

fn u8_to_cl(v: u8) -> Consistency {
    match v {
        0 => Consistency::One,
        1 => Consistency::Quorum,
        _ => Consistency::All,
    }
}

/// What a replica answered.
struct Answer {
    outcome: Outcome,
    feedback: Feedback,
}

/// Everything a coordinator is built from.
pub struct CoordinatorParts {
    /// This node.
    pub id: NodeId,
    /// The node's monotonic clock origin.
    pub clock: Instant,
    /// The token ring.
    pub ring: Ring,
    /// The selector built for this node.
    pub selector: Box<dyn ReplicaSelector>,
    /// Park queue bound per replica group.
    pub park_capacity: usize,
    /// Large-value threshold of the size oracle.
    pub large: u64,
    /// Héron's Bloom size oracle, or `None` for the exact table.
    pub bloom: Option<BloomSizeOracle>,
    /// This node's replica side.
    pub replica: Arc<Replica>,
    /// Peers by node id (`None` for this node).
    pub peers: Vec<Option<Arc<Peer>>>,
    /// Request id source shared with heartbeats.
    pub ids: Arc<AtomicU64>,
    /// Timeout of one replica request.
    pub timeout: Duration,
    /// Read consistency.
    pub read_consistency: Consistency,
    /// Write consistency.
    pub write_consistency: Consistency,
    /// Counters.
    pub metrics: Arc<Metrics>,
}

impl Coordinator {
    /// Build from its parts and start the parking tick.
    pub fn start(p: CoordinatorParts) -> Arc<Coordinator> {
        let c = Arc::new(Coordinator {
            id: p.id,
            clock: p.clock,
            ring: p.ring,
            selector: Mutex::new(p.selector),
            freshness: Mutex::new(Freshness::default()),
            parked: Mutex::new(HashMap::new()),
            park_capacity: p.park_capacity,
            sizes: Mutex::new(HashMap::new()),
            bloom: p.bloom.map(Mutex::new),
            large: p.large,
            replica: p.replica,
            peers: p.peers,
            ids: p.ids,
            timeout: p.timeout,
            read_cl: AtomicU8::new(cl_to_u8(p.read_consistency)),
            write_cl: AtomicU8::new(cl_to_u8(p.write_consistency)),
            last_version: AtomicU64::new(0),
            metrics: p.metrics,
        });
        let weak = Arc::downgrade(&c);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(2));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tick.tick().await;
                let Some(c) = weak.upgrade() else { break };
                c.on_tick();
            }
        });
        c
    }

    fn now(&self) -> Nanos {
        self.clock.elapsed().as_nanos() as Nanos
    }

    fn sel(&self) -> std::sync::MutexGuard<'_, Box<dyn ReplicaSelector>> {
        self.selector.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Set the read or write consistency level at runtime.
    pub fn set_consistency(&self, write: bool, c: Consistency) {
        let a = if write { &self.write_cl } else { &self.read_cl };
        a.store(cl_to_u8(c), Ordering::Relaxed);
    }

    /// The current (read, write) consistency levels.
    pub fn consistency(&self) -> (Consistency, Consistency) {
        (u8_to_cl(self.read_cl.load(Ordering::Relaxed)), u8_to_cl(self.write_cl.load(Ordering::Relaxed)))
    }

    /// Whether `node` is up as far as this coordinator knows (itself always is).
    pub fn is_up(&self, node: NodeId) -> bool {
        match self.peers.get(node as usize) {
            Some(Some(p)) => p.is_up(),
            Some(None) => true,
            None => false,
        }
    }

    fn hint(&self, h: u64) -> SizeHint {
        if let Some(b) = &self.bloom {
            return b.lock().unwrap_or_else(|p| p.into_inner()).hint(h);
        }
        let bytes = self.sizes.lock().unwrap_or_else(|p| p.into_inner()).get(&h).copied();
        SizeHint { bytes, service: None, large: bytes.is_some_and(|b| b > self.large) }
    }

    /// The size hint this coordinator's oracle gives for `key` (admin command `size_class`).
    pub fn size_hint(&self, key: &[u8]) -> SizeHint {
        self.hint(crate::key_hash(key))
    }

    /// The generation of the Bloom oracle's answers (`None` with the exact table).
    pub fn oracle_generation(&self) -> Option<u32> {
        self.bloom.as_ref().map(|b| b.lock().unwrap_or_else(|p| p.into_inner()).generation())
    }

    /// Fold a replica's facts into the size oracle (every reply, ack and heartbeat reply), and
    /// let the local replica catch up with the sender's Bloom generation.
    pub fn learn(&self, fb: &Feedback) {
        if let Some(b) = &self.bloom {
            b.lock().unwrap_or_else(|p| p.into_inner()).learn(fb);
        }
        if fb.from != self.id {
            self.replica.observe_generation(fb.bloom_generation);
        }
    }

    fn learn_size(&self, h: u64, size: u64) {
        if self.bloom.is_some() {
            return;
        }
        let mut s = self.sizes.lock().unwrap_or_else(|p| p.into_inner());
        if s.len() >= ORACLE_CAPACITY {
            s.clear();
        }
        s.insert(h, size);
    }

    fn next_version(&self) -> u64 {
        let wall =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
        let candidate = (wall << 8) | (self.id as u64 & 0xff);
        let prev = self.last_version.fetch_max(candidate, Ordering::Relaxed);
        if candidate > prev {
            candidate
        } else {
            // same microsecond or clock went back: step past the last one, keeping our id bits
            let v = ((prev >> 8) + 1) << 8 | (self.id as u64 & 0xff);
            self.last_version.fetch_max(v, Ordering::Relaxed);
            v
        }
    }

    async fn exchange(&self, node: NodeId, work: Work, tags: Tags) -> Result<Answer, String> {
        let timeout = self.timeout;
        match self.peers.get(node as usize) {
            Some(None) => {
                let rx = self.replica.submit(work, tags, Some(self.id));
                match tokio::time::timeout(timeout, rx).await {
                    Ok(Ok(done)) => {
                        self.learn(&done.feedback);
                        done.outcome.map(|outcome| Answer { outcome, feedback: done.feedback })
                    }
                    Ok(Err(_)) => Err("local replica stopped".into()),
                    Err(_) => {
                        self.metrics.timeouts.fetch_add(1, Ordering::Relaxed);
                        Err(format!("node {node} timed out"))
                    }
                }
            }
            Some(Some(peer)) => {
                let id = self.ids.fetch_add(1, Ordering::Relaxed);
                let msg = match work {
                    Work::Read { key } => Message::Read { id, key, tags },
                    Work::Write { key, version, value } => Message::Write { id, key, version, value },
                };
                match peer.call(msg, timeout).await {
                    Ok(Message::ReadReply { version, value, feedback, .. }) => {
                        self.learn(&feedback);
                        Ok(Answer { outcome: Outcome::Read(Versioned { version, value }), feedback })
                    }
                    Ok(Message::WriteAck { applied, feedback, .. }) => {
                        self.learn(&feedback);
                        Ok(Answer { outcome: Outcome::Written(applied), feedback })
                    }
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
            None => Err(format!("node {node} is not a member")),
        }
    }

    /// Decide where a fresh read goes, parking it if the selector says wait.
    fn first_decision(&self, view: &RequestView, full: ReplicaSet) -> Result<First, CoordError> {
        let up = full.retain_up(|n| !self.is_up(n));
        if up.is_empty() {
            return Err(CoordError::NoReplica);
        }
        let group = full[0];
        let mut parked = self.parked.lock().unwrap_or_else(|p| p.into_inner());
        let queue_len = parked.get(&group).map_or(0, |q| q.len());
        if queue_len == 0 {
            let now = self.now();
            let mut sel = self.sel();
            if let Decision::Send { replica, tags } = sel.select(now, view, &up, &Blind) {
                let replica = if up.contains(&replica) { replica } else { up[0] };
                sel.on_sent(now, view, replica);
                return Ok(First::Go((replica, tags)));
            }
        }
        if queue_len >= self.park_capacity {
            self.metrics.park_rejected.fetch_add(1, Ordering::Relaxed);
            return Err(CoordError::Busy);
        }
        let (tx, rx) = oneshot::channel();
        parked.entry(group).or_default().push_back(Parked { view: *view, full, grant: tx });
        self.metrics.parked.fetch_add(1, Ordering::Relaxed);
        Ok(First::Parked(rx))
    }

    /// Offer the parked heads of `group` to the selector again.
    fn wake(&self, group: NodeId) {
        let mut parked = self.parked.lock().unwrap_or_else(|p| p.into_inner());
        let Some(q) = parked.get_mut(&group) else { return };
        while let Some(head) = q.front() {
            if head.grant.is_closed() {
                q.pop_front();
                continue;
            }
            let up = head.full.retain_up(|n| !self.is_up(n));
            if up.is_empty() {
                break;
            }
            let now = self.now();
            let mut sel = self.sel();
            match sel.select(now, &head.view, &up, &Blind) {
                Decision::Send { replica, tags } => {
                    let replica = if up.contains(&replica) { replica } else { up[0] };
                    sel.on_sent(now, &head.view, replica);
                    drop(sel);
                    if let Some(h) = q.pop_front() {
                        let _ = h.grant.send((replica, tags));
                    }
                }
                Decision::Wait { .. } => break,
            }
        }
        if q.is_empty() {
            parked.remove(&group);
        }
    }

    fn on_tick(&self) {
        let now = self.now();
        {
            let mut sel = self.sel();
            if sel.next_timer().is_some_and(|t| t <= now) {
                sel.on_timer(now);
            }
        }
        let groups: Vec<NodeId> = self.parked.lock().unwrap_or_else(|p| p.into_inner()).keys().copied().collect();
        for g in groups {
            self.wake(g);
        }
    }

    fn report(&self, view: &RequestView, replica: NodeId, sent_at: Nanos, large: bool, feedback: Option<Feedback>) {
        let now = self.now();
        let fresh = match &feedback {
            Some(f) => self.freshness.lock().unwrap_or_else(|p| p.into_inner()).accept(replica, f.timestamp),
            None => false,
        };
        if feedback.is_some() && !fresh {
            self.metrics.stale_feedback.fetch_add(1, Ordering::Relaxed);
        }
        let feedback = Feedback { from: replica, ..feedback.unwrap_or_default() };
        let resp = Response { request: view.id, replica, sent_at, large, feedback, fresh };
        self.sel().on_response(now, &resp);
    }

    /// Read `key` at the configured read consistency.
    pub async fn read(self: &Arc<Self>, key: &[u8]) -> Result<Versioned, CoordError> {
        match u8_to_cl(self.read_cl.load(Ordering::Relaxed)) {
            Consistency::One => self.read_one(key).await,
            cl => self.read_many(key, cl).await,
        }
    }

    async fn read_one(&self, key: &[u8]) -> Result<Versioned, CoordError> {
        let h = crate::key_hash(key);
        let full = self.ring.replicas(h);
        let group = full[0];
        let hint = self.hint(h);
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let view = RequestView { id, key: h, op: Op::Read, release: self.now(), coordinator: self.id, hint };
        let mut tried: Vec<NodeId> = Vec::new();
        let mut last = String::new();
        loop {
            let (replica, mut tags) = if tried.is_empty() {
                match self.first_decision(&view, full)? {
                    First::Go(x) => x,
                    First::Parked(rx) => match tokio::time::timeout(self.timeout, rx).await {
                        Ok(Ok(x)) => x,
                        _ => return Err(CoordError::Busy),
                    },
                }
            } else {
                let up = full.retain_up(|n| tried.contains(&n) || !self.is_up(n));
                if up.is_empty() {
                    return Err(CoordError::NotEnough { need: 1, got: 0, last });
                }
                let now = self.now();
                let mut sel = self.sel();
                let (replica, tags) = match sel.select(now, &view, &up, &Blind) {
                    Decision::Send { replica, tags } if up.contains(&replica) => (replica, tags),
                    _ => (up[0], Tags::default()),
                };
                sel.on_sent(now, &view, replica);
                (replica, tags)
            };
            tags.size_class = tags.size_class.max(hint.large as u8);
            self.metrics.selected(replica);
            let sent_at = self.now();
            match self.exchange(replica, Work::Read { key: key.to_vec() }, tags).await {
                Ok(Answer { outcome: Outcome::Read(v), feedback }) => {
                    self.report(&view, replica, sent_at, hint.large, Some(feedback));
                    self.wake(group);
                    if let Some(val) = &v.value {
                        self.learn_size(h, val.len() as u64);
                    }
                    return Ok(v);
                }
                Ok(Answer { feedback, .. }) => {
                    self.report(&view, replica, sent_at, hint.large, Some(feedback));
                    last = "replica answered a read with a write ack".into();
                }
                Err(e) => {
                    self.report(&view, replica, sent_at, hint.large, None);
                    last = e;
                }
            }
            self.wake(group);
            tried.push(replica);
            self.metrics.retries.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(replica, "read failed ({last}), trying the next replica");
        }
    }

    async fn fan_out(
        self: &Arc<Self>,
        full: ReplicaSet,
        need: usize,
        mk: impl Fn() -> Work,
    ) -> Result<Vec<Outcome>, CoordError> {
        let up = full.retain_up(|n| !self.is_up(n));
        if up.len() < need {
            return Err(CoordError::NotEnough {
                need,
                got: 0,
                last: format!("only {} of {} replicas up", up.len(), full.len()),
            });
        }
        let (tx, mut rx) = mpsc::channel(up.len().max(1));
        for &node in up.iter() {
            let tx = tx.clone();
            let work = mk();
            // every replica gets the request even after enough answered: the rest finish in the background
            let me = self.clone();
            tokio::spawn(async move {
                let res = me.exchange(node, work, Tags::default()).await;
                let _ = tx.send((node, res)).await;
            });
        }
        drop(tx);
        let mut ok = Vec::new();
        let mut last = String::new();
        while let Some((node, res)) = rx.recv().await {
            match res {
                Ok(a) => {
                    let fresh =
                        self.freshness.lock().unwrap_or_else(|p| p.into_inner()).accept(node, a.feedback.timestamp);
                    if !fresh {
                        self.metrics.stale_feedback.fetch_add(1, Ordering::Relaxed);
                    }
                    ok.push(a.outcome);
                    if ok.len() >= need {
                        return Ok(ok);
                    }
                }
                Err(e) => last = e,
            }
        }
        Err(CoordError::NotEnough { need, got: ok.len(), last })
    }

    async fn read_many(self: &Arc<Self>, key: &[u8], cl: Consistency) -> Result<Versioned, CoordError> {
        let full = self.ring.replicas(crate::key_hash(key));
        let need = cl.required(full.len());
        let k = key.to_vec();
        let outs = self.fan_out(full, need, || Work::Read { key: k.clone() }).await?;
        let mut best = Versioned::default();
        for o in outs {
            if let Outcome::Read(v) = o {
                if v.version > best.version || (v.version == best.version && best.value.is_none()) {
                    best = v;
                }
            }
        }
        Ok(best)
    }

    /// Write (or delete, with `None`) `key` at the configured write consistency.
    pub async fn write(self: &Arc<Self>, key: &[u8], value: Option<Vec<u8>>) -> Result<(), CoordError> {
        let h = crate::key_hash(key);
        let full = self.ring.replicas(h);
        let need = u8_to_cl(self.write_cl.load(Ordering::Relaxed)).required(full.len());
        if let Some(v) = &value {
            self.learn_size(h, v.len() as u64);
        }
        let version = self.next_version();
        let k = key.to_vec();
        let value = Arc::new(value);
        self.fan_out(full, need, || Work::Write { key: k.clone(), version, value: (*value).clone() }).await?;
        self.metrics.writes_acked.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Durability, EmulationConfig};
    use crate::emulation::Emulation;
    use crate::storage::Storage;
    use tailor_core::selector::World;

    /// Says wait for its first `waits` decisions, then sends to the first replica; counts events.
    struct Scripted {
        waits: usize,
        sent: Arc<AtomicU64>,
        responses: Arc<AtomicU64>,
    }

    impl ReplicaSelector for Scripted {
        fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _w: &dyn World) -> Decision {
            if self.waits > 0 {
                self.waits -= 1;
                Decision::Wait { retry_at: None }
            } else {
                Decision::to(replicas[0])
            }
        }
        fn on_sent(&mut self, _now: Nanos, _req: &RequestView, _replica: NodeId) {
            self.sent.fetch_add(1, Ordering::Relaxed);
        }
        fn on_response(&mut self, _now: Nanos, resp: &Response) {
            assert!(resp.fresh, "local feedback is always fresh here");
            self.responses.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn single(
        waits: usize,
        park_capacity: usize,
    ) -> (tempfile::TempDir, Arc<Coordinator>, Arc<AtomicU64>, Arc<AtomicU64>) {
        let dir = tempfile::tempdir().unwrap();
        let storage = Arc::new(Storage::open(dir.path(), Durability::Buffer).unwrap());
        let metrics = Arc::new(Metrics::new(1));
        let em = Arc::new(Emulation::new(&EmulationConfig::default(), 1));
        let q = tailor_core::local::build("fcfs", &Default::default(), 1).unwrap();
        let clock = Instant::now();
        let replica = Replica::start(0, clock, q, 2, 1000, storage, em, metrics.clone(), None);
        let (sent, responses) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let selector = Box::new(Scripted { waits, sent: sent.clone(), responses: responses.clone() });
        let c = Coordinator::start(CoordinatorParts {
            id: 0,
            clock,
            ring: Ring::new(1, 1, 1).unwrap(),
            selector,
            park_capacity,
            large: 1000,
            bloom: None,
            replica,
            peers: vec![None],
            ids: Arc::new(AtomicU64::new(1)),
            timeout: Duration::from_secs(5),
            read_consistency: Consistency::One,
            write_consistency: Consistency::All,
            metrics,
        });
        (dir, c, sent, responses)
    }

    #[tokio::test]
    async fn a_parked_read_is_re_offered_and_served() {
        let (_d, c, sent, responses) = single(3, 8);
        c.write(b"k", Some(b"v".to_vec())).await.unwrap();
        let v = c.read(b"k").await.unwrap();
        assert_eq!(v.value.as_deref(), Some(&b"v"[..]));
        assert_eq!(c.metrics.parked.load(Ordering::Relaxed), 1);
        assert_eq!(sent.load(Ordering::Relaxed), 1, "on_sent once, by the wake-up");
        assert_eq!(responses.load(Ordering::Relaxed), 1);
        assert_eq!(c.metrics.selections[0].load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn a_full_park_queue_refuses_reads() {
        let (_d, c, _, _) = single(usize::MAX, 0);
        assert_eq!(c.read(b"k").await.unwrap_err(), CoordError::Busy);
        assert_eq!(c.metrics.park_rejected.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn versions_increase_and_deletes_read_as_absent() {
        let (_d, c, _, _) = single(0, 8);
        let a = c.next_version();
        let b = c.next_version();
        assert!(b > a && b & 0xff == 0);
        c.write(b"k", Some(b"1".to_vec())).await.unwrap();
        c.write(b"k", None).await.unwrap();
        assert_eq!(c.read(b"k").await.unwrap().value, None);
        c.set_consistency(false, Consistency::All);
        assert_eq!(c.read(b"k").await.unwrap().value, None);
        assert_eq!(c.consistency(), (Consistency::All, Consistency::All));
    }
}
