//! The coordinator path: a driver of tailor-core's [`CoordinatorCore`], which decides everything
//! about a request (replica choice, parking, retries, shadows, quorums, tags, freshness, size
//! hints). This file owns only what an engine owns: the clock, the tasks, the values on their
//! way, and one wake-up timer; copies reach replicas through a [`Transport`] (the network in a
//! node, scripted replicas under a virtual clock in tests).
//!
//! Choices:
//! - One lock holds the core and the values of the requests in flight; it is never held across
//!   an await. Every core call is followed by carrying out its actions under that lock: replies
//!   and failures go to the waiting client, sends become exchanges, started once the lock is
//!   released ([`Coordinator::unlock_and_send`]).
//! - An exchange runs on the caller's thread as far as it goes: a local replica that starts the
//!   copy at once answers before it returns, and the answer is settled right there, so such a
//!   read costs no task, no thread hand-off and no wake-up (perf: the spawned task and its
//!   wake-ups were a fifth of a node's CPU under GET load). Only an exchange that must wait (a
//!   peer, a queued copy) becomes a task.
//! - The failure detector's verdicts reach the core before each event (`set_up` per member: a
//!   cluster has a handful of nodes, and the verdict is then never stale by more than a call).
//! - A read at ONE is handed to the core without the key's up replicas whose recovery level
//!   (restarted, their peers' hints for them not yet replayed: `recovery.rs`) is above the
//!   lowest among its up replicas ([`Coordinator::readable_at_one`]): which replicas may
//!   answer alone is the engine's knowledge, like liveness; the core still chooses among them.
//! - The clock is tokio's (the real monotonic clock in a node; a paused, virtual one in tests),
//!   and so is the wake-up timer: it fires on tokio's 1 ms timer ticks, so a parked read is
//!   offered again up to 1 ms after the time the core asked for.
//! - A read at ONE answers with the value of the replica whose answer completed it (the chosen
//!   one, or its hedge when speculative retry sent one and that answered first); at QUORUM or
//!   ALL with the newest version among the answers received when the core says enough answered.
//! - The wake-up task sleeps until the core's next wake-up time (a selector's `retry_at` or
//!   timer, or a parked read's timeout) and is woken early when that time moves earlier.
//! - A client waits at most its request's park timeout plus one timeout per replica: the core
//!   always resolves a request (every exchange times out, parked reads expire), so hitting
//!   this outer bound means a bug, reported as `Busy`.

use crate::hints::{Hint, Hints};
use crate::hlc::Hlc;
use crate::metrics::{Metrics, ReadOutcome};
use crate::repair;
use crate::replica::{Outcome, Work};
use crate::storage::Versioned;
use crate::transport::{CopyError, CopyFailure, Exchanged, Transport};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tailor_core::coordinator::{Action, Answer, ClientRequest, CoordinatorCore, Failure, Send, SendKind, Ticket};
use tailor_core::facts::Feedback;
use tailor_core::model::{Consistency, NodeId, RequestId, SizeHint, Tags};
use tailor_core::ring::{ReplicaSet, Ring};
use tailor_core::selector::Blind;
use tailor_core::time::Nanos;
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;

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
    /// This node's clock is too far from its peers' to issue a write version.
    #[error("{0}")]
    Skewed(#[from] crate::hlc::Skewed),
    /// This node started and has not yet compared its clock with a peer's.
    #[error("this node has not yet compared its clock with a peer's (it just started): try again")]
    ClockUnchecked,
}

impl CoordError {
    fn from_failure(f: Failure, last: String) -> CoordError {
        match f {
            Failure::NoReplica => CoordError::NoReplica,
            Failure::Busy => CoordError::Busy,
            Failure::NotEnough { need, got } if last.is_empty() => {
                let last = "no copy failed: the key's other replicas are down".to_string();
                CoordError::NotEnough { need, got, last }
            }
            Failure::NotEnough { need, got } => CoordError::NotEnough { need, got, last },
        }
    }
}

/// What the client of a request waits for.
type Done = oneshot::Sender<Result<Versioned, CoordError>>;

