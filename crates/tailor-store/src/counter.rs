//! Counter records: INCR/DECR/INCRBY/DECRBY as replicated counters (Cassandra's counter model,
//! adapted; `commands/counters.rs` runs the commands, `docs/redis.md` says what a client sees).
//!
//! A counter is a value of its own encoding, inside the replicated value bytes like an expiry
//! envelope (`expiry.rs`), so every path that copies values (write copies, internode `Write` and
//! `ReadReply`, hints, read repair, anti-entropy) carries it unchanged:
//! [`MAGIC`] ++ expiry (u64 LE, Unix ms, 0 = none) ++ base epoch (u64 LE) ++ base (i64 LE) ++
//! shard count (u16 LE) ++ per shard, in ascending node order: node (u32 LE) ++ clock (u64 LE)
//! ++ sum (i64 LE). A client value that begins with [`MAGIC`] is stored in an expiry envelope
//! (`expiry::encode`), so stored bytes that begin with it are always a counter.
//!
//! - The *base epoch* is the version of the plain value (or delete, or nothing: 0) the counter
//!   started from, the *base* that value as an integer; the expiry is that value's too (INCR
//!   keeps a TTL, as in Redis). Every counter of one epoch derives from the same record, so they
//!   agree on all three.
//! - A shard `node -> (clock, sum)` holds what node `node` added: only that node writes it (as
//!   the *leader* of an increment), under a per-key lock, stepping its clock by one each time.
//! - The value a client sees is base + Σ sums, in decimal.
//!
//! Resolution ([`resolve`]), the one rule for every copy a replica stores and every read that
//! reconciles answers: records are ranked by (epoch for a counter / version for a plain value or
//! delete, then counter over plain): the higher rank wins, so a SET or DEL newer than a
//! counter's base ends the counter, and an increment built on an older base than a stored plain
//! value never resurrects it. Two counters of one epoch merge: per shard, the larger clock's
//! entry. That is a join (idempotent, commutative, associative; tested below).
//!
//! Versions: a record that wins keeps its version (equal content: the larger of the two); a
//! merge that made something new is one microsecond past the larger ([`bump`]), so it is newer
//! than both inputs. A plain value that ends a counter may have a lower version than the counter
//! it replaces (its rank is higher): versions are then not the order of records, so read repair
//! and anti-entropy resolve every copy when a counter is among them and write the resolution
//! to each replica whose copy differs (`repair::reconcile`, `anti_entropy.rs`), instead of
//! sending the highest version to the lower ones. (Two different records of one version would
//! hide from the Merkle trees, which compare versions; versions carry their node, so only a bump
//! landing on a version another record of the key holds could do that.)

use std::collections::BTreeMap;

/// Prefix of a counter record (shares `\xFF\x00T` with the expiry envelope).
pub const MAGIC: &[u8; 5] = b"\xFF\x00TCN";

/// Bytes before the shards.
const HEAD: usize = MAGIC.len() + 8 + 8 + 8 + 2;

/// Bytes of one shard.
const SHARD: usize = 4 + 8 + 8;

/// Most shards any record may hold (node ids of versions are 8 bits); a peer's record is also
/// held to the cluster's node count ([`check`]).
pub const MAX_SHARDS: usize = 256;

/// Bytes of the largest counter record.
pub const MAX_BYTES: usize = HEAD + MAX_SHARDS * SHARD;

/// What one node added to a counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Increments the node made (the larger one wins a merge).
    pub clock: u64,
    /// Their sum.
    pub sum: i64,
}

/// A decoded counter record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counter {
    /// Expiry (Unix ms) of the base value, 0: none.
    pub expires: u64,
    /// Version of the record the counter started from (0: nothing).
    pub epoch: u64,
    /// That record's integer (0 if it was absent).
    pub base: i64,
    /// Node → its shard.
    pub shards: BTreeMap<u32, Shard>,
}

/// A malformed counter record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CounterError {
    /// Shorter than its header, or not as long as its shards say.
    #[error("counter record of {0} bytes is truncated or has trailing bytes")]
    Length(usize),
    /// More shards than allowed.
    #[error("counter record has {0} shards, more than the {1} nodes of the cluster")]
    Shards(usize, usize),
    /// Shards not in strictly ascending node order.
    #[error("counter record's shards are not in ascending node order")]
    Order,
    /// A shard with clock 0 (a node that added nothing has no shard).
    #[error("counter record has a shard of clock 0 (node {0})")]
    Clock(u32),
}

