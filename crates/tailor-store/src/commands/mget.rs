//! `MGET key [key ...]`: one read per key through this node's coordinator core (the replica
//! selection a GET of that key gets, at the session's read consistency), all keys at once, the
//! reply an array in key order with nil for a missing or expired key.
//!
//! Failure is all or nothing: if any key's read fails, the whole MGET answers the error of the
//! first failing key in key order (a client cannot tell a per-key failure from a nil in RESP),
//! once every read has ended. The reply's bytes are leased from the node's buffer budget as the
//! values arrive, in whatever order they arrive, so every value held is counted: an MGET whose
//! reply would pass `max_buffered_bytes` is refused at once and its other reads are dropped.
//! Each MGET's time, from its first read sent to its reply built, goes to
//! `tailor_mget_latency_seconds`. Every read carries the MGET's fan-out as the node's core sees
//! it, as in the simulator: its key count, so the hedge budget lets the MGET's keys earn their
//! hedges together, and its bottleneck (Rein's tag), so a replica running `rein-sbf` serves the
//! keys of small MGETs first.

use super::access;
use super::Executed;
use crate::limits::Lease;
use crate::node::Node;
use crate::resp::Reply;
use crate::session::Session;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Most keys one `MGET` may read (each is a read in flight at once).
pub const MAX_MGET_KEYS: usize = 1024;

/// Bytes a reply element costs beyond its value (the RESP header, the element itself).
const REPLY_OVERHEAD: u64 = 64;

/// The refusal of an MGET of `n` keys above [`MAX_MGET_KEYS`].
pub fn too_many(n: usize) -> Reply {
    Reply::err(format!("MGET of {n} keys is above the limit of {MAX_MGET_KEYS} keys; split it"))
}

/// Run `MGET keys` for `session`, recording its latency.
pub async fn mget(node: &Arc<Node>, session: &Session, keys: &[Vec<u8>]) -> Executed {
    let started = std::time::Instant::now();
    let executed = read_all(node, session, keys).await;
    node.metrics.mget_latency.observe(started.elapsed().as_nanos() as u64);
    executed
}

async fn read_all(node: &Arc<Node>, session: &Session, keys: &[Vec<u8>]) -> Executed {
    let fanout = node.coordinator.fanout(keys);
    let mut reads: FuturesUnordered<_> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| async move { (i, access::read_in_multiget(node, session, k, fanout).await) })
        .collect();
    let mut lease = node.budget.lease();
    let mut out = vec![Reply::Null; keys.len()];
    let mut failed: Option<(usize, Reply)> = None;
    while let Some((i, result)) = reads.next().await {
        match result {
            Ok(value) => {
                let value = value.map(|v| v.value);
                if let Err(refusal) = hold(node, &mut lease, value.as_ref().map_or(0, Vec::len)) {
                    return plain(refusal);
                }
                out[i] = value.map_or(Reply::Null, Reply::Bulk);
            }
            Err(e) if failed.as_ref().is_none_or(|(j, _)| i < *j) => failed = Some((i, e)),
            Err(_) => {}
        }
    }
    match failed {
        Some((_, e)) => plain(e),
        None => Executed { reply: Reply::Array(out), close: false, lease: Some(lease) },
    }
}

/// Grow `lease` by a reply element of `len` value bytes, or the budget's refusal.
fn hold(node: &Node, lease: &mut Lease, len: usize) -> Result<(), Reply> {
    if lease.resize(lease.held() + len as u64 + REPLY_OVERHEAD).is_ok() {
        return Ok(());
    }
    node.metrics.limit_refusals.fetch_add(1, Ordering::Relaxed);
    let budget = node.cfg.max_buffered_bytes;
    Err(Reply::err(format!(
        "MGET reply would go over the node's {budget}-byte buffer budget (max_buffered_bytes); ask for fewer keys"
    )))
}

/// A reply holding no lease.
fn plain(reply: Reply) -> Executed {
    Executed { reply, close: false, lease: None }
}
