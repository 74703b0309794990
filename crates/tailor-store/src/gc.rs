//! Tombstone garbage collection (Cassandra's gc_grace_seconds).
//!
//! A delete leaves a versioned tombstone so that a replica still holding the older value is
//! overwritten by repair instead of resurrecting it. Tombstones are kept `gc_grace_s` (10 days
//! by default, as Cassandra) after their version's physical time, then dropped: at the start of
//! every repair pass and every `gc_every_s`, a scan of the `versions` keyspace paced by
//! `repair_keys_per_s` (keys scanned a second). The rule that follows is Cassandra's: a replica
//! down (or not repaired) for longer than the grace may still hold a value whose tombstone
//! every other replica has dropped, and anti-entropy would then copy that value back (the
//! delete resurrects) — so such a replica must be wiped and repaired, or replaced, before it
//! rejoins, and repair must run on every node more often than once per grace period.
//!
//! Trees and repair treat a tombstone past its grace as absent (`anti_entropy.rs`), and the
//! storage never stores one that arrives already past it (`storage.rs`), so a tombstone is
//! dropped once: a replica that dropped it does not get it back from one that has not yet.

use crate::limits::Pace;
use crate::node::Node;
use crate::storage::{Storage, StorageError};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Keys scanned per page of a purge.
const PAGE: usize = 256;

/// Drop every tombstone of `storage` past its grace, scanning at the pace of `pace`; returns
/// how many were dropped.
pub async fn purge(storage: &Storage, pace: &mut Pace) -> Result<u64, StorageError> {
    let cutoff = storage.gc_cutoff();
    let (mut purged, mut after) = (0, None);
    if cutoff == 0 {
        return Ok(0);
    }
    loop {
        let page = storage.purge_tombstones(cutoff, after.as_deref(), PAGE)?;
        purged += page.purged;
        pace.take(page.scanned).await;
        match page.next {
            Some(next) => after = Some(next),
            None => return Ok(purged),
        }
    }
}

/// Purge every `gc_every_s` (the first after a full period), counting what was dropped.
pub async fn periodically(node: Arc<Node>) {
    let every = Duration::from_secs(node.cfg.gc_every_s);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tick.tick().await;
        match purge(&node.storage, &mut Pace::new(node.cfg.repair_keys_per_s)).await {
            Ok(n) => {
                node.metrics.tombstones_purged.fetch_add(n, Ordering::Relaxed);
                tracing::info!(purged = n, "tombstones past gc_grace_s dropped");
            }
            Err(e) => tracing::error!("tombstone collection failed: {e}"),
        }
    }
}
