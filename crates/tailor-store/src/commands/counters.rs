//! `INCR`, `DECR`, `INCRBY`, `DECRBY`: replicated counters (the record and its merge rule are
//! in `counter.rs`; what a client sees is in `docs/redis.md`, "Counters").
//!
//! The coordinator that receives the command sends it to the key's *leader*: the first of its
//! replicas, in ring order, that the coordinator believes up (itself when that is it; else an
//! internode `Incr`, answered with the new total or the client's error). So while the first
//! replica is up every increment of a key has one leader, one shard and replies that count up
//! one by one; while it is down the next one leads, on its own shard. The leader:
//! 1. reads the key at the write consistency (so it builds on any SET or DEL acknowledged at
//!    that level, and on the other leaders' shards those replicas hold);
//! 2. under a per-key lock, resolves that with its own stored record, makes it a counter if it is
//!    not one (a plain value must be an integer: its version is the base epoch), adds the
//!    increment to its own shard (clock + 1), and stores the record locally;
//! 3. replicates the record like a write, at the session's write consistency, with hints for the
//!    replicas it misses; every replica merges it (`storage.rs` resolves counter records).
//!
//! The lock makes two increments on one leader build one on the other (each leader is the only
//! writer of its shard, so merging shards loses nothing). An INCR is acknowledged at the write
//! consistency; one that failed or timed out may still have applied (the leader stored it), so
//! a client's retry may apply twice, as in Cassandra: counters are not idempotent (a forward
//! that times out is not retried on another leader, for that reason).

use super::access::{self, either, integer, Live};
use crate::config::Consistency;
use crate::counter::Counter;
use crate::internode::{Failure, Message};
use crate::node::Node;
use crate::peer::PeerError;
use crate::resp::Reply;
use crate::session::Session;
use crate::storage::Versioned;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use tailor_core::model::NodeId;
use tokio::sync::mpsc;

/// Redis's error for a stored value that is not an integer.
pub const NOT_INTEGER: &str = "value is not an integer or out of range";

/// Redis's error for a total that would leave the i64 range.
pub const OVERFLOW: &str = "increment or decrement would overflow";

/// Stripes of the per-key increment lock.
const LOCKS: usize = 256;

/// Times a leader retries when a newer record arrived between its read and its local store.
const RETRIES: usize = 5;

fn lock_of(key: &[u8]) -> &'static tokio::sync::Mutex<()> {
    static LOCK: OnceLock<Vec<tokio::sync::Mutex<()>>> = OnceLock::new();
    let locks = LOCK.get_or_init(|| (0..LOCKS).map(|_| tokio::sync::Mutex::new(())).collect());
    &locks[(crate::key_hash(key) % LOCKS as u64) as usize]
}

/// A counter record as a client sees it: its total in decimal, unless expired at `now()`.
pub fn live(stored: &[u8], now: impl FnOnce() -> u64) -> Option<Live> {
    let Ok(c) = Counter::decode(stored) else { return Some(Live { value: stored.to_vec(), expires: None }) };
    let expires = (c.expires != 0).then_some(c.expires);
    if expires.is_some_and(|at| at <= now()) {
        return None;
    }
    Some(Live { value: c.total().to_string().into_bytes(), expires })
}

/// `INCR key`, `DECR key`, `INCRBY key n`, `DECRBY key n` (`by` the signed increment): the new
/// total.
pub async fn incr(node: &Arc<Node>, session: &Session, key: &[u8], by: i64) -> Reply {
    either(increment(node, session, key, by).await.map(Reply::Integer))
}

/// Add `by` to `key`'s counter through its leader; the new total. A leader that could not be
/// reached at all (the increment never left this node) hands over to the next replica up.
async fn increment(node: &Arc<Node>, session: &Session, key: &[u8], by: i64) -> Result<i64, Reply> {
    let replicas = node.coordinator.replicas_of(key);
    let me = node.cfg.id;
    let mut unreached = Vec::new();
    for &leader in replicas.iter().filter(|&&r| r == me || node.coordinator.is_up(r)) {
        if leader == me {
            return lead(node, key, by, session.consistency()).await;
        }
        match forward(node, leader, key, by, session.consistency()).await {
            Err(Forward::NotSent(e)) => unreached.push(e),
            Err(Forward::Failed(reply)) => return Err(reply),
            Ok(total) => return Ok(total),
        }
    }
    Err(Reply::err(format!("no replica of the key could lead the increment (nodes {replicas:?}): {unreached:?}")))
}