/// A client request in flight: what its copies carry and what came back so far.
struct InFlight {
    key: Vec<u8>,
    /// A write's version and value (`None` value: a delete); `None` for a read.
    write: Option<(u64, Option<Arc<Vec<u8>>>)>,
    /// Whether the read was asked at QUORUM or ALL (answer with the newest version).
    newest: bool,
    answers: Vec<(NodeId, Versioned)>,
    /// Replicas a copy was sent to.
    sent: Vec<NodeId>,
    /// Copies that failed.
    failed: usize,
    /// Copies the selector chose (its first choice, retries, hedges).
    attempts: u32,
    /// Whether the selector ever said wait for it (it entered the backlog).
    parked: bool,
    last_error: String,
    done: Done,
    /// When the request reached this coordinator (its latency by outcome is counted from here).
    started: std::time::Instant,
}

impl InFlight {
    /// The work one copy executes.
    fn work(&self) -> Work {
        match &self.write {
            Some((version, value)) => Work::Write { key: self.key.clone(), version: *version, value: value.clone() },
            None => Work::Read { key: self.key.clone() },
        }
    }

    /// The client's result once the core says `replica`'s answer completed the request, and
    /// the replicas that answered a read at QUORUM or ALL with an older version.
    fn result(&mut self, replica: NodeId) -> (Versioned, Vec<NodeId>) {
        if self.write.is_some() {
            return (Versioned::default(), Vec::new());
        }
        let answers = std::mem::take(&mut self.answers);
        if self.newest {
            return repair::reconcile(answers).unwrap_or_default();
        }
        let chosen = answers.into_iter().find(|(r, _)| *r == replica);
        (chosen.expect("the completing answer was kept").1, Vec::new())
    }

    /// A read at ONE answered while other copies (read-repair shadows, a hedge) are still out:
    /// what to compare once they are in.
    fn trailing(&self) -> Option<Trailing> {
        if self.write.is_some() || self.newest || self.sent.len() < 2 {
            return None;
        }
        let left = self.sent.len() - self.answers.len() - self.failed;
        Some(Trailing { key: self.key.clone(), answers: self.answers.clone(), left })
    }

    /// How this read's decisions went (`tailor_read_decisions_total`).
    fn outcome(&self) -> ReadOutcome {
        match (self.newest, self.attempts, self.parked) {
            (true, _, _) => ReadOutcome::Fanout,
            (false, 2.., _) => ReadOutcome::Retried,
            (false, _, true) => ReadOutcome::Parked,
            (false, 1, false) => ReadOutcome::Sent,
            (false, _, false) => ReadOutcome::Refused,
        }
    }

    /// The write this request carries, as a hint for a replica that missed it.
    fn hint(&self) -> Option<Hint> {
        let (version, value) = self.write.as_ref()?;
        Some(Hint { key: self.key.clone(), version: *version, value: value.as_deref().cloned() })
    }
}

/// A read at ONE that had more than one copy out (read-repair shadows, a hedge), answered to its
/// client: the answers are compared once every copy is in, and replicas that answered an older
/// version are written the newest one (background read repair, Cassandra's
/// `read_repair_chance`).
struct Trailing {
    key: Vec<u8>,
    answers: Vec<(NodeId, Versioned)>,
    /// Copies not yet answered or failed.
    left: usize,
}

/// The core and the requests it handles, under one lock.
struct Inner {
    core: CoordinatorCore,
    in_flight: HashMap<RequestId, InFlight>,
    /// Answered reads at ONE with copies still out.
    trailing: HashMap<RequestId, Trailing>,
    /// The wake-up time the timer task sleeps towards.
    wake_at: Option<Nanos>,
    /// Exchanges the core asked for, started once the lock is released; each flagged whether
    /// its job may run on the caller's thread ([`Transport::runs_here`]).
    outbox: Vec<(bool, Exchanging)>,
}

/// One copy's exchange and its settling.
type Exchanging = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + std::marker::Send>>;

/// One node's coordinator.
pub struct Coordinator {
    clock: Instant,
    ring: Ring,
    inner: Mutex<Inner>,
    wake: Arc<Notify>,
    transport: Arc<dyn Transport>,
    ids: Arc<AtomicU64>,
    timeout: Duration,
    hlc: Arc<Hlc>,
    metrics: Arc<Metrics>,
    hints: Option<Arc<Hints>>,
}

