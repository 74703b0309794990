//! A client's reads and writes entering the coordinator: versions for writes, the replicas a
//! read at ONE may use, handing the request to the core and waiting for its result.

use super::{CoordError, Coordinator, InFlight, Inner};
use crate::storage::Versioned;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tailor_core::coordinator::{ClientRequest, Fanout};
use tailor_core::model::{Consistency, NodeId, RequestId};
use tailor_core::ring::ReplicaSet;
use tailor_core::selector::Blind;
use tokio::sync::oneshot;
use tokio::time::Instant;

impl Coordinator {
    /// Hand a request to the core and wait for its result (`fanout`: a multi-get's sub-read's,
    /// [`ClientRequest::fanout`]).
    pub(super) async fn submit(
        self: &Arc<Self>,
        key: &[u8],
        write: Option<(u64, Option<Arc<Vec<u8>>>)>,
        level: Option<Consistency>,
        fanout: Fanout,
        started: std::time::Instant,
    ) -> Result<Versioned, CoordError> {
        // a slow coordinator (an injected fault) takes the request late; its replicas do not
        if let Some(delay) = self.emulation.as_ref().and_then(|e| e.coordinator_delay()) {
            tokio::time::sleep(delay).await;
        }
        let h = crate::key_hash(key);
        let replicas = self.ring.replicas(h);
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let (done, mut rx) = oneshot::channel();
        let size = write.as_ref().map(|(_, v)| v.as_ref().map_or(0, |v| v.len() as u64));
        // built before the lock is taken: other requests wait for it (perf showed it contended)
        let mut f = InFlight {
            key: key.to_vec(),
            write,
            newest: false,
            answers: Vec::new(),
            sent: Vec::new(),
            failed: 0,
            attempts: 0,
            parked: false,
            last_error: String::new(),
            done,
            started,
        };
        let now = self.now();
        {
            let mut inner = self.lock();
            let mut out = self.prepare(&mut inner);
            let (read_level, write_level) = inner.core.consistency();
            let level = level.unwrap_or(if f.write.is_some() { write_level } else { read_level });
            f.newest = level != Consistency::One;
            let is_write = f.write.is_some();
            inner.in_flight.insert(id, f);
            let candidates =
                if is_write || level != Consistency::One { replicas } else { self.readable_at_one(replicas) };
            let req = ClientRequest { id, key: h, replicas: candidates, size, fanout };
            let parked = inner.core.stats().parked;
            if is_write {
                inner.core.write_at(now, req, level, &mut out);
            } else {
                inner.core.read_at(now, req, level, &Blind, &mut out);
            }
            mark_parked(&mut inner, id, parked);
            self.carry_out(&mut inner, out);
            if is_write {
                self.hint_missed(&inner, id, &replicas);
            }
            self.unlock_and_send(inner);
        }
        // answered already when every copy ran inline here: no timer then (it reads the clock)
        let answer = match rx.try_recv() {
            Ok(result) => Ok(Ok(result)),
            Err(_) => tokio::time::timeout(self.timeout * (replicas.len() as u32 + 2), rx).await,
        };
        match answer {
            Ok(Ok(result)) => result,
            _ => {
                tracing::error!("request {id} was never resolved by the coordinator core");
                Err(CoordError::busy())
            }
        }
    }

    /// Read `key` at `level`, or at the configured read consistency.
    pub async fn read(self: &Arc<Self>, key: &[u8], level: Option<Consistency>) -> Result<Versioned, CoordError> {
        self.read_in_multiget(key, level, Fanout::default()).await
    }

    /// [`Coordinator::read`] of one key of the multi-get `fanout` ([`Coordinator::fanout`]; the
    /// default: a single read).
    pub async fn read_in_multiget(
        self: &Arc<Self>,
        key: &[u8],
        level: Option<Consistency>,
        fanout: Fanout,
    ) -> Result<Versioned, CoordError> {
        let started = std::time::Instant::now();
        let result = self.submit(key, None, level, fanout, started).await;
        self.metrics.read_latency.observe(started.elapsed().as_nanos() as u64);
        result
    }