/// Why a forwarded increment failed.
enum Forward {
    /// It never reached the leader (no connection): another may lead it.
    NotSent(String),
    /// The client's answer: the leader's error, or no answer in time (it may have applied).
    Failed(Reply),
}

/// Lead an increment here (this node must replicate `key`): steps 1-3 of the module doc.
async fn lead(node: &Arc<Node>, key: &[u8], by: i64, level: Option<Consistency>) -> Result<i64, Reply> {
    if !node.coordinator.replicas_of(key).contains(&node.cfg.id) {
        return Err(Reply::err(format!(
            "node {} does not replicate this key: it cannot lead its counter",
            node.cfg.id
        )));
    }
    let started = std::time::Instant::now();
    let read_level = level.unwrap_or(node.coordinator.consistency().1);
    let seen = node.coordinator.read(key, Some(read_level)).await.map_err(Reply::err)?;
    let (version, record, total) = {
        let _lock = lock_of(key).lock().await;
        store_locally(node, key, by, seen).await?
    };
    node.coordinator.write_at(key, version, Some(record), level, started).await.map_err(Reply::err)?;
    Ok(total)
}

/// Have node `leader` lead the increment ([`Message::Incr`]).
async fn forward(
    node: &Arc<Node>,
    leader: NodeId,
    key: &[u8],
    by: i64,
    level: Option<Consistency>,
) -> Result<i64, Forward> {
    let failed = |text: String| Forward::Failed(Reply::err(text));
    let Some(Some(peer)) = node.peers.get(leader as usize) else {
        return Err(failed(format!("node {leader} is no peer")));
    };
    let id = node.network.ids.fetch_add(1, Ordering::Relaxed);
    let msg = Message::Incr { id, key: key.to_vec(), by, level: level_code(level) };
    // the leader reads and then writes: two request timeouts
    let timeout = std::time::Duration::from_millis(node.cfg.request_timeout_ms.saturating_mul(2));
    match peer.call(msg, timeout).await {
        Ok(Message::IncrReply { total, .. }) => Ok(total),
        Ok(Message::Failed { reason, .. }) => Err(Forward::Failed(Reply::Error(reason))),
        Ok(other) => Err(failed(format!("node {leader} answered an increment with {other:?}"))),
        // no connection could be made: the frame never left (a closed connection may have)
        Err(e @ PeerError::Unreachable(_, _)) if !e.to_string().ends_with(CLOSED) => {
            Err(Forward::NotSent(e.to_string()))
        }
        Err(e) => {
            Err(failed(format!("the counter's leader, node {leader}: {e} (the increment may have been applied)")))
        }
    }
}

/// How [`crate::peer::Peer::call`] says a connection closed after the frame may have left.
const CLOSED: &str = "connection closed";

/// A peer's [`Message::Incr`]: lead it and answer through `tx` ([`Message::IncrReply`], or
/// [`Message::Failed`] with the client's error text).
pub fn serve_incr(node: &Arc<Node>, tx: &mpsc::Sender<Vec<u8>>, id: u64, key: Vec<u8>, by: i64, level: u8) {
    let (node, tx) = (node.clone(), tx.clone());
    tokio::spawn(async move {
        let checked = crate::limits::check_key(&key, node.cfg.max_key_bytes).map_err(Reply::err);
        let reply = match checked {
            Ok(()) => lead(&node, &key, by, consistency_of(level)).await,
            Err(e) => Err(e),
        };
        let msg = match reply {
            Ok(total) => Message::IncrReply { id, total },
            Err(Reply::Error(reason)) => Message::Failed { id, reason, failure: Failure::ForGood },
            Err(other) => Message::Failed { id, reason: format!("{other:?}"), failure: Failure::ForGood },
        };
        let _ = tx.send(node.seal.encode(&msg)).await;
    });
}

/// A consistency level on the wire: 0 none (the leader's own), 1 ONE, 2 QUORUM, 3 ALL.
fn level_code(level: Option<Consistency>) -> u8 {
    match level {
        None => 0,
        Some(Consistency::One) => 1,
        Some(Consistency::Quorum) => 2,
        Some(Consistency::All) => 3,
    }
}

