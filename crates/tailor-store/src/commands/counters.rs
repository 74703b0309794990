//! `INCR`, `DECR`, `INCRBY`, `DECRBY`: replicated counters (the record and its merge rule are
//! in `counter.rs`; what a client sees is in `docs/redis.md`, "Counters").
//!
//! The coordinator that receives the command is the increment's *leader* when it is a replica
//! of the key (every node is, when the replication factor is the node count); a coordinator
//! that is not refuses, naming the replicas (forwarding to one is not built yet). The leader:
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
//! a client's retry may apply twice, as in Cassandra: counters are not idempotent.

use super::access::{self, either, integer, Live};
use crate::counter::Counter;
use crate::node::Node;
use crate::resp::Reply;
use crate::session::Session;
use crate::storage::Versioned;
use std::sync::{Arc, OnceLock};

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

/// `INCR key`, `DECR key`, `INCRBY key n`, `DECRBY key n`: the new total.
pub async fn incr(node: &Arc<Node>, session: &Session, name: &str, args: &[Vec<u8>]) -> Reply {
    let (key, by) = match (name, args) {
        ("incr", [_, k]) => (k, Ok(1)),
        ("decr", [_, k]) => (k, Ok(-1)),
        ("incrby", [_, k, n]) => (k, integer(n)),
        ("decrby", [_, k, n]) => {
            (k, integer(n).and_then(|n| n.checked_neg().ok_or_else(|| Reply::err("decrement would overflow"))))
        }
        _ => return super::wrong_args(name),
    };
    either(async { increment(node, session, key, by?).await.map(Reply::Integer) }.await)
}

/// Add `by` to `key`'s counter as its leader; the new total.
async fn increment(node: &Arc<Node>, session: &Session, key: &[u8], by: i64) -> Result<i64, Reply> {
    let replicas = node.coordinator.replicas_of(key);
    if !replicas.contains(&node.cfg.id) {
        return Err(Reply::err(format!(
            "INCR-family commands run on a replica of the key; send this one to node {replicas:?} (its replicas)"
        )));
    }
    let started = std::time::Instant::now();
    let level = session.consistency().unwrap_or(node.coordinator.consistency().1);
    let seen = node.coordinator.read(key, Some(level)).await.map_err(Reply::err)?;
    let (version, record, total) = {
        let _lock = lock_of(key).lock().await;
        store_locally(node, key, by, seen).await?
    };
    let coord = &node.coordinator;
    coord.write_at(key, version, Some(record), session.consistency(), started).await.map_err(Reply::err)?;
    Ok(total)
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
