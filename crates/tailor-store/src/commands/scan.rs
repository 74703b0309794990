//! Cluster-wide key listing: `SCAN cursor [MATCH pattern] [COUNT n]`, `KEYS pattern`, `DBSIZE`.
//!
//! The cursor is a ring token (an integer, as clients expect): the keys are listed in token
//! order (the storage's `versions` keyspace is token-ordered). One SCAN step takes the ring
//! range holding the cursor's token and asks each of its up replicas (itself through storage,
//! peers with anti-entropy's `KeysRequest`, one page each: at most 4096 keys) for its keys from
//! that token on; the answers are merged (union, newest version per key) and cut before the
//! first token a truncated answer may not have covered, so keys sharing a token are never split
//! across two steps; the step returns the live keys (not deleted, not expired) of at most about
//! COUNT tokens and the next token as the cursor, `0` when the ring's end is reached. A key
//! written or deleted during a scan may or may not be listed; a key present for the whole scan
//! is listed exactly once, if one of its replicas is up.
//!
//! `KEYS`, `DBSIZE` and `FLUSHDB` (which deletes what it finds) run a whole scan: their cost is a read of every key's version on every
//! replica (O(keys × replication)); KEYS refuses to answer past [`MAX_KEYS`] matches and DBSIZE
//! counts live keys cluster-wide (each once), as INFO's keyspace section does ([`count_keys`]).

use super::access::integer;
use crate::internode::Message;
use crate::node::Node;
use crate::resp::Reply;
use crate::storage::KeyVersion;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tailor_core::ring::{Ring, TokenRange};

/// Largest COUNT a SCAN step honours.
pub const MAX_COUNT: usize = 1000;

/// Most keys KEYS answers (use SCAN past it).
pub const MAX_KEYS: usize = 100_000;

/// How long a peer may take with one key page.
const PAGE_TIMEOUT: Duration = Duration::from_secs(10);

/// Keys in token order: (token, key) → (version, tombstone), the newest seen.
type Merged = BTreeMap<(u64, Vec<u8>), (u64, bool)>;

