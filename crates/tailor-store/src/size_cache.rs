//! The replica's value sizes by key, so a read's job gets its exact size (the local queue's
//! order, `pending_work`, the large-request count) without a second storage lookup.
//!
//! Before it, every read looked the key up twice: its size in the `versions` keyspace at
//! admission, its value at execution; the first lookup took 17 % of a node's CPU under GET load
//! (perf, fjall's memtable search). Now the size comes from here, filled by every write and
//! read this replica executes, and storage is asked only on a miss.
//!
//! Choices:
//! - Direct-mapped, one `AtomicU64` per slot holding a 32-bit tag of the key's hash and the
//!   size: no lock, no allocation per entry, fixed memory ([`SLOTS`] × 8 bytes, paged in as
//!   used). A key that shares a slot evicts the other; a miss costs what every read cost before.
//! - A stale size (a write applied around this replica, e.g. by anti-entropy, or a tag
//!   collision, about 2^-32 per lookup) only misorders an estimate until the key's next read or
//!   write here refreshes it; no value, version or acknowledgement depends on it.

use std::sync::atomic::{AtomicU64, Ordering};

/// Slots: 2^20 (8 MiB): keeps the size of about a million hot keys.
pub const SLOTS: usize = 1 << 20;
const BITS: u32 = SLOTS.trailing_zeros();

/// Sizes above this are kept as this (the engine's values fit in 32 bits anyway).
const MAX_SIZE: u64 = u32::MAX as u64 - 1;

/// Value sizes by key hash; see the module doc.
pub struct SizeCache {
    slots: Box<[AtomicU64]>,
}

impl Default for SizeCache {
    fn default() -> Self {
        SizeCache { slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect() }
    }
}

impl SizeCache {
    /// The size last recorded for `key_hash`, if its slot still holds it.
    pub fn get(&self, key_hash: u64) -> Option<u64> {
        let word = self.slots[slot(key_hash)].load(Ordering::Relaxed);
        let (tag, stored) = ((word >> 32) as u32, word & u32::MAX as u64);
        (stored != 0 && tag == tag_of(key_hash)).then(|| stored - 1)
    }

    /// Record that the value under `key_hash` is `size` bytes (0: absent or deleted).
    pub fn put(&self, key_hash: u64, size: u64) {
        let word = (tag_of(key_hash) as u64) << 32 | (size.min(MAX_SIZE) + 1);
        self.slots[slot(key_hash)].store(word, Ordering::Relaxed);
    }
}

/// Fibonacci hashing: the key hash is FNV-1a, whose low bits alone spread poorly.
fn slot(key_hash: u64) -> usize {
    (key_hash.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - BITS)) as usize
}

fn tag_of(key_hash: u64) -> u32 {
    key_hash as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_sizes_by_key_and_evicts_on_a_shared_slot() {
        let c = SizeCache::default();
        let (a, b) = (crate::key_hash(b"a"), crate::key_hash(b"b"));
        assert_eq!(c.get(a), None);
        c.put(a, 1024);
        c.put(b, 0);
        assert_eq!((c.get(a), c.get(b)), (Some(1024), Some(0)), "0 is a size (absent), not a miss");
        c.put(a, 5);
        assert_eq!(c.get(a), Some(5));
        c.put(a, u64::MAX);
        assert_eq!(c.get(a), Some(MAX_SIZE), "clamped, still a hit");
        // another hash in a's slot with a different tag evicts it, and a's lookup misses
        let other = (1..u64::MAX).map(|i| a ^ i).find(|&h| slot(h) == slot(a)).unwrap();
        c.put(other, 7);
        assert_eq!((c.get(a), c.get(other)), (None, Some(7)));
    }
}