/// Whether replicated value bytes are a counter record.
pub fn is_counter(stored: &[u8]) -> bool {
    stored.starts_with(MAGIC)
}

/// Check a peer-sent counter record against a cluster of `members` nodes.
pub fn check(stored: &[u8], members: usize) -> Result<(), CounterError> {
    let c = Counter::decode(stored)?;
    if c.shards.len() > members {
        return Err(CounterError::Shards(c.shards.len(), members));
    }
    Ok(())
}

fn word(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl Counter {
    /// A counter of no increments on `base` (the record of version `epoch`, expiring at `expires`).
    pub fn new(epoch: u64, base: i64, expires: u64) -> Counter {
        Counter { expires, epoch, base, shards: BTreeMap::new() }
    }

    /// Decode a record (it begins with [`MAGIC`]).
    pub fn decode(b: &[u8]) -> Result<Counter, CounterError> {
        if b.len() < HEAD || !is_counter(b) {
            return Err(CounterError::Length(b.len()));
        }
        let n = u16::from_le_bytes([b[HEAD - 2], b[HEAD - 1]]) as usize;
        if n > MAX_SHARDS {
            return Err(CounterError::Shards(n, MAX_SHARDS));
        }
        if b.len() != HEAD + n * SHARD {
            return Err(CounterError::Length(b.len()));
        }
        let mut c = Counter::new(word(b, 13), word(b, 21) as i64, word(b, 5));
        for s in b[HEAD..].chunks_exact(SHARD) {
            let node = u32::from_le_bytes(s[..4].try_into().expect("4 bytes"));
            let shard = Shard { clock: word(s, 4), sum: word(s, 12) as i64 };
            if shard.clock == 0 {
                return Err(CounterError::Clock(node));
            }
            if c.shards.last_key_value().is_some_and(|(&last, _)| last >= node) {
                return Err(CounterError::Order);
            }
            c.shards.insert(node, shard);
        }
        Ok(c)
    }

    /// The record's bytes (canonical: equal counters encode equally).
    pub fn encode(&self) -> Vec<u8> {
        debug_assert!(self.shards.len() <= MAX_SHARDS && self.shards.values().all(|s| s.clock > 0));
        let mut out = Vec::with_capacity(HEAD + self.shards.len() * SHARD);
        out.extend_from_slice(MAGIC);
        for w in [self.expires, self.epoch, self.base as u64] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&(self.shards.len() as u16).to_le_bytes());
        for (node, s) in &self.shards {
            out.extend_from_slice(&node.to_le_bytes());
            out.extend_from_slice(&s.clock.to_le_bytes());
            out.extend_from_slice(&s.sum.to_le_bytes());
        }
        out
    }

    /// Base plus every shard's sum (wider than `i64`: shards of different leaders could
    /// together pass its range).
    pub fn total(&self) -> i128 {
        self.base as i128 + self.shards.values().map(|s| s.sum as i128).sum::<i128>()
    }

    /// Add `by` to `node`'s shard; the new total, or `None` (nothing changed) if it would leave
    /// the `i64` range (Redis's overflow error).
    pub fn add(&mut self, node: u32, by: i64) -> Option<i64> {
        let total = i64::try_from(self.total() + by as i128).ok()?;
        let shard = self.shards.entry(node).or_insert(Shard { clock: 0, sum: 0 });
        let sum = shard.sum.checked_add(by);
        let Some(sum) = sum else {
            if shard.clock == 0 {
                self.shards.remove(&node);
            }
            return None;
        };
        *shard = Shard { clock: shard.clock + 1, sum };
        Some(total)
    }

    /// The merge of two counters of one epoch: per node, the shard of the larger clock.
    pub fn merge(&self, other: &Counter) -> Counter {
        debug_assert_eq!(self.epoch, other.epoch, "only counters of one epoch merge");
        let mut out = self.clone();
        // one epoch derives from one record; should two ever disagree, the larger wins on both
        out.base = self.base.max(other.base);
        out.expires = self.expires.max(other.expires);
        for (&node, &s) in &other.shards {
            let mine = out.shards.entry(node).or_insert(s);
            if s.clock > mine.clock {
                *mine = s;
            }
        }
        debug_assert!(out.shards.len() >= self.shards.len().max(other.shards.len()));
        debug_assert!(out.shards.iter().all(|(n, s)| {
            s.clock >= self.shards.get(n).map_or(0, |m| m.clock)
                && s.clock >= other.shards.get(n).map_or(0, |m| m.clock)
        }));
        out
    }
}

