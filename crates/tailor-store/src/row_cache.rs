//! The row cache: the newest record of recently read and written keys, in memory in front of
//! the LSM tree, as ScyllaDB's row cache (and Cassandra's optional one) keep rows.
//!
//! Why: a fjall point lookup costs about 3 µs (memtable skiplist, table index and block, and for
//! an absent key a second lookup of its tombstone's version), which bounded a node's GET rate
//! (docs/store-speed.md); a hit here is one hash lookup and a reference count.
//!
//! Coherence, the one rule that makes it safe: an entry is created, replaced or removed only
//! while the key's storage stripe lock is held, and always with what storage holds at that
//! moment (a write's new record after its commit, a missed read's record read under the lock).
//! Writes take the same lock, so a cached entry is always exactly storage's newest record and a
//! read never sees an older version than storage would give it. Eviction can only drop entries.
//!
//! Entries are negative too: a key never written (version 0) or deleted (its tombstone's
//! version) is cached as absent, so misses of absent keys (a third of redis-benchmark's random
//! GETs) skip both of the engine's lookups. Rows with records above [`MAX_ROW_BYTES`] are not
//! kept (large values are dominated by their own copy, and would crowd out many small rows).
//! Eviction is quick_cache's S3-FIFO (the crate fjall's block cache is built on), weighted by
//! bytes.

use fjall::Slice;
use quick_cache::sync::Cache;
use quick_cache::Weighter;
use std::sync::atomic::{AtomicU64, Ordering};

/// Rows whose record (8-byte version and value) is larger than this are not cached.
pub const MAX_ROW_BYTES: usize = 64 << 10;

/// Bytes charged per entry on top of its key and record: the cache's slot, the key's box and the
/// record's shared header (an estimate; it only sets how many rows fit).
const ENTRY_OVERHEAD: u64 = 80;

/// One key's newest state in storage.
#[derive(Clone, Debug)]
pub struct Row {
    /// The version of the newest write or delete (0: never written, or purged).
    pub version: u64,
    /// The data record (`version ++ value`), `None` when absent or deleted.
    pub record: Option<Slice>,
}

#[derive(Clone)]
struct RowWeight;

impl Weighter<Box<[u8]>, Row> for RowWeight {
    fn weight(&self, key: &Box<[u8]>, row: &Row) -> u64 {
        key.len() as u64 + row.record.as_ref().map_or(0, |r| r.len() as u64) + ENTRY_OVERHEAD
    }
}

/// The node's row cache; see the module doc. Off (every lookup a miss) when built with 0 bytes.
pub struct RowCache {
    rows: Option<Cache<Box<[u8]>, Row, RowWeight>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// The row cache's counters, for the metrics endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowCacheStats {
    /// Lookups answered from memory.
    pub hits: u64,
    /// Lookups that went to the engine.
    pub misses: u64,
    /// Bytes held (by the weights above).
    pub bytes: u64,
    /// Rows held.
    pub rows: u64,
    /// The bound on `bytes`.
    pub capacity: u64,
}

impl RowCache {
    /// A cache of at most `bytes` (0: off).
    pub fn new(bytes: u64) -> RowCache {
        let rows = (bytes > 0).then(|| {
            let estimated_rows = (bytes / 1024).clamp(16, 1 << 24) as usize;
            Cache::with_weighter(estimated_rows, bytes, RowWeight)
        });
        RowCache { rows, hits: AtomicU64::new(0), misses: AtomicU64::new(0) }
    }

    /// `key`'s cached row, counting the hit or miss (never a miss when the cache is off).
    pub fn get(&self, key: &[u8]) -> Option<Row> {
        let rows = self.rows.as_ref()?;
        let row = rows.get(key);
        let counter = if row.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        row
    }

    /// `key`'s cached row without counting (a writer's version check).
    pub fn peek(&self, key: &[u8]) -> Option<Row> {
        self.rows.as_ref()?.peek(key)
    }

    /// Record storage's newest state of `key`. The caller holds `key`'s stripe lock (see the
    /// module doc). A row too large to keep drops any older entry instead.
    pub fn put(&self, key: &[u8], row: Row) {
        let Some(rows) = &self.rows else { return };
        if row.record.as_ref().is_some_and(|r| r.len() > MAX_ROW_BYTES) {
            rows.remove(key);
        } else {
            rows.insert(key.into(), row);
        }
    }

    /// Forget `key` (the caller holds its stripe lock).
    pub fn remove(&self, key: &[u8]) {
        if let Some(rows) = &self.rows {
            rows.remove(key);
        }
    }

    /// Its counters now.
    pub fn stats(&self) -> RowCacheStats {
        let Some(rows) = &self.rows else { return RowCacheStats::default() };
        RowCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            bytes: rows.weight(),
            rows: rows.len() as u64,
            capacity: rows.capacity(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(version: u64, value: Option<&[u8]>) -> Row {
        Row { version, record: value.map(Slice::from) }
    }

    #[test]
    fn off_caches_nothing_and_counts_nothing() {
        let c = RowCache::new(0);
        c.put(b"k", row(1, Some(b"v")));
        assert!(c.get(b"k").is_none());
        assert_eq!(c.stats(), RowCacheStats::default());
    }

    #[test]
    fn rows_replace_and_count_hits_and_misses() {
        let c = RowCache::new(1 << 20);
        assert!(c.get(b"k").is_none());
        c.put(b"k", row(1, Some(b"one")));
        c.put(b"k", row(2, None));
        let got = c.get(b"k").expect("cached");
        assert_eq!((got.version, got.record.is_none()), (2, true), "the newest state, a tombstone");
        assert!(c.peek(b"k").is_some());
        c.remove(b"k");
        assert!(c.get(b"k").is_none());
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.rows, s.capacity), (1, 2, 0, 1 << 20), "peek is not counted");
    }

    #[test]
    fn a_large_row_is_not_kept_and_drops_the_older_one() {
        let c = RowCache::new(1 << 20);
        c.put(b"k", row(1, Some(b"small")));
        c.put(b"k", row(2, Some(&vec![0; MAX_ROW_BYTES + 1])));
        assert!(c.get(b"k").is_none(), "a stale small row must not survive a large write");
    }

    #[test]
    fn memory_stays_within_the_bound() {
        let c = RowCache::new(256 << 10);
        for i in 0..10_000u32 {
            c.put(&i.to_be_bytes(), row(1, Some(&[7; 1000])));
        }
        let s = c.stats();
        assert!(s.bytes <= 256 << 10, "{} bytes held", s.bytes);
        assert!(s.rows > 100, "it still holds rows: {}", s.rows);
    }
}
