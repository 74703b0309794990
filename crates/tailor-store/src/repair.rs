//! Repair at the coordinator: what a read at QUORUM or ALL writes back, what a write keeps as
//! hints for the replicas it could not reach (`hints.rs` stores and replays them), and the
//! repair sweep that catches what neither saw.
//!
//! Repair sweep (`TAILOR.REPAIR`, `tailor cluster repair`, or every `repair_every_s`): every key
//! this node holds (tombstones included) is read at ALL, so the blocking read repair writes the
//! newest version to every replica that answered older; at most `repair_keys_per_s` keys a
//! second. Run on every node, it leaves every replica of every key current (a replica that lost
//! its disk gets its keys from the nodes that still hold them). It reads every key, where a
//! Merkle-tree comparison (Cassandra's anti-entropy) would exchange only differing ranges: that
//! is the next step.
//!
//! Blocking read repair (Cassandra's, at QUORUM and ALL): when the answers a read waited for
//! disagree, the replicas that answered with an older version are sent the newest one, and the
//! client gets its value once they acknowledged (or failed), so a value a client has read is
//! on every replica that answered. These write-backs are not scheduling decisions: they bypass
//! the coordinator core, like hint replays.

use crate::config::Consistency;
use crate::coordinator::Coordinator;
use crate::hints::{Hint, Hints};
use crate::replica::Work;
use crate::storage::Versioned;
use crate::storage::{Storage, StorageError};
use crate::transport::Transport;
use std::sync::Arc;
use tailor_core::coordinator::{Send, SendKind, Ticket};
use tailor_core::model::NodeId;

/// The replicas among `answers` whose version is older than `newest`'s.
pub fn stale(answers: &[(NodeId, Versioned)], newest: &Versioned) -> Vec<NodeId> {
    answers.iter().filter(|(_, v)| v.version < newest.version).map(|(r, _)| *r).collect()
}

/// A write copy that goes around the coordinator core (a read repair, a hint replay).
pub fn side_send(replica: NodeId) -> Send {
    Send { ticket: Ticket { slot: u32::MAX, id: 0 }, replica, tags: Default::default(), age: 0, kind: SendKind::Write }
}

/// Write `newest` of `key` back to each of `stale`, concurrently; returns how many acknowledged.
pub async fn write_back(transport: &dyn Transport, key: &[u8], newest: &Versioned, stale: &[NodeId]) -> usize {
    let copies = stale.iter().map(|&r| {
        let work = Work::Write { key: key.to_vec(), version: newest.version, value: newest.value.clone() };
        transport.exchange(r, work, side_send(r))
    });
    let mut acked = 0;
    for copy in copies.collect::<Vec<_>>() {
        acked += copy.await.is_ok() as usize;
    }
    acked
}

/// Keep `hints` (replica, write) durably, off the async threads (a hint may wait for an fsync).
pub fn keep(hints: &Arc<Hints>, missed: Vec<(NodeId, Hint)>) {
    if missed.is_empty() {
        return;
    }
    let hints = hints.clone();
    tokio::task::spawn_blocking(move || {
        for (target, hint) in missed {
            if let Err(e) = hints.add(target, &hint) {
                tracing::error!("cannot keep a hint for node {target}: {e}");
            }
        }
    });
}

/// What one repair sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Keys read at ALL.
    pub keys: u64,
    /// Keys whose read failed (a replica down: run the sweep again once it is back).
    pub failed: u64,
    /// Replicas written back.
    pub repaired: u64,
}

/// Keys read per page of a sweep.
const SWEEP_PAGE: usize = 256;

/// Read every key `storage` holds at ALL through `coordinator`, at most `keys_per_s` a second
/// (0: no limit).
pub async fn sweep(coordinator: &Arc<Coordinator>, storage: &Storage, keys_per_s: u64) -> Result<Sweep, StorageError> {
    let before = coordinator.read_repairs();
    let mut done = Sweep::default();
    let started = tokio::time::Instant::now();
    let mut after: Option<Vec<u8>> = None;
    loop {
        let page = storage.keys_after(after.as_deref(), SWEEP_PAGE)?;
        let Some(last) = page.last().cloned() else { break };
        for key in page {
            done.keys += 1;
            done.failed += coordinator.read(&key, Some(Consistency::All)).await.is_err() as u64;
            if keys_per_s > 0 {
                let due = started + std::time::Duration::from_secs_f64(done.keys as f64 / keys_per_s as f64);
                tokio::time::sleep_until(due).await;
            }
        }
        after = Some(last);
    }
    done.repaired = coordinator.read_repairs() - before;
    Ok(done)
}