/// One microsecond past `version` (the same node bits: `hlc.rs`).
pub fn bump(version: u64) -> u64 {
    version.saturating_add(1 << 8)
}

/// Which record [`resolve`] kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The stored one.
    Stored,
    /// The incoming one.
    Incoming,
    /// A merge of both.
    Merged(Vec<u8>),
}

/// The outcome of [`resolve`]: the record to hold, at `version`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Its version.
    pub version: u64,
    /// Its content.
    pub pick: Pick,
}

/// A record as [`resolve`] compares it.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Plain,
    Counter(Counter),
}

fn kind(value: Option<&[u8]>) -> Result<Kind, CounterError> {
    match value {
        Some(v) if is_counter(v) => Ok(Kind::Counter(Counter::decode(v)?)),
        _ => Ok(Kind::Plain),
    }
}

/// A record's rank: (epoch or version, whether a counter); then a value over a delete.
fn rank(version: u64, value: Option<&[u8]>, kind: &Kind) -> (u64, bool, bool) {
    match kind {
        Kind::Counter(c) => (c.epoch, true, true),
        Kind::Plain => (version, false, value.is_some()),
    }
}

/// The record two copies of one key resolve to: `stored` (the one held) and `incoming`, each
/// (version, value or `None` for a delete). See the module's doc for the rule. Errors on a
/// malformed counter record.
pub fn resolve(stored: (u64, Option<&[u8]>), incoming: (u64, Option<&[u8]>)) -> Result<Resolved, CounterError> {
    let (ks, ki) = (kind(stored.1)?, kind(incoming.1)?);
    let (rs, ri) = (rank(stored.0, stored.1, &ks), rank(incoming.0, incoming.1, &ki));
    let pick = match (&ks, &ki) {
        (Kind::Counter(s), Kind::Counter(i)) if s.epoch == i.epoch => {
            let merged = s.merge(i).encode();
            if Some(merged.as_slice()) == stored.1 {
                Pick::Stored
            } else if Some(merged.as_slice()) == incoming.1 {
                Pick::Incoming
            } else {
                Pick::Merged(merged)
            }
        }
        // at one rank (two plain copies of one version) the stored one stays
        _ if ri > rs => Pick::Incoming,
        _ => Pick::Stored,
    };
    let max = stored.0.max(incoming.0);
    let version = match &pick {
        _ if stored.1 == incoming.1 => max,
        Pick::Stored => stored.0,
        Pick::Incoming => incoming.0,
        Pick::Merged(_) => bump(max),
    };
    debug_assert!(version >= max || !matches!(pick, Pick::Merged(_)), "a merge is newer than both");
    Ok(Resolved { version, pick })
}

