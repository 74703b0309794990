//! What a request leaves for repair: blocking read repair before a QUORUM or ALL read answers,
//! background read repair once a read at ONE's trailing copies are in, and hints for the
//! replicas a write missed (`crate::repair` and `crate::hints` do the work).

use super::flight::Trailing;
use super::{Coordinator, Done, Inner};
use crate::hints::Hint;
use crate::repair;
use crate::storage::Versioned;
use crate::transport::{CopyError, CopyFailure};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tailor_core::model::{NodeId, RequestId};

impl Coordinator {
    /// Write the newest value back to the replicas that answered a QUORUM/ALL read with an older
    /// one, then give the client its value (blocking read repair).
    pub(super) fn repair_then_reply(self: &Arc<Self>, key: Vec<u8>, newest: Versioned, stale: Vec<NodeId>, done: Done) {
        let me = self.clone();
        tokio::spawn(async move {
            me.write_back(&key, &newest, &stale).await;
            let _ = done.send(Ok(newest));
        });
    }

    /// Keep answered read `id`'s trailing copies for comparison, or compare now if none is out.
    pub(super) fn trail(self: &Arc<Self>, inner: &mut Inner, id: RequestId, t: Trailing) {
        if t.left == 0 {
            return self.repair_in_background(t);
        }
        inner.trailing.insert(id, t);
    }

    /// A trailing copy of answered read `id` answered (`Some`) or failed (`None`).
    pub(super) fn trailing_copy(
        self: &Arc<Self>,
        inner: &mut Inner,
        id: RequestId,
        answer: Option<(NodeId, Versioned)>,
    ) {
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
    pub(super) fn repair_in_background(self: &Arc<Self>, t: Trailing) {
        let Trailing { key, answers, .. } = t;
        let Some((newest, stale)) = repair::reconcile(answers) else { return };
        if stale.is_empty() {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move { me.write_back(&key, &newest, &stale).await });
    }

    /// Write `newest` of `key` back to the `stale` replicas, counting those that acknowledged.
    pub(super) async fn write_back(&self, key: &[u8], newest: &Versioned, stale: &[NodeId]) {
        let tags = self.side_tags(key, newest.value.as_ref().map(|v| v.len() as u64));
        let repaired = repair::write_back(self.transport.as_ref(), key, newest, stale, tags).await;
        self.metrics.read_repairs.fetch_add(repaired as u64, Ordering::Relaxed);
        tracing::info!(stale = ?stale, repaired, version = newest.version, "read repair wrote the newest version back");
    }

    /// Keep the write of request `id` as a hint for each of `replicas` it did not reach.
    pub(super) fn hint_missed(&self, inner: &Inner, id: RequestId, replicas: &[NodeId]) {
        let (Some(hints), Some(f)) = (&self.hints, inner.in_flight.get(&id)) else { return };
        let Some(hint) = f.hint() else { return };
        let missed = replicas.iter().filter(|r| !f.sent.contains(r)).map(|&r| (r, hint.clone())).collect();
        crate::hints::keep(hints, missed);
    }

    /// Keep `hint` for `replica`, whose copy of it failed with `e`, unless the replica refused
    /// it for good (a version from the future, input over its limits): replaying such a copy
    /// could only fail again, or, once a fast clock's version is no longer in the future,
    /// overwrite every write acknowledged since.
    pub(super) fn hint_failed_copy(&self, replica: NodeId, hint: Hint, e: &CopyError) {
        let Some(hints) = &self.hints else { return };
        if matches!(e.kind, CopyFailure::Refused | CopyFailure::FromTheFuture) {
            self.metrics.refused_copies.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(replica, version = hint.version, "write copy refused, not hinted: {}", e.reason);
            return;
        }
        crate::hints::keep(hints, vec![(replica, hint)]);
    }
}