/// One replica's page of keys from `first` to `last`: the keys and whether it was truncated.
async fn page(node: &Arc<Node>, replica: u32, first: u64, last: u64) -> Result<(Vec<KeyVersion>, bool), String> {
    let tokens = crate::merkle::Tokens::new(first, last).ok_or("empty token range")?;
    if replica == node.cfg.id {
        let storage = node.storage.clone();
        let job = move || crate::anti_entropy::list(&storage, tokens, None).map_err(|e| e.to_string());
        return tokio::task::spawn_blocking(job).await.map_err(|e| e.to_string())?;
    }
    let Some(Some(peer)) = node.peers.get(replica as usize) else { return Err(format!("node {replica} is no peer")) };
    if !peer.is_up() {
        return Err(format!("node {replica} is down"));
    }
    let id = node.network.ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    match peer.call(Message::KeysRequest { id, first, last, after: None }, PAGE_TIMEOUT).await {
        Ok(Message::KeysReply { entries, more, .. }) => Ok((entries, more)),
        Ok(other) => Err(format!("node {replica} answered a key list with {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

/// Fold one replica's page into `merged`; the first token it may not have covered, if truncated.
fn fold(merged: &mut Merged, entries: Vec<KeyVersion>, more: bool, first: u64, last: u64) -> Option<u64> {
    let end = if more { entries.last().map(|kv| crate::token(&kv.key)) } else { None };
    for kv in entries {
        let token = crate::token(&kv.key);
        if token < first || token > last {
            continue; // a peer straying outside the range is ignored
        }
        let e = merged.entry((token, kv.key)).or_insert((0, true));
        if kv.version >= e.0 {
            *e = (kv.version, kv.tombstone);
        }
    }
    end
}

/// The range of `ring` holding `token`.
fn range_of(ring: &Ring, token: u64) -> Option<TokenRange> {
    ring.ranges().into_iter().find(|r| r.first <= token && token <= r.last)
}

/// One SCAN step from token `at`: the live keys found (in token order) and the next cursor.
pub async fn step(node: &Arc<Node>, at: u64, count: usize) -> Result<(Vec<Vec<u8>>, u64), Reply> {
    let c = &node.cfg;
    let ring = Ring::new(c.members.len(), c.replication, c.vnodes).map_err(Reply::err)?;
    let range = range_of(&ring, at).ok_or_else(|| Reply::err("invalid cursor"))?;
    let (mut merged, mut cut, mut answered, mut last_error) = (Merged::new(), None::<u64>, 0, String::new());
    for &r in range.replicas.iter() {
        match page(node, r, at, range.last).await {
            Ok((entries, more)) => {
                answered += 1;
                if let Some(end) = fold(&mut merged, entries, more, at, range.last) {
                    cut = Some(cut.map_or(end, |c| c.min(end)));
                }
            }
            Err(e) => last_error = e,
        }
    }
    if answered == 0 {
        return Err(Reply::err(format!("SCAN: no replica of the token range answered ({last_error})")));
    }
    // a truncated answer covered the tokens before its last one; one token is never split
    let cut = cut.map(|c| c.max(at.saturating_add(1)));
    let (mut keys, mut tokens, mut next) = (Vec::new(), 0, cut.or(range.last.checked_add(1)));
    let mut prev = None;
    for ((token, key), (_, tombstone)) in merged {
        if cut.is_some_and(|c| token >= c) {
            break;
        }
        if prev != Some(token) {
            if tokens == count {
                next = Some(token);
                break;
            }
            tokens += 1;
            prev = Some(token);
        }
        if !tombstone {
            keys.push(key);
        }
    }
    Ok((keys, next.unwrap_or(0)))
}

/// SCAN's options: (MATCH pattern, COUNT).
pub(super) fn options(args: &[Vec<u8>]) -> Result<(Option<Vec<u8>>, usize), Reply> {
    let (mut pattern, mut count, mut it) = (None, 10, args.iter());
    while let Some(opt) = it.next() {
        let value = it.next().ok_or_else(|| Reply::err("syntax error"))?;
        match opt.to_ascii_lowercase().as_slice() {
            b"match" => pattern = Some(value.clone()),
            b"count" => match integer(value)? {
                n if n < 1 => return Err(Reply::err("syntax error")),
                n => count = (n as usize).min(MAX_COUNT),
            },
            _ => return Err(Reply::err("syntax error")),
        }
    }
    Ok((pattern, count))
}

/// `SCAN cursor [MATCH pattern] [COUNT n]`.
pub async fn scan(node: &Arc<Node>, at: u64, pattern: Option<&[u8]>, count: usize) -> Reply {
    match step(node, at, count).await {
        Ok((keys, next)) => {
            let keys = keys.into_iter().filter(|k| pattern.is_none_or(|p| super::glob::matches(p, k)));
            Reply::Array(vec![
                Reply::Bulk(next.to_string().into_bytes()),
                Reply::Array(keys.map(Reply::Bulk).collect()),
            ])
        }
        Err(e) => e,
    }
}

/// Visit every live key of the cluster (a whole scan) until `visit` returns an error.
async fn every_key(node: &Arc<Node>, mut visit: impl FnMut(Vec<u8>) -> Result<(), Reply>) -> Result<(), Reply> {
    let mut at = 0;
    loop {
        let (keys, next) = step(node, at, MAX_COUNT).await?;
        for k in keys {
            visit(k)?;
        }
        if next == 0 {
            return Ok(());
        }
        at = next;
    }
}

/// `KEYS pattern`: a whole scan; refused past [`MAX_KEYS`] matches.
pub async fn keys(node: &Arc<Node>, pattern: &[u8]) -> Reply {
    let mut out = Vec::new();
    let found = every_key(node, |k| {
        if super::glob::matches(pattern, &k) {
            if out.len() == MAX_KEYS {
                return Err(Reply::err(format!("KEYS matches more than {MAX_KEYS} keys: use SCAN")));
            }
            out.push(Reply::Bulk(k));
        }
        Ok(())
    })
    .await;
    found.map_or_else(|e| e, |()| Reply::Array(out))
}

/// `FLUSHDB [ASYNC|SYNC]` (admin only when there is an admin password): a whole scan that
/// deletes every live key it finds, step by step, each delete a replicated tombstone at the
/// session's write consistency. Not atomic: keys written during the flush may survive it, and a
/// failure part way leaves the keys before it deleted.
pub async fn flushdb(node: &Arc<Node>, session: &crate::session::Session) -> Reply {
    let mut at = 0;
    loop {
        let (keys, next) = match step(node, at, MAX_COUNT).await {
            Ok(s) => s,
            Err(e) => return e,
        };
        for k in keys {
            if let Err(e) = super::access::delete(node, session, &k).await {
                return e;
            }
        }
        if next == 0 {
            return Reply::ok();
        }
        at = next;
    }
}

/// `DBSIZE`: the live keys of the whole cluster, each once (a whole scan).
pub async fn dbsize(node: &Arc<Node>) -> Reply {
    count_keys(node).await.map_or_else(|e| e, Reply::Integer)
}

/// The live keys of the whole cluster, each once (a whole scan): `DBSIZE` and `INFO keyspace`.
pub async fn count_keys(node: &Arc<Node>) -> Result<i64, Reply> {
    let mut n = 0;
    every_key(node, |_| {
        n += 1;
        Ok(())
    })
    .await?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, version: u64, tombstone: bool) -> KeyVersion {
        KeyVersion { key: key.as_bytes().to_vec(), version, tombstone }
    }

    #[test]
    fn pages_merge_to_the_newest_version_and_truncation_cuts() {
        let mut m = Merged::new();
        assert_eq!(fold(&mut m, vec![kv("a", 1, false), kv("b", 5, true)], false, 0, u64::MAX), None);
        let end = fold(&mut m, vec![kv("a", 3, true), kv("c", 1, false)], true, 0, u64::MAX);
        assert_eq!(end, Some(crate::token(b"c")));
        assert_eq!(m.len(), 3);
        assert_eq!(m[&(crate::token(b"a"), b"a".to_vec())], (3, true), "the newest wins");
        assert_eq!(m[&(crate::token(b"b"), b"b".to_vec())], (5, true));
    }

    #[test]
    fn options_are_checked() {
        let a = |s: &[&str]| s.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(options(&a(&["MATCH", "k*", "COUNT", "5000"])), Ok((Some(b"k*".to_vec()), MAX_COUNT)));
        assert!(options(&a(&["COUNT", "0"])).is_err() && options(&a(&["COUNT"])).is_err());
        assert!(options(&a(&["COUNT", "x"])).is_err() && options(&a(&["BOGUS", "1"])).is_err());
    }
}
