//! A client request in flight at the coordinator: what its copies carry, what came back, and
//! what it becomes (the client's result, a background read repair's comparison, a hint).

use super::Done;
use crate::hints::Hint;
use crate::metrics::ReadOutcome;
use crate::repair;
use crate::replica::Work;
use crate::storage::Versioned;
use std::sync::Arc;
use tailor_core::model::NodeId;

/// A client request in flight: what its copies carry and what came back so far.
pub(super) struct InFlight {
    pub(super) key: Vec<u8>,
    /// A write's version and value (`None` value: a delete); `None` for a read.
    pub(super) write: Option<(u64, Option<Arc<Vec<u8>>>)>,
    /// Whether the read was asked at QUORUM or ALL (answer with the newest version).
    pub(super) newest: bool,
    pub(super) answers: Vec<(NodeId, Versioned)>,
    /// Replicas a copy was sent to.
    pub(super) sent: Vec<NodeId>,
    /// Copies that failed.
    pub(super) failed: usize,
    /// Copies the selector chose (its first choice, retries, hedges).
    pub(super) attempts: u32,
    /// Whether the selector ever said wait for it (it entered the backlog).
    pub(super) parked: bool,
    pub(super) last_error: String,
    pub(super) done: Done,
    /// When the request reached this coordinator (its latency by outcome is counted from here).
    pub(super) started: std::time::Instant,
}

impl InFlight {
    /// The work one copy executes.
    pub(super) fn work(&self) -> Work {
        match &self.write {
            Some((version, value)) => Work::Write { key: self.key.clone(), version: *version, value: value.clone() },
            None => Work::Read { key: self.key.clone() },
        }
    }

    /// The client's result once the core says `replica`'s answer completed the request, and
    /// the replicas that answered a read at QUORUM or ALL with an older version.
    pub(super) fn result(&mut self, replica: NodeId) -> (Versioned, Vec<NodeId>) {
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
    pub(super) fn trailing(&self) -> Option<Trailing> {
        if self.write.is_some() || self.newest || self.sent.len() < 2 {
            return None;
        }
        let left = self.sent.len() - self.answers.len() - self.failed;
        Some(Trailing { key: self.key.clone(), answers: self.answers.clone(), left })
    }

    /// How this read's decisions went (`tailor_read_decisions_total`).
    pub(super) fn outcome(&self) -> ReadOutcome {
        match (self.newest, self.attempts, self.parked) {
            (true, _, _) => ReadOutcome::Fanout,
            (false, 2.., _) => ReadOutcome::Retried,
            (false, _, true) => ReadOutcome::Parked,
            (false, 1, false) => ReadOutcome::Sent,
            (false, _, false) => ReadOutcome::Refused,
        }
    }

    /// The write this request carries, as a hint for a replica that missed it.
    pub(super) fn hint(&self) -> Option<Hint> {
        let (version, value) = self.write.as_ref()?;
        Some(Hint { key: self.key.clone(), version: *version, value: value.as_deref().cloned() })
    }
}

/// A read at ONE that had more than one copy out (read-repair shadows, a hedge), answered to its
/// client: the answers are compared once every copy is in, and replicas that answered an older
/// version are written the newest one (background read repair, Cassandra's
/// `read_repair_chance`).
pub(super) struct Trailing {
    pub(super) key: Vec<u8>,
    pub(super) answers: Vec<(NodeId, Versioned)>,
    /// Copies not yet answered or failed.
    pub(super) left: usize,
}
