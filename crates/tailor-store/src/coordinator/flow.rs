//! Carrying out the core's decisions: feeding it answers, facts and wake-ups, turning its
//! actions into replies, failures and exchanges (started once the lock is released), and the
//! wake-up timer task.

use super::requests::mark_parked;
use super::{CoordError, Coordinator, InFlight, Inner};
use crate::replica::Outcome;
use crate::transport::Exchanged;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;
use tailor_core::coordinator::{Action, Answer, Send, SendKind, Ticket};
use tailor_core::facts::Feedback;
use tailor_core::model::NodeId;
use tailor_core::selector::Blind;
use tokio::sync::Notify;

impl Coordinator {
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
    pub(super) fn prepare(&self, inner: &mut Inner) -> Vec<Action> {
        for node in 0..self.transport.members() as NodeId {
            inner.core.set_up(node, self.transport.is_up(node));
        }
        Vec::new()
    }

    /// Carry out what the core asked for, publish its counters, and move the wake-up earlier if
    /// the core needs it.
    pub(super) fn carry_out(self: &Arc<Self>, inner: &mut Inner, actions: Vec<Action>) {
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
                Action::Cancel { replica, ticket, .. } => {
                    self.metrics.hedge_cancels.fetch_add(1, Ordering::Relaxed);
                    self.transport.cancel(replica, ticket);
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
    pub(super) fn resolved(&self, f: &InFlight) {
        if f.write.is_none() {
            self.metrics.decided(f.outcome(), f.started.elapsed().as_nanos() as u64);
        }
    }

    /// Start one copy's exchange; its answer or failure goes back to the core.
    pub(super) fn send(self: &Arc<Self>, inner: &mut Inner, s: Send) {
        if s.kind == SendKind::Probe {
            return self.probe(inner, s.replica);
        }
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
    pub(super) fn unlock_and_send(self: &Arc<Self>, mut inner: MutexGuard<'_, Inner>) {
        let mut outbox = std::mem::take(&mut inner.outbox);
        drop(inner);
        outbox.sort_by_key(|(here, _)| *here);
        for (_, exchange) in outbox {
            crate::flush_scope::start(exchange);
        }
    }

    /// One copy's exchange ended.
    pub(super) fn settle(self: &Arc<Self>, ticket: Ticket, replica: NodeId, result: Exchanged) {
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
    pub(super) fn wake_up(self: &Arc<Self>) {
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
}

/// Sleep until the coordinator's wake-up time, wake its core, repeat; ends with the coordinator.
pub(super) async fn wake_up_task(c: std::sync::Weak<Coordinator>, wake: Arc<Notify>) {
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