    /// The fan-out of a multi-get of `keys` as this node's core sees it: its key count (the
    /// hedge budget's) and its bottleneck (Rein's tag, which each of its reads carries to the
    /// replicas).
    pub fn fanout(&self, keys: &[Vec<u8>]) -> Fanout {
        // sizes: the oracle's own (the sizes this node saw), as for a single read
        let keys: Vec<_> = keys.iter().map(|k| crate::key_hash(k)).map(|h| (h, self.ring.replicas(h), None)).collect();
        self.lock().core.fanout(keys)
    }

    /// Write (or delete, with `None`) `key` at `level`, or at the configured write consistency.
    pub async fn write(
        self: &Arc<Self>,
        key: &[u8],
        value: Option<Vec<u8>>,
        level: Option<Consistency>,
    ) -> Result<(), CoordError> {
        let started = std::time::Instant::now();
        if let Err(e) = self.clock_fit_for_versions().await {
            self.metrics.skew_refusals.fetch_add(1, Ordering::Relaxed);
            return Err(e);
        }
        let version = self.hlc.now();
        self.write_at(key, version, value, level, started).await
    }

    /// A new write version, once this node's clock may issue one (a counter's increment:
    /// `commands/counters.rs`).
    pub async fn fresh_version(&self) -> Result<u64, CoordError> {
        if let Err(e) = self.clock_fit_for_versions().await {
            self.metrics.skew_refusals.fetch_add(1, Ordering::Relaxed);
            return Err(e);
        }
        Ok(self.hlc.now())
    }

    /// Write `value` of `key` at `version` (from [`Coordinator::fresh_version`], or past it) at
    /// `level`, as [`Coordinator::write`] does.
    pub async fn write_at(
        self: &Arc<Self>,
        key: &[u8],
        version: u64,
        value: Option<Vec<u8>>,
        level: Option<Consistency>,
        started: std::time::Instant,
    ) -> Result<(), CoordError> {
        let result =
            self.submit(key, Some((version, value.map(Arc::new))), level, Fanout::default(), started).await.map(|_| ());
        self.metrics.write_latency.observe(started.elapsed().as_nanos() as u64);
        result
    }

    /// Whether this node's clock may issue a write version: not while it is skewed from its
    /// peers', nor (for at most a request timeout after start) before it compared its clock
    /// with a peer that is up (`hlc.rs`).
    pub(super) async fn clock_fit_for_versions(&self) -> Result<(), CoordError> {
        let deadline = Instant::now() + self.timeout;
        while self.hlc.awaiting_comparison() && self.some_peer_up() {
            if Instant::now() >= deadline {
                return Err(CoordError::ClockUnchecked);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(self.hlc.skew()?)
    }

    /// The candidates of a read at ONE: `replicas` without the up ones whose recovery level is
    /// above the lowest of the up ones (counted when some are left out); down ones stay (the
    /// core skips them).
    pub(super) fn readable_at_one(&self, replicas: ReplicaSet) -> ReplicaSet {
        let t = &self.transport;
        let level = |n| if t.is_up(n) { t.recovering(n) } else { u8::MAX };
        let best = replicas.iter().map(|&n| level(n)).min().unwrap_or(u8::MAX);
        let worse = |n| level(n) > best && level(n) < u8::MAX;
        if !replicas.iter().any(|&n| worse(n)) {
            return replicas;
        }
        self.metrics.reads_avoided_recovering.fetch_add(1, Ordering::Relaxed);
        replicas.retain_up(worse)
    }

    pub(super) fn some_peer_up(&self) -> bool {
        let t = &self.transport;
        (0..t.members() as NodeId).any(|n| !t.runs_here(n) && t.is_up(n))
    }
}

/// Mark request `id` parked if the core parked a read since its count was `before`: only the
/// core call for `id` ran in between (under the lock), and the backlog's drains never park
/// anew, so the read parked was `id`.
pub(super) fn mark_parked(inner: &mut Inner, id: RequestId, before: u64) {
    if inner.core.stats().parked > before {
        if let Some(f) = inner.in_flight.get_mut(&id) {
            f.parked = true;
        }
    }
}