fn consistency_of(code: u8) -> Option<Consistency> {
    [Consistency::One, Consistency::Quorum, Consistency::All].into_iter().find(|&c| level_code(Some(c)) == code)
}

/// Step 2 of the module doc: the increment applied to this node's stored record (resolved with
/// `seen`), as (version, record, total). The caller holds the key's lock.
async fn store_locally(node: &Arc<Node>, key: &[u8], by: i64, seen: Versioned) -> Result<(u64, Vec<u8>, i64), Reply> {
    for _ in 0..RETRIES {
        let version = node.coordinator.fresh_version().await.map_err(Reply::err)?;
        let (n, k, s) = (node.clone(), key.to_vec(), seen.clone());
        let attempt = tokio::task::spawn_blocking(move || add_and_store(&n, &k, by, s, version)).await;
        match attempt.map_err(|e| Reply::err(format!("counter task failed: {e}")))?? {
            Some(done) => return Ok(done),
            None => continue, // a newer record arrived meanwhile: build on it
        }
    }
    Err(Reply::err("the key kept changing under the increment; try again"))
}

/// Read the local record, resolve it with `seen`, add `by` to this node's shard and store it at
/// a version past both (and past `fresh`); `None` if storage found a newer record meanwhile.
fn add_and_store(
    node: &Node,
    key: &[u8],
    by: i64,
    seen: Versioned,
    fresh: u64,
) -> Result<Option<(u64, Vec<u8>, i64)>, Reply> {
    let local = node.storage.get(key).map_err(Reply::err)?;
    let bad = |e: crate::counter::CounterError| Reply::err(e.to_string());
    let (version, value) =
        crate::counter::resolved((local.version, local.value), (seen.version, seen.value)).map_err(bad)?;
    let mut counter = counter_of(version, value)?;
    let total = counter.add(node.cfg.id, by).ok_or_else(|| Reply::err(OVERFLOW))?;
    let record = counter.encode();
    access::check_value(node, &record)?;
    let version = fresh.max(crate::counter::bump(version));
    let applied = node.storage.put(key, version, Some(&record)).map_err(Reply::err)?;
    Ok(applied.then_some((version, record, total)))
}

/// The counter a record of `version` is or starts: a counter as it is; nothing, a delete or an
/// expired value as 0; a plain value as its integer (else Redis's error), with its expiry.
fn counter_of(version: u64, value: Option<Vec<u8>>) -> Result<Counter, Reply> {
    if let Some(v) = value.as_deref().filter(|v| crate::counter::is_counter(v)) {
        return Counter::decode(v).map_err(|e| Reply::err(e.to_string()));
    }
    match access::live(value, crate::expiry::now_ms) {
        None => Ok(Counter::new(version, 0, 0)),
        Some(live) => {
            let base = integer(&live.value).map_err(|_| Reply::err(NOT_INTEGER))?;
            Ok(Counter::new(version, base, live.expires.unwrap_or(0)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_cross_the_wire() {
        for l in [None, Some(Consistency::One), Some(Consistency::Quorum), Some(Consistency::All)] {
            assert_eq!(consistency_of(level_code(l)), l);
        }
        assert_eq!(consistency_of(9), None);
    }

    #[test]
    fn counters_start_from_what_the_key_holds() {
        assert_eq!(counter_of(0, None).unwrap(), Counter::new(0, 0, 0));
        assert_eq!(counter_of(7, Some(b"10".to_vec())).unwrap(), Counter::new(7, 10, 0));
        let expiring = crate::expiry::encode(b"-3", Some(u64::MAX - 1));
        assert_eq!(counter_of(7, Some(expiring)).unwrap(), Counter::new(7, -3, u64::MAX - 1));
        let gone = crate::expiry::encode(b"5", Some(1));
        assert_eq!(counter_of(9, Some(gone)).unwrap(), Counter::new(9, 0, 0), "an expired value is absent");
        for bad in [&b"abc"[..], b"1.5", b" 1", b"99999999999999999999"] {
            assert!(counter_of(1, Some(bad.to_vec())).is_err(), "{bad:?}");
        }
        let mut c = Counter::new(3, 1, 0);
        c.add(2, 5);
        assert_eq!(counter_of(9, Some(c.encode())).unwrap(), c);
        assert_eq!(live(&c.encode(), || 0).unwrap().value, b"6");
    }
}