/// Everything a coordinator is built from.
pub struct CoordinatorParts {
    /// The node's monotonic clock origin (shared with its replica; a test's virtual start).
    pub clock: Instant,
    /// The token ring.
    pub ring: Ring,
    /// The coordinator core (selector, size oracle, consistency levels, park limits).
    pub core: CoordinatorCore,
    /// Where copies go.
    pub transport: Arc<dyn Transport>,
    /// Request id source shared with heartbeats.
    pub ids: Arc<AtomicU64>,
    /// Timeout of one replica request (the transport enforces it; the coordinator bounds a
    /// client's wait with it).
    pub timeout: Duration,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// The node's clock for write versions (shared with its replica side, which admits them).
    pub hlc: Arc<Hlc>,
    /// Where writes that missed a replica are kept (`None`: no hinted handoff).
    pub hints: Option<Arc<Hints>>,
}

impl Coordinator {
    /// Build from its parts and start the wake-up task.
    pub fn start(p: CoordinatorParts) -> Arc<Coordinator> {
        let c = Arc::new(Coordinator {
            clock: p.clock,
            ring: p.ring,
            inner: Mutex::new(Inner {
                core: p.core,
                in_flight: HashMap::new(),
                trailing: HashMap::new(),
                wake_at: None,
                outbox: Vec::new(),
            }),
            wake: Arc::new(Notify::new()),
            transport: p.transport,
            ids: p.ids,
            timeout: p.timeout,
            hlc: p.hlc,
            hints: p.hints,
            metrics: p.metrics,
        });
        tokio::spawn(wake_up_task(Arc::downgrade(&c), c.wake.clone()));
        c
    }

