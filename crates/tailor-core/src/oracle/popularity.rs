//! Key-popularity oracle (Hector's workload oracle, docs/strategies.md, Facts): hashed access counters.
//!
//! Hector hashes each key to a long and increments its count in a concurrent map; the memory is
//! bounded by hashing. Here the map is a fixed table of atomic counters (a count-min sketch with
//! `rows` rows, one row by default), so increments are lock-free and the counter can be shared
//! between threads (or between simulated coordinators) behind an `Arc`. Collisions only ever
//! over-estimate a key's count: a cold key sharing a bucket with a hot one may be seen as popular.

use crate::ring::hash_key;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// Size of a [`PopularityCounter`] table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PopularityTable {
    /// Counters per row, rounded up to a power of two (default 2^20: with a 1e-5 threshold the
    /// average bucket frequency of a uniform workload stays ~10× below the threshold).
    pub buckets: usize,
    /// Independent rows; a key's count is the minimum over its rows (default 1, as Hector).
    pub rows: usize,
}

impl Default for PopularityTable {
    fn default() -> Self {
        PopularityTable { buckets: 1 << 20, rows: 1 }
    }
}

/// Lock-free hashed access counters answering "what fraction of all accesses went to this key".
#[derive(Debug)]
pub struct PopularityCounter {
    /// `rows * buckets` counters, row-major.
    counts: Box<[AtomicU64]>,
    /// `buckets - 1` (buckets is a power of two).
    mask: u64,
    rows: usize,
    total: AtomicU64,
}

impl PopularityCounter {
    /// An empty counter with the given table size (zero sizes are raised to 1).
    pub fn new(table: PopularityTable) -> Self {
        let buckets = table.buckets.max(1).next_power_of_two();
        let rows = table.rows.max(1);
        let counts: Box<[AtomicU64]> = (0..buckets * rows).map(|_| AtomicU64::new(0)).collect();
        debug_assert!(buckets.is_power_of_two() && counts.len() == buckets * rows, "a row of 2^k buckets per row");
        PopularityCounter { counts, mask: buckets as u64 - 1, rows, total: AtomicU64::new(0) }
    }

    /// Index of `key`'s counter in `row`; each row uses its own salt so rows collide independently.
    fn slot(&self, key: u64, row: usize) -> usize {
        debug_assert!(row < self.rows, "row {row} of {}", self.rows);
        let h = hash_key(key ^ (row as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F));
        let slot = row * (self.mask as usize + 1) + (h & self.mask) as usize;
        debug_assert!(slot < self.counts.len(), "slot {slot} within the table");
        slot
    }

    /// Count one access to `key`.
    pub fn record(&self, key: u64) {
        for row in 0..self.rows {
            // Relaxed: counts are statistics; no other memory is published through them.
            self.counts[self.slot(key, row)].fetch_add(1, Ordering::Relaxed);
        }
        self.total.fetch_add(1, Ordering::Relaxed);
    }

    /// Estimated accesses to `key` so far (never below the true count).
    pub fn count(&self, key: u64) -> u64 {
        (0..self.rows).map(|row| self.counts[self.slot(key, row)].load(Ordering::Relaxed)).min().unwrap_or(0)
    }

    /// Accesses recorded over all keys.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// The key's share of all accesses, `count / total` (0 before any access).
    pub fn frequency(&self, key: u64) -> f64 {
        let total = self.total();
        if total == 0 {
            return 0.0;
        }
        // A concurrent `record` may have bumped the key's bucket before the total: clamp to 1.
        let frequency = (self.count(key) as f64 / total as f64).min(1.0);
        debug_assert!((0.0..=1.0).contains(&frequency), "a frequency {frequency} is a share");
        frequency
    }
}

impl Default for PopularityCounter {
    fn default() -> Self {
        PopularityCounter::new(PopularityTable::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn small() -> PopularityCounter {
        PopularityCounter::new(PopularityTable { buckets: 1 << 12, rows: 2 })
    }

    #[test]
    fn frequency_is_count_over_total() {
        let c = small();
        assert_eq!(c.frequency(1), 0.0);
        for _ in 0..3 {
            c.record(1);
        }
        c.record(2);
        assert_eq!(c.total(), 4);
        assert_eq!(c.count(1), 3);
        assert!((c.frequency(1) - 0.75).abs() < 1e-12);
        assert!((c.frequency(2) - 0.25).abs() < 1e-12);
        assert_eq!(c.frequency(99), 0.0);
    }

    #[test]
    fn table_size_is_rounded_to_a_power_of_two() {
        let c = PopularityCounter::new(PopularityTable { buckets: 1000, rows: 0 });
        assert_eq!(c.mask, 1023);
        assert_eq!(c.rows, 1);
        c.record(5);
        assert_eq!(c.count(5), 1);
    }

    #[test]
    fn concurrent_increments_are_all_counted() {
        let c = Arc::new(small());
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let c = Arc::clone(&c);
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        c.record(7);
                        c.record(100 + t);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("counter thread panicked");
        }
        assert_eq!(c.total(), 80_000);
        assert_eq!(c.count(7), 40_000);
        assert!((c.frequency(7) - 0.5).abs() < 1e-12);
        assert!((0..4).all(|t| c.count(100 + t) == 10_000));
    }
}