/// [`resolve`] on owned copies: the record kept, as (version, value).
pub fn resolved(
    stored: (u64, Option<Vec<u8>>),
    incoming: (u64, Option<Vec<u8>>),
) -> Result<(u64, Option<Vec<u8>>), CounterError> {
    let r = resolve((stored.0, stored.1.as_deref()), (incoming.0, incoming.1.as_deref()))?;
    Ok(match r.pick {
        Pick::Stored => (r.version, stored.1),
        Pick::Incoming => (r.version, incoming.1),
        Pick::Merged(m) => (r.version, Some(m)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter(epoch: u64, shards: &[(u32, u64, i64)]) -> Counter {
        let mut c = Counter::new(epoch, 10, 0);
        for &(n, clock, sum) in shards {
            c.shards.insert(n, Shard { clock, sum });
        }
        c
    }

    type Rec = (u64, Option<Vec<u8>>);

    fn join(a: &Rec, b: &Rec) -> Rec {
        resolved(a.clone(), b.clone()).unwrap()
    }

    /// Small records of every kind: deletes, plain values, counters of two epochs with shards
    /// of two nodes at clocks 0..=2.
    fn records() -> Vec<Rec> {
        let mut out = vec![(0, None), (100, None), (100, Some(b"5".to_vec())), (300, Some(b"x".to_vec()))];
        for epoch in [100, 200] {
            for a in 0..3u64 {
                for b in 0..3u64 {
                    let shards: Vec<_> = [(1, a), (2, b)]
                        .into_iter()
                        .filter(|s| s.1 > 0)
                        .map(|(n, c)| (n, c, c as i64 * n as i64))
                        .collect();
                    let version = epoch + 1000 * (a + 3 * b) + 256;
                    out.push((version, Some(counter(epoch, &shards).encode())));
                }
            }
        }
        out
    }

    #[test]
    fn records_round_trip_and_bad_ones_are_refused() {
        let c = counter(7, &[(0, 1, -3), (4, 2, 9)]);
        let b = c.encode();
        assert!(is_counter(&b));
        assert_eq!(Counter::decode(&b).unwrap(), c);
        assert_eq!(c.total(), 16);
        assert_eq!(Counter::decode(&b[..b.len() - 1]), Err(CounterError::Length(b.len() - 1)));
        assert_eq!(check(&b, 1), Err(CounterError::Shards(2, 1)));
        assert_eq!(check(&b, 2), Ok(()));
        let mut swapped = b.clone();
        swapped[HEAD..HEAD + 4].copy_from_slice(&9u32.to_le_bytes());
        assert_eq!(Counter::decode(&swapped), Err(CounterError::Order));
        let mut zero = b.clone();
        zero[HEAD + 4..HEAD + 12].copy_from_slice(&0u64.to_le_bytes());
        assert_eq!(Counter::decode(&zero), Err(CounterError::Clock(0)));
        assert!(resolve((1, Some(&b[..HEAD - 1])), (2, None)).is_err(), "malformed bytes are an error, not a panic");
    }

    #[test]
    fn add_steps_the_clock_and_refuses_overflow() {
        let mut c = Counter::new(0, i64::MAX - 1, 0);
        assert_eq!(c.add(3, 1), Some(i64::MAX));
        assert_eq!(c.add(3, 1), None, "past i64::MAX");
        assert_eq!(c.shards[&3], Shard { clock: 1, sum: 1 });
        let mut low = Counter::new(0, 0, 0);
        assert_eq!(low.add(1, i64::MIN), Some(i64::MIN));
        assert_eq!(low.add(2, -1), None);
        assert!(!low.shards.contains_key(&2), "a refused first increment leaves no shard");
    }

    #[test]
    fn resolution_is_idempotent_commutative_and_associative() {
        let all = records();
        for a in &all {
            assert_eq!(join(a, a), *a, "idempotent");
            for b in &all {
                let (ab, ba) = (join(a, b), join(b, a));
                assert_eq!(ab.1, ba.1, "commutative content");
                assert_eq!(ab.0, ba.0, "commutative version");
                assert!(ab == *a || ab == *b || ab.0 > a.0.max(b.0), "a merge is newer than both");
                for c in &all {
                    assert_eq!(join(&ab, c).1, join(a, &join(b, c)).1, "associative content");
                }
            }
        }
    }

    #[test]
    fn newer_plain_values_end_counters_and_older_ones_do_not() {
        let c = (5000, Some(counter(100, &[(1, 3, 3)]).encode()));
        let newer_set = (150, Some(b"1".to_vec()));
        assert_eq!(join(&c, &newer_set), newer_set, "a SET after the base ends the counter");
        assert_eq!(join(&c, &(100, Some(b"10".to_vec()))), c, "the base itself does not");
        assert_eq!(join(&c, &(50, None)), c);
        let newer_counter = (4000, Some(counter(150, &[(2, 1, 1)]).encode()));
        assert_eq!(join(&c, &newer_counter).1, newer_counter.1, "a newer epoch wins");
    }

    #[test]
    fn a_merge_is_newer_than_both_and_repair_converges() {
        let a = (1000, Some(counter(100, &[(1, 2, 2)]).encode()));
        let b = (2000, Some(counter(100, &[(1, 1, 1), (2, 1, 1)]).encode()));
        let m = join(&a, &b);
        assert_eq!(m.0, bump(2000));
        assert_eq!(Counter::decode(m.1.as_ref().unwrap()).unwrap().total(), 13);
        // repair resolves both copies and writes the result back: then equal
        assert_eq!(join(&b, &a), m);
        assert_eq!(join(&m, &a), m);
        assert_eq!(join(&b, &m), m);
        // same content at two versions settles on the larger
        let same = (3000, a.1.clone());
        assert_eq!(join(&a, &same), same);
    }
}