    fn now(&self) -> Nanos {
        self.clock.elapsed().as_nanos() as Nanos
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Set the read or write consistency level at runtime.
    pub fn set_consistency(&self, write: bool, c: Consistency) {
        let mut inner = self.lock();
        let (r, w) = inner.core.consistency();
        let (r, w) = if write { (r, c) } else { (c, w) };
        inner.core.set_consistency(r, w);
    }

    /// The current (read, write) consistency levels.
    pub fn consistency(&self) -> (Consistency, Consistency) {
        self.lock().core.consistency()
    }

    /// Whether `node` is up as far as this coordinator knows (itself always is).
    pub fn is_up(&self, node: NodeId) -> bool {
        (node as usize) < self.transport.members() && self.transport.is_up(node)
    }

    /// Requests this coordinator holds: (client requests awaiting a result or their last copies,
    /// requests the core has in flight or parked, reads parked). All three are 0 once a quiet node settled.
    pub fn pending(&self) -> (usize, usize, usize) {
        let inner = self.lock();
        (inner.in_flight.len() + inner.trailing.len(), inner.core.in_flight(), inner.core.parked())
    }

    /// The tags of a copy of `key` that goes around scheduling (a repair, a hint replay; `size`:
    /// the value's, if known): the core's (`CoordinatorCore::side_tags`).
    pub fn side_tags(&self, key: &[u8], size: Option<u64>) -> Tags {
        self.lock().core.side_tags(crate::key_hash(key), size)
    }

    /// The size hint this coordinator's oracle gives for `key` (admin command `size_class`).
    pub fn size_hint(&self, key: &[u8]) -> SizeHint {
        self.lock().core.hint(crate::key_hash(key))
    }

    /// The generation of the size oracle's answers (`None` unless it is Héron's Bloom oracle).
    pub fn oracle_generation(&self) -> Option<u32> {
        self.lock().core.oracle().generation()
    }

    /// Facts from `from` that answer no request (a heartbeat reply, the local replica's tick).
    pub fn facts(self: &Arc<Self>, from: NodeId, feedback: Feedback) {
        self.transport.observed(from, &feedback);
        let mut inner = self.lock();
        let mut out = self.prepare(&mut inner);
        inner.core.facts(self.now(), from, feedback, &Blind, &mut out);
        self.carry_out(&mut inner, out);
        self.unlock_and_send(inner);
    }

    /// Bring the core's view of liveness up to date; an empty action buffer for the next call.
    fn prepare(&self, inner: &mut Inner) -> Vec<Action> {
        for node in 0..self.transport.members() as NodeId {
            inner.core.set_up(node, self.transport.is_up(node));
        }
        Vec::new()
    }

    /// Carry out what the core asked for, publish its counters, and move the wake-up earlier if
    /// the core needs it.
    fn carry_out(self: &Arc<Self>, inner: &mut Inner, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Send(s) => self.send(inner, s),
                Action::Reply { request, replica } => {
                    if let Some(mut f) = inner.in_flight.remove(&request) {
                        if f.write.is_some() {
                            self.metrics.writes_acked.fetch_add(1, Ordering::Relaxed);
                        }
                        self.resolved(&f);
                        if let Some(t) = f.trailing() {
                            self.trail(inner, request, t);
                        }
                        match f.result(replica) {
                            (result, stale) if stale.is_empty() => drop(f.done.send(Ok(result))),
                            (result, stale) => self.repair_then_reply(f.key, result, stale, f.done),
                        }
                    }
                }
                Action::Fail { request, failure } => {
                    if let Some(f) = inner.in_flight.remove(&request) {
                        self.resolved(&f);
                        let _ = f.done.send(Err(CoordError::from_failure(failure, f.last_error)));
                    }
                }
            }
        }
        let stats = inner.core.stats();
        self.metrics.parked.store(stats.parked, Ordering::Relaxed);
        self.metrics.park_rejected.store(stats.park_rejected + stats.park_expired, Ordering::Relaxed);
        self.metrics.retries.store(stats.retries, Ordering::Relaxed);
        self.metrics.hedges.store(stats.hedges, Ordering::Relaxed);
        self.metrics.stale_feedback.store(stats.stale_feedback, Ordering::Relaxed);
        if let Some(t) = inner.core.next_wake() {
            if inner.wake_at.is_none_or(|w| t < w) {
                inner.wake_at = Some(t);
                self.wake.notify_one();
            }
        }
    }

    /// Request `f` was answered or failed: count a read's outcome.
    fn resolved(&self, f: &InFlight) {
        if f.write.is_none() {
            self.metrics.decided(f.outcome(), f.started.elapsed().as_nanos() as u64);
        }
    }

    /// Start one copy's exchange; its answer or failure goes back to the core.
    fn send(self: &Arc<Self>, inner: &mut Inner, s: Send) {
        let Some(f) = inner.in_flight.get_mut(&s.ticket.id) else {
            unreachable!("the core sends only requests this coordinator holds")
        };
        f.sent.push(s.replica);
        if matches!(s.kind, SendKind::Read | SendKind::Hedge) {
            self.metrics.selected(s.replica);
            f.attempts += 1;
        }
        let (work, me) = (f.work(), self.clone());
        // a write copy that gets no acknowledgement is hinted, also once its request answered
        let hint = self.hints.as_ref().and_then(|_| f.hint());
        let here = self.transport.runs_here(s.replica);
        inner.outbox.push((
            here,
            Box::pin(async move {
                let result = me.transport.exchange(s.replica, work, s).await;
                if let (Err(e), Some(hint)) = (&result, hint) {
                    me.hint_failed_copy(s.replica, hint, e);
                }
                me.settle(s.ticket, s.replica, result);
            }),
        ));
    }

    /// Release the lock, then start the exchanges the core asked for: each runs here as far as
    /// it can without waiting (settled here if it answered), and becomes a task only if it must
    /// wait. Copies for peers go first: a local job may run here, and the peers' copies must not
    /// wait for it (a panicking job, whose report can take a while, once cost a QUORUM write
    /// its other replicas' time).
    fn unlock_and_send(self: &Arc<Self>, mut inner: MutexGuard<'_, Inner>) {
        let mut outbox = std::mem::take(&mut inner.outbox);
        drop(inner);
        outbox.sort_by_key(|(here, _)| *here);
        for (_, exchange) in outbox {
            crate::flush_scope::start(exchange);
        }
    }

    /// Write the newest value back to the replicas that answered a QUORUM/ALL read with an older
    /// one, then give the client its value (blocking read repair).
    fn repair_then_reply(self: &Arc<Self>, key: Vec<u8>, newest: Versioned, stale: Vec<NodeId>, done: Done) {
        let me = self.clone();
        tokio::spawn(async move {
            me.write_back(&key, &newest, &stale).await;
            let _ = done.send(Ok(newest));
        });
    }

    /// Reads hedged (speculative retry) so far.
    pub fn hedges(&self) -> u64 {
        self.metrics.hedges.load(Ordering::Relaxed)
    }

    /// Keep answered read `id`'s trailing copies for comparison, or compare now if none is out.
    fn trail(self: &Arc<Self>, inner: &mut Inner, id: RequestId, t: Trailing) {
        if t.left == 0 {
            return self.repair_in_background(t);
        }
        inner.trailing.insert(id, t);
    }

    /// A trailing copy of answered read `id` answered (`Some`) or failed (`None`).
    fn trailing_copy(self: &Arc<Self>, inner: &mut Inner, id: RequestId, answer: Option<(NodeId, Versioned)>) {
        let Some(t) = inner.trailing.get_mut(&id) else { return };
        t.answers.extend(answer);
        t.left -= 1;
        if t.left == 0 {
            let t = inner.trailing.remove(&id).expect("just seen");
            self.repair_in_background(t);
        }
    }

    /// Write the newest of a read's answers back to the replicas that answered older, without
    /// anyone waiting for it.
    fn repair_in_background(self: &Arc<Self>, t: Trailing) {
        let Trailing { key, answers, .. } = t;
        let Some((newest, stale)) = repair::reconcile(answers) else { return };
        if stale.is_empty() {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move { me.write_back(&key, &newest, &stale).await });
    }

    /// Write `newest` of `key` back to the `stale` replicas, counting those that acknowledged.
    async fn write_back(&self, key: &[u8], newest: &Versioned, stale: &[NodeId]) {
        let tags = self.side_tags(key, newest.value.as_ref().map(|v| v.len() as u64));
        let repaired = repair::write_back(self.transport.as_ref(), key, newest, stale, tags).await;
        self.metrics.read_repairs.fetch_add(repaired as u64, Ordering::Relaxed);
        tracing::info!(stale = ?stale, repaired, version = newest.version, "read repair wrote the newest version back");
    }

    /// Replicas written back by read repair so far.
    pub fn read_repairs(&self) -> u64 {
        self.metrics.read_repairs.load(Ordering::Relaxed)
    }

    /// Keep the write of request `id` as a hint for each of `replicas` it did not reach.
    fn hint_missed(&self, inner: &Inner, id: RequestId, replicas: &[NodeId]) {
        let (Some(hints), Some(f)) = (&self.hints, inner.in_flight.get(&id)) else { return };
        let Some(hint) = f.hint() else { return };
        let missed = replicas.iter().filter(|r| !f.sent.contains(r)).map(|&r| (r, hint.clone())).collect();
        crate::hints::keep(hints, missed);
    }

    /// Keep `hint` for `replica`, whose copy of it failed with `e`, unless the replica refused
    /// it for good (a version from the future, input over its limits): replaying such a copy
    /// could only fail again, or, once a fast clock's version is no longer in the future,
    /// overwrite every write acknowledged since.
    fn hint_failed_copy(&self, replica: NodeId, hint: Hint, e: &CopyError) {
        let Some(hints) = &self.hints else { return };
        if matches!(e.kind, CopyFailure::Refused | CopyFailure::FromTheFuture) {
            self.metrics.refused_copies.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(replica, version = hint.version, "write copy refused, not hinted: {}", e.reason);
            return;
        }
        crate::hints::keep(hints, vec![(replica, hint)]);
    }

    /// One copy's exchange ended.
    fn settle(self: &Arc<Self>, ticket: Ticket, replica: NodeId, result: Exchanged) {
        let mut inner = self.lock();
        let mut out = self.prepare(&mut inner);
        let now = self.now();
        match result {
            Ok((outcome, feedback)) => {
                self.transport.observed(replica, &feedback);
                let mut value_size = None;
                if let Outcome::Read(v) = outcome {
                    self.hlc.observe(v.version);
                    value_size = v.value.as_ref().map(|v| v.len() as u64);
                    match inner.in_flight.get_mut(&ticket.id) {
                        Some(f) => f.answers.push((replica, v)),
                        None => self.trailing_copy(&mut inner, ticket.id, Some((replica, v))),
                    }
                }
                let mut answer = Answer { replica, feedback, value_size };
                inner.core.answered(now, ticket, &mut answer, &Blind, &mut out);
            }
            Err(e) => {
                tracing::debug!(replica, "request {} failed: {e}", ticket.id);
                match inner.in_flight.get_mut(&ticket.id) {
                    Some(f) => {
                        f.last_error = e.reason;
                        f.failed += 1;
                    }
                    None => self.trailing_copy(&mut inner, ticket.id, None),
                }
                let parked = inner.core.stats().parked;
                inner.core.failed(now, ticket, replica, &Blind, &mut out);
                // a failed attempt is offered to the selector again, which may park it
                mark_parked(&mut inner, ticket.id, parked);
            }
        }
        self.carry_out(&mut inner, out);
        self.unlock_and_send(inner);
    }

    /// The wake-up time came.
    fn wake_up(self: &Arc<Self>) {
        let mut inner = self.lock();
        let now = self.now();
        if inner.wake_at.is_some_and(|t| t <= now) {
            inner.wake_at = None;
            let mut out = self.prepare(&mut inner);
            inner.core.wake(now, &Blind, &mut out);
            self.carry_out(&mut inner, out);
            self.unlock_and_send(inner);
        }
    }

    /// Hand a request to the core and wait for its result.
    async fn submit(
        self: &Arc<Self>,
        key: &[u8],
        write: Option<(u64, Option<Arc<Vec<u8>>>)>,
        level: Option<Consistency>,
        started: std::time::Instant,
    ) -> Result<Versioned, CoordError> {
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
            let req = ClientRequest { id, key: h, replicas: candidates, size };
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
                Err(CoordError::Busy)
            }
        }
    }

    /// Read `key` at `level`, or at the configured read consistency.
    pub async fn read(self: &Arc<Self>, key: &[u8], level: Option<Consistency>) -> Result<Versioned, CoordError> {
        let started = std::time::Instant::now();
        let result = self.submit(key, None, level, started).await;
        self.metrics.read_latency.observe(started.elapsed().as_nanos() as u64);
        result
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
        let result = self.submit(key, Some((version, value.map(Arc::new))), level, started).await.map(|_| ());
        self.metrics.write_latency.observe(started.elapsed().as_nanos() as u64);
        result
    }

    /// The replicas of `key`, in ring order (the first is its primary).
    pub fn replicas_of(&self, key: &[u8]) -> Vec<NodeId> {
        self.ring.replicas(crate::key_hash(key)).to_vec()
    }

    /// Whether this node's clock may issue a write version: not while it is skewed from its
    /// peers', nor (for at most a request timeout after start) before it compared its clock
    /// with a peer that is up (`hlc.rs`).
    async fn clock_fit_for_versions(&self) -> Result<(), CoordError> {
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
    fn readable_at_one(&self, replicas: ReplicaSet) -> ReplicaSet {
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

    fn some_peer_up(&self) -> bool {
        let t = &self.transport;
        (0..t.members() as NodeId).any(|n| !t.runs_here(n) && t.is_up(n))
    }
}

/// Mark request `id` parked if the core parked a read since its count was `before`: only the
/// core call for `id` ran in between (under the lock), and the backlog's drains never park
/// anew, so the read parked was `id`.
fn mark_parked(inner: &mut Inner, id: RequestId, before: u64) {
    if inner.core.stats().parked > before {
        if let Some(f) = inner.in_flight.get_mut(&id) {
            f.parked = true;
        }
    }
}

/// Sleep until the coordinator's wake-up time, wake its core, repeat; ends with the coordinator.
async fn wake_up_task(c: std::sync::Weak<Coordinator>, wake: Arc<Notify>) {
    loop {
        let Some(me) = c.upgrade() else { return };
        let (at, now) = (me.lock().wake_at, me.now());
        if at.is_some_and(|t| t <= now) {
            me.wake_up();
            continue;
        }
        drop(me);
        // without a wake-up time, re-check now and then so a dropped coordinator ends this task
        let wait = at.map_or(Duration::from_secs(1), |t| Duration::from_nanos(t - now));
        let _ = tokio::time::timeout(wait, wake.notified()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Durability, EmulationConfig};
    use crate::emulation::Emulation;
    use crate::replica::Replica;
    use crate::storage::Storage;
    use crate::transport::Network;
    use tailor_core::coordinator::CoordinatorConfig;
    use tailor_core::facts::Response;
    use tailor_core::model::RequestView;
    use tailor_core::oracle::size::SeenSizes;
    use tailor_core::selector::{Decision, ReplicaSelector, World};

    /// Says wait (retry in 1 ms) for its first `waits` decisions, then sends to the first
    /// replica; counts events.
    struct Scripted {
        waits: usize,
        sent: Arc<AtomicU64>,
        responses: Arc<AtomicU64>,
    }

    impl ReplicaSelector for Scripted {
        fn select(&mut self, now: Nanos, _req: &RequestView, replicas: &[NodeId], _w: &dyn World) -> Decision {
            if self.waits > 0 {
                self.waits -= 1;
                Decision::Wait { retry_at: Some(now + tailor_core::time::MS) }
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
        let clock = std::time::Instant::now();
        let replica = Replica::start(0, clock, q, 2, 1000, storage, em, metrics.clone(), None);
        let (sent, responses) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let selector = Box::new(Scripted { waits, sent: sent.clone(), responses: responses.clone() });
        let cfg = CoordinatorConfig {
            id: 0,
            read_consistency: Consistency::One,
            write_consistency: Consistency::All,
            read_repair: 0.0,
            park_capacity,
            park_timeout: Some(5_000 * tailor_core::time::MS),
            seed: 1,
        };
        let core = CoordinatorCore::new(cfg, selector, Box::new(SeenSizes::new(16, 1000, None)));
        let c = Coordinator::start(CoordinatorParts {
            clock: Instant::from_std(clock),
            ring: Ring::new(1, 1, 1).unwrap(),
            core,
            transport: Arc::new(Network {
                id: 0,
                replica,
                peers: vec![None],
                ids: Arc::new(AtomicU64::new(1)),
                timeout: Duration::from_secs(5),
                metrics: metrics.clone(),
                recovery: Arc::new(crate::recovery::Recovery::off()),
            }),
            ids: Arc::new(AtomicU64::new(1)),
            timeout: Duration::from_secs(5),
            metrics,
            hlc: Arc::new(Hlc::new(0, Duration::from_millis(500))),
            hints: None,
        });
        (dir, c, sent, responses)
    }

    #[tokio::test]
    async fn a_parked_read_is_re_offered_at_its_retry_time_and_served() {
        let (_d, c, sent, responses) = single(3, 8);
        c.write(b"k", Some(b"v".to_vec()), None).await.unwrap();
        let v = c.read(b"k", None).await.unwrap();
        assert_eq!(v.value.as_deref(), Some(&b"v"[..]));
        assert_eq!(c.metrics.parked.load(Ordering::Relaxed), 1);
        assert_eq!(sent.load(Ordering::Relaxed), 1, "on_sent once, by the wake-up");
        assert_eq!(responses.load(Ordering::Relaxed), 1);
        assert_eq!(c.metrics.selections[0].load(Ordering::Relaxed), 1);
        assert_eq!(c.size_hint(b"k").bytes, Some(1), "the oracle saw the value");
        assert_eq!(c.metrics.decisions(ReadOutcome::Parked), 1, "the read counts as parked, once");
        assert_eq!(c.metrics.decisions(ReadOutcome::Sent), 0);
        c.read(b"k", None).await.unwrap();
        assert_eq!(c.metrics.decisions(ReadOutcome::Sent), 1, "the selector's waits are used up: sent at once");
    }

    #[tokio::test]
    async fn a_full_park_queue_refuses_reads() {
        let (_d, c, _, _) = single(usize::MAX, 1);
        let first = {
            let c = c.clone();
            tokio::spawn(async move { c.read(b"k", None).await })
        };
        tokio::time::timeout(Duration::from_secs(5), async {
            while c.metrics.parked.load(Ordering::Relaxed) == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .unwrap();
        assert_eq!(c.read(b"k", None).await.unwrap_err(), CoordError::Busy);
        assert_eq!(c.metrics.park_rejected.load(Ordering::Relaxed), 1);
        assert_eq!(c.metrics.decisions(ReadOutcome::Refused), 1, "refused before any copy left");
        first.abort();
    }

    /// Three replicas of every key; node 2 missed the write (it answers nil, the others the
    /// value) and may be recovering or down; reads counted per replica.
    #[derive(Default)]
    struct Three {
        recovering: [std::sync::atomic::AtomicU8; 3],
        down: [std::sync::atomic::AtomicBool; 3],
        reads: [AtomicU64; 3],
    }

    impl Transport for Three {
        fn members(&self) -> usize {
            3
        }

        fn is_up(&self, node: NodeId) -> bool {
            !self.down[node as usize].load(Ordering::Relaxed)
        }

        fn recovering(&self, node: NodeId) -> u8 {
            self.recovering[node as usize].load(Ordering::Relaxed)
        }

        fn exchange(&self, node: NodeId, work: Work, _: Send) -> crate::transport::Exchange<'_> {
            let outcome = match work {
                Work::Read { .. } => {
                    self.reads[node as usize].fetch_add(1, Ordering::Relaxed);
                    let missed = node == 2;
                    Outcome::Read(Versioned { version: !missed as u64, value: (!missed).then(|| b"v".to_vec()) })
                }
                Work::Write { .. } => Outcome::Written(true),
            };
            Box::pin(async move { Ok((outcome, Feedback::default())) })
        }
    }

    fn three(transport: Arc<Three>) -> Arc<Coordinator> {
        let env = tailor_core::selector::SelectorEnv {
            coordinator: 0,
            coordinators: 3,
            servers: 3,
            replication: 3,
            workers: 2,
            seed: 1,
        };
        let selector = tailor_core::selector::build("round-robin", &Default::default(), &env).unwrap();
        let cfg = CoordinatorConfig {
            id: 0,
            read_consistency: Consistency::One,
            write_consistency: Consistency::Quorum,
            read_repair: 0.0,
            park_capacity: 8,
            park_timeout: Some(5_000 * tailor_core::time::MS),
            seed: 1,
        };
        let core = CoordinatorCore::new(cfg, selector, Box::new(SeenSizes::new(16, 1000, None)));
        Coordinator::start(CoordinatorParts {
            clock: Instant::now(),
            ring: Ring::new(3, 3, 1).unwrap(),
            core,
            transport,
            ids: Arc::new(AtomicU64::new(1)),
            timeout: Duration::from_secs(5),
            metrics: Arc::new(Metrics::new(3)),
            hlc: Arc::new(Hlc::new(0, Duration::from_millis(500))),
            hints: None,
        })
    }

    #[tokio::test]
    async fn a_recovering_replica_is_read_at_one_only_when_no_caught_up_one_is_up() {
        let t = Arc::new(Three::default());
        let c = three(t.clone());
        let reads = |i: usize| t.reads[i].load(Ordering::Relaxed);
        let avoided = || c.metrics.reads_avoided_recovering.load(Ordering::Relaxed);
        // caught up: round-robin reads node 2 too, and gets its nil
        let nil = futures_util::future::join_all((0..6).map(|_| c.read(b"k", None))).await;
        assert!(reads(2) > 0 && nil.iter().any(|v| v.as_ref().unwrap().value.is_none()), "node 2 read");
        // recovering: never at ONE while node 0 or 1 is up
        t.recovering[2].store(2, Ordering::Relaxed);
        let before = reads(2);
        for _ in 0..30 {
            assert_eq!(c.read(b"k", None).await.unwrap().value.as_deref(), Some(&b"v"[..]));
        }
        assert_eq!((reads(2) - before, avoided()), (0, 30));
        // at QUORUM it takes part (and the newest version wins)
        let v = c.read(b"k", Some(Consistency::Quorum)).await.unwrap();
        assert_eq!((v.value.as_deref(), reads(2) - before, avoided()), (Some(&b"v"[..]), 1, 30));
        // every replica recovering: the one not known behind (node 2 is) is read
        t.recovering[0].store(1, Ordering::Relaxed);
        t.recovering[1].store(1, Ordering::Relaxed);
        for _ in 0..4 {
            assert_eq!(c.read(b"k", None).await.unwrap().value.as_deref(), Some(&b"v"[..]));
        }
        assert_eq!((reads(2) - before, avoided()), (1, 34));
        // the only replica up: read rather than none
        t.down[0].store(true, Ordering::Relaxed);
        t.down[1].store(true, Ordering::Relaxed);
        assert_eq!(c.read(b"k", None).await.unwrap().value, None);
        assert_eq!((reads(2) - before, avoided()), (2, 34), "not counted as avoided");
        // writes still reach it
        c.write(b"k", Some(b"w".to_vec()), Some(Consistency::One)).await.unwrap();
    }

    #[tokio::test]
    async fn deletes_read_as_absent_at_every_consistency() {
        let (_d, c, _, _) = single(0, 8);
        c.write(b"k", Some(b"1".to_vec()), None).await.unwrap();
        c.write(b"k", None, None).await.unwrap();
        assert_eq!(c.read(b"k", None).await.unwrap().value, None);
        c.set_consistency(false, Consistency::All);
        assert_eq!(c.read(b"k", None).await.unwrap().value, None);
        assert_eq!((c.metrics.decisions(ReadOutcome::Sent), c.metrics.decisions(ReadOutcome::Fanout)), (1, 1));
        assert_eq!(c.consistency(), (Consistency::All, Consistency::All));
    }
}
