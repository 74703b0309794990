//! Héron's size oracle (SRDS 2018, §IV-A): a Bloom filter of the keys whose value exceeds
//! `THR_L`, built at every replica, shipped to coordinators as deltas of newly set bits, and
//! rebuilt periodically under a new generation number.
//!
//! Three parts:
//! - [`BloomFilter`]: deterministic (fixed hash seeds), so a bit index means the same thing on
//!   every node and in every run; `k` indices come from double hashing over one 64-bit hash of
//!   the key.
//! - [`LargeKeyIndex`], the replica side: records large keys, keeps the bits in the order they
//!   were first set, and a cursor per receiver so each coordinator gets every bit exactly once.
//! - [`BloomSizeOracle`], the coordinator side: ORs deltas per generation and switches
//!   generation by the rule documented on the type.
//!
//! Choice: every generation uses the same filter shape (bits and hash count) from one
//! [`BloomConfig`] shared by replicas and coordinators. Héron lets a rebuild resize the filter,
//! but the feedback carries only bit indices and a generation number, so the shape must be
//! agreed in advance; size `expected_items` for the largest number of large keys expected.

use super::size::SizeOracle;
use crate::facts::Feedback;
use crate::model::{CoordinatorId, NodeId, SizeHint};
use crate::ring::hash_key;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Seed mixed into the key before hashing: fixed so every node computes the same indices.
const SEED_H1: u64 = 0x68E7_B10F_5EED_0001;
/// Seed deriving the second (stride) hash from the first.
const SEED_H2: u64 = 0x2545_F491_4F6C_DD1D;
/// Most generations newer than the current one a coordinator keeps partially merged.
pub const MAX_PENDING_GENERATIONS: usize = 4;

/// Shape of the Bloom filters: how many keys and what false-positive rate to size them for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BloomConfig {
    /// Number of large keys the filter is sized for (above it the false-positive rate grows).
    pub expected_items: u64,
    /// Target false-positive rate at `expected_items` keys (Héron: at most 0.1 %).
    pub false_positive_rate: f64,
}

impl Default for BloomConfig {
    fn default() -> Self {
        BloomConfig { expected_items: 100_000, false_positive_rate: 0.001 }
    }
}

/// A Bloom filter that cannot be built as asked.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BloomError {
    /// The false-positive rate is not strictly between 0 and 1.
    #[error("bloom false_positive_rate must be in (0, 1), got {0}")]
    FalsePositiveRate(f64),
    /// The filter would need more bits than a `u32` index can address.
    #[error("bloom filter for {items} items at rate {rate} needs {bits} bits, more than 2^32 - 1")]
    TooLarge {
        /// Requested items.
        items: u64,
        /// Requested false-positive rate.
        rate: f64,
        /// Bits it would need.
        bits: f64,
    },
}

/// A fixed-shape, deterministic Bloom filter over `u64` keys.
#[derive(Clone, Debug, PartialEq)]
pub struct BloomFilter {
    words: Vec<u64>,
    bits: u32,
    hashes: u32,
}

impl BloomFilter {
    /// A filter sized for `expected_items` keys (0 counts as 1) at `false_positive_rate`:
    /// `m = ceil(-n ln p / ln² 2)` bits (at least 64) and `k = round(m/n ln 2)` hashes (at least 1).
    pub fn new(expected_items: u64, false_positive_rate: f64) -> Result<Self, BloomError> {
        let p = false_positive_rate;
        if !(p > 0.0 && p < 1.0) {
            return Err(BloomError::FalsePositiveRate(p));
        }
        let n = expected_items.max(1) as f64;
        let ln2 = std::f64::consts::LN_2;
        let m = (-n * p.ln() / (ln2 * ln2)).ceil().max(64.0);
        if m > u32::MAX as f64 {
            return Err(BloomError::TooLarge { items: expected_items, rate: p, bits: m });
        }
        let k = (m / n * ln2).round().clamp(1.0, 64.0);
        Ok(Self::with_shape(m as u32, k as u32))
    }

    /// A filter shaped by `cfg`.
    pub fn from_config(cfg: &BloomConfig) -> Result<Self, BloomError> {
        Self::new(cfg.expected_items, cfg.false_positive_rate)
    }

    /// An empty filter of exactly `bits` bits and `hashes` hash functions (each at least 1).
    pub fn with_shape(bits: u32, hashes: u32) -> Self {
        let bits = bits.max(1);
        let filter = BloomFilter { words: vec![0; (bits as usize).div_ceil(64)], bits, hashes: hashes.max(1) };
        debug_assert!(filter.words.len() * 64 >= bits as usize && filter.hashes >= 1, "room for {bits} bits");
        filter
    }

    /// An empty filter of the same shape.
    pub fn empty_like(&self) -> Self {
        Self::with_shape(self.bits, self.hashes)
    }

    /// The `k` bit indices of `key`: `g_i = h1 + i * h2` over 64 bits, mapped to `0..m` by a
    /// multiply-shift, which keeps the stride well spread for any `m` (not only powers of two).
    fn indices(&self, key: u64) -> impl Iterator<Item = u32> {
        let h1 = hash_key(key ^ SEED_H1);
        let h2 = hash_key(h1 ^ SEED_H2) | 1;
        let m = self.bits as u128;
        (0..self.hashes as u64).map(move |i| ((h1.wrapping_add(i.wrapping_mul(h2)) as u128 * m) >> 64) as u32)
    }

    fn get(&self, i: u32) -> bool {
        debug_assert!(i < self.bits, "bit {i} of a {}-bit filter", self.bits);
        self.words[i as usize / 64] & (1 << (i % 64)) != 0
    }

    /// Set bit `i`; true if it was clear.
    fn set(&mut self, i: u32) -> bool {
        debug_assert!(i < self.bits, "bit {i} of a {}-bit filter", self.bits);
        let word = &mut self.words[i as usize / 64];
        let mask = 1 << (i % 64);
        let was_clear = *word & mask == 0;
        *word |= mask;
        was_clear
    }

    /// Add `key`; returns the bit indices this insertion newly set (each once, possibly none).
    pub fn insert(&mut self, key: u64) -> Vec<u32> {
        let mut new_bits = Vec::new();
        let indices: Vec<u32> = self.indices(key).collect();
        for i in indices {
            if self.set(i) {
                new_bits.push(i);
            }
        }
        debug_assert!(self.contains(key), "a Bloom filter has no false negatives");
        debug_assert!(new_bits.len() <= self.hashes as usize, "at most one new bit per hash");
        new_bits
    }

    /// Whether `key` may be in the set (never false for an inserted key).
    pub fn contains(&self, key: u64) -> bool {
        self.indices(key).all(|i| self.get(i))
    }

    /// OR the given bit indices in (a delta from a peer); indices out of range are ignored.
    pub fn merge_bits(&mut self, bits: &[u32]) {
        for &i in bits {
            if i < self.bits {
                self.set(i);
            }
        }
    }

    /// Number of bits `m`.
    pub fn bit_len(&self) -> usize {
        self.bits as usize
    }

    /// Number of hash functions `k`.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// Number of bits set.
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Indices of the set bits, ascending.
    pub fn set_bits(&self) -> impl Iterator<Item = u32> + '_ {
        // Walk words and peel set bits off, so a sparse filter costs m/64 steps, not m.
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros();
                    rest &= rest - 1;
                    w as u32 * 64 + bit
                })
            })
        })
    }
}

/// Replica side of Héron's oracle: the Bloom filter of this replica's large keys, with a log of
/// newly set bits and a cursor per receiver so each receiver is sent each bit once.
///
/// Memory stays bounded: a bit enters the log only when it is first set, so the log of one
/// generation never exceeds `bit_len` entries. A cursor advances as soon as `delta_for` hands
/// the bits out: the engine must deliver them (a lost message loses those bits until the next
/// rebuild, which resends everything).
#[derive(Clone, Debug)]
pub struct LargeKeyIndex {
    filter: BloomFilter,
    threshold: u64,
    generation: u32,
    log: Vec<u32>,
    cursors: HashMap<CoordinatorId, usize>,
}

impl LargeKeyIndex {
    /// An empty index, generation 0, recording keys whose value exceeds `large_threshold_bytes`.
    pub fn new(cfg: &BloomConfig, large_threshold_bytes: u64) -> Result<Self, BloomError> {
        Ok(LargeKeyIndex {
            filter: BloomFilter::from_config(cfg)?,
            threshold: large_threshold_bytes,
            generation: 0,
            log: Vec::new(),
            cursors: HashMap::new(),
        })
    }

    /// A write of `size` bytes to `key` was applied; records the key if the value is large
    /// (strictly above the threshold, Héron's "exceeds") and returns whether it did. A large
    /// value later overwritten by a small one stays in the filter until the next rebuild.
    pub fn record_write(&mut self, key: u64, size: u64) -> bool {
        if size <= self.threshold {
            return false;
        }
        let new_bits = self.filter.insert(key);
        self.log.extend(new_bits);
        debug_assert!(self.log.len() <= self.filter.bit_len(), "the log lists each set bit once");
        true
    }

    /// Whether this replica's filter says `key` is large.
    pub fn contains(&self, key: u64) -> bool {
        self.filter.contains(key)
    }

    /// The bits `receiver` has not been sent yet in this generation; marks them sent.
    pub fn delta_for(&mut self, receiver: CoordinatorId) -> Vec<u32> {
        let cursor = self.cursors.entry(receiver).or_insert(0);
        debug_assert!(*cursor <= self.log.len(), "a receiver's cursor {} within the log {}", *cursor, self.log.len());
        let delta = self.log[*cursor..].to_vec();
        *cursor = self.log.len();
        delta
    }

    /// Fill `fb`'s Bloom fields for a message to `receiver` (the delta and the generation).
    pub fn fill_feedback(&mut self, receiver: CoordinatorId, fb: &mut Feedback) {
        fb.bloom_bits = self.delta_for(receiver);
        fb.bloom_generation = self.generation;
    }

    /// The current generation (0 at start, +1 per rebuild, wrapping after `u32::MAX`).
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// Start generation g+1 with a fresh filter of exactly `live_large_keys` (keys whose large
    /// values were deleted or shrunk drop out). Every receiver's cursor restarts, so its next
    /// delta carries the whole new filter.
    pub fn rebuild(&mut self, live_large_keys: impl IntoIterator<Item = u64>) {
        self.filter = self.filter.empty_like();
        self.log.clear();
        for key in live_large_keys {
            let new_bits = self.filter.insert(key);
            self.log.extend(new_bits);
        }
        self.cursors.clear();
        self.generation = self.generation.wrapping_add(1);
        debug_assert_eq!(self.log.len(), self.filter.count_ones(), "a rebuilt log lists each set bit once");
    }

    /// The large-value threshold in bytes.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    /// This replica's filter.
    pub fn filter(&self) -> &BloomFilter {
        &self.filter
    }
}

/// A generation newer than the coordinator's current one, still being assembled.
#[derive(Clone, Debug)]
struct Pending {
    filter: BloomFilter,
    seen: Vec<bool>,
    missing: usize,
}

/// Coordinator side of Héron's oracle: the OR of the replicas' filters, per generation.
///
/// Switching rule (choice): the coordinator answers from its current generation `g` (starting
/// at 0, as replicas do). Feedback tagged `g` is merged into it; feedback tagged with an older
/// generation is ignored; feedback tagged `g' > g` is merged into a pending filter for `g'`,
/// and the replica is marked as having sent `g'` (an empty delta counts: a replica's first
/// message of a generation carries its whole filter, so an empty one means an empty filter).
/// As soon as every replica `0..servers` has sent `g'`, `g'` becomes current and all older
/// generations are dropped. A replica that skipped a generation (rebuilt twice between two
/// messages to this coordinator) leaves that generation incomplete; the next one completes
/// instead. At most [`MAX_PENDING_GENERATIONS`] are pending; past that the oldest is dropped.
///
/// While a generation is pending, [`BloomSizeOracle::contains`] also answers true for keys in
/// its partial filter: replicas that moved on no longer send bits for `g`, and calling a new
/// large key small is the costly mistake for Héron (head-of-line blocking), whereas the extra
/// false positives last only until the switch.
///
/// Bloom bits are idempotent and order-free, so engines should pass every feedback to
/// [`SizeOracle::learn`], fresh or stale; a replica id outside `0..servers` is ignored.
#[derive(Clone, Debug)]
pub struct BloomSizeOracle {
    servers: usize,
    generation: u32,
    filter: BloomFilter,
    pending: BTreeMap<u32, Pending>,
}

impl BloomSizeOracle {
    /// A coordinator's oracle for a cluster of `servers` replicas, with filters shaped by `cfg`
    /// (the same configuration the replicas use).
    pub fn new(cfg: &BloomConfig, servers: usize) -> Result<Self, BloomError> {
        Ok(BloomSizeOracle { servers, generation: 0, filter: BloomFilter::from_config(cfg)?, pending: BTreeMap::new() })
    }

    /// Merge a delta of `bits` that replica `from` sent for `generation`.
    pub fn apply(&mut self, from: NodeId, generation: u32, bits: &[u32]) {
        let replica = from as usize;
        if replica >= self.servers || generation < self.generation {
            return;
        }
        if generation == self.generation {
            self.filter.merge_bits(bits);
            return;
        }
        if !self.pending.contains_key(&generation) && self.pending.len() >= MAX_PENDING_GENERATIONS {
            self.pending.pop_first();
        }
        let (servers, shape) = (self.servers, &self.filter);
        let pending = self.pending.entry(generation).or_insert_with(|| Pending {
            filter: shape.empty_like(),
            seen: vec![false; servers],
            missing: servers,
        });
        pending.filter.merge_bits(bits);
        if !pending.seen[replica] {
            pending.seen[replica] = true;
            pending.missing -= 1;
        }
        debug_assert_eq!(pending.seen.iter().filter(|s| !**s).count(), pending.missing, "missing counts the unseen");
        if pending.missing == 0 {
            if let Some(done) = self.pending.remove(&generation) {
                self.filter = done.filter;
                self.generation = generation;
                self.pending.retain(|&g, _| g > generation);
            }
        }
        debug_assert!(self.pending.len() <= MAX_PENDING_GENERATIONS, "{} generations pending", self.pending.len());
        debug_assert!(self.pending.keys().all(|&g| g > self.generation), "only newer generations wait");
    }

    /// Whether `key` is believed large (see the type's doc for pending generations).
    pub fn contains(&self, key: u64) -> bool {
        self.filter.contains(key) || self.pending.values().any(|p| p.filter.contains(key))
    }

    /// The generation answers come from.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The current generation's merged filter.
    pub fn filter(&self) -> &BloomFilter {
        &self.filter
    }
}

impl SizeOracle for BloomSizeOracle {
    /// Large iff the filter contains the key; no byte count or service estimate.
    fn hint(&self, key: u64) -> SizeHint {
        SizeHint { bytes: None, service: None, large: self.contains(key) }
    }

    fn learn(&mut self, fb: &Feedback) {
        self.apply(fb.from, fb.bloom_generation, &fb.bloom_bits);
    }

    fn generation(&self) -> Option<u32> {
        Some(self.generation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn cfg(items: u64) -> BloomConfig {
        BloomConfig { expected_items: items, false_positive_rate: 0.001 }
    }

    #[test]
    fn sizing_follows_the_formulas() {
        let f = BloomFilter::new(100_000, 0.001).expect("valid");
        // m = 100000 * ln(1000) / ln²2 = 1,437,759 bits; k = round(m/n ln 2) = 10.
        assert_eq!((f.bit_len(), f.hashes()), (1_437_759, 10));
        assert_eq!(BloomFilter::new(0, 0.5).expect("valid").bit_len(), 64);
        assert_eq!(BloomFilter::new(10, 0.0), Err(BloomError::FalsePositiveRate(0.0)));
        assert_eq!(BloomFilter::new(10, 1.0), Err(BloomError::FalsePositiveRate(1.0)));
        assert!(matches!(BloomFilter::new(u64::MAX / 4, 1e-9), Err(BloomError::TooLarge { .. })));
    }

    #[test]
    fn deterministic_no_false_negatives_and_rate_near_target() {
        let n = 20_000u64;
        let mut f = BloomFilter::from_config(&cfg(n)).expect("valid");
        let mut set_bits = 0;
        for key in 0..n {
            set_bits += f.insert(key * 7_919).len();
        }
        assert_eq!(set_bits, f.count_ones());
        assert!((0..n).all(|key| f.contains(key * 7_919)), "false negative");
        // Same keys in another filter give the same bits: indices depend on nothing else.
        let mut g = f.empty_like();
        (0..n).for_each(|key| {
            g.insert(key * 7_919);
        });
        assert_eq!(f, g);
        let probes = 200_000u64;
        let false_positives = (0..probes).filter(|i| f.contains(1 + 7_919 * (n + i))).count();
        let rate = false_positives as f64 / probes as f64;
        assert!((0.0004..0.002).contains(&rate), "false-positive rate {rate}");
    }

    #[test]
    fn insert_reports_only_new_bits_and_merge_ignores_out_of_range() {
        let mut f = BloomFilter::with_shape(1_000, 4);
        let first = f.insert(42);
        assert!(!first.is_empty() && first.len() <= 4);
        assert_eq!(first.iter().collect::<HashSet<_>>().len(), first.len());
        assert!(f.insert(42).is_empty());
        let mut g = f.empty_like();
        g.merge_bits(&first);
        g.merge_bits(&[1_000, u32::MAX]);
        assert!(g.contains(42));
        assert_eq!(g, f);
        assert_eq!(f.set_bits().collect::<Vec<_>>(), {
            let mut v = first.clone();
            v.sort();
            v
        });
    }

    #[test]
    fn index_records_only_large_values() {
        let mut idx = LargeKeyIndex::new(&cfg(1_000), 256 * 1024).expect("valid");
        assert!(!idx.record_write(1, 256 * 1024));
        assert!(idx.record_write(2, 256 * 1024 + 1));
        assert!(!idx.contains(1) && idx.contains(2));
        assert_eq!(idx.threshold(), 256 * 1024);
    }

    #[test]
    fn deltas_per_receiver_are_complete_and_not_repeated() {
        let mut idx = LargeKeyIndex::new(&cfg(1_000), 10).expect("valid");
        let mut sent: HashMap<CoordinatorId, Vec<u32>> = HashMap::new();
        for key in 0..300u64 {
            idx.record_write(key, if key % 3 == 0 { 100 } else { 1 });
            // Receiver 0 polls after every write, receiver 1 every 7th, receiver 2 never until the end.
            sent.entry(0).or_default().extend(idx.delta_for(0));
            if key % 7 == 0 {
                sent.entry(1).or_default().extend(idx.delta_for(1));
            }
        }
        for r in 0..3 {
            sent.entry(r).or_default().extend(idx.delta_for(r));
            assert!(idx.delta_for(r).is_empty(), "nothing new to send to {r}");
        }
        let expected: Vec<u32> = idx.filter().set_bits().collect();
        for (r, bits) in &sent {
            let mut sorted = bits.clone();
            sorted.sort();
            assert_eq!(sorted, expected, "receiver {r}: every bit exactly once");
        }
    }

    #[test]
    fn merged_deltas_reproduce_the_replicas_answers() {
        let servers = 3;
        let mut replicas: Vec<LargeKeyIndex> =
            (0..servers).map(|_| LargeKeyIndex::new(&cfg(2_000), 1_000).expect("valid")).collect();
        let mut single = BloomSizeOracle::new(&cfg(2_000), 1).expect("valid");
        let mut all = BloomSizeOracle::new(&cfg(2_000), servers).expect("valid");
        let mut rng = crate::selector::Rng::new(11, 0);
        for step in 0..5_000u64 {
            let key = rng.below(10_000) as u64;
            let size = if rng.below(10) == 0 { 5_000 } else { 10 };
            let r = rng.below(servers);
            replicas[r].record_write(key, size);
            // Coordinator 0 hears from a random replica now and then; single-replica oracle from replica 0.
            if step % 5 == 0 {
                let from = rng.below(servers);
                let mut fb = Feedback { from: from as NodeId, ..Feedback::default() };
                replicas[from].fill_feedback(0, &mut fb);
                all.learn(&fb);
            }
            if step % 3 == 0 {
                let bits = replicas[0].delta_for(1);
                single.apply(0, 0, &bits);
            }
        }
        for (r, replica) in replicas.iter_mut().enumerate() {
            all.apply(r as NodeId, 0, &replica.delta_for(0));
        }
        single.apply(0, 0, &replicas[0].delta_for(1));
        assert_eq!(single.filter(), replicas[0].filter());
        for key in 0..20_000u64 {
            assert_eq!(single.contains(key), replicas[0].contains(key), "key {key}");
            if replicas.iter().any(|r| r.contains(key)) {
                assert!(all.contains(key), "key {key} lost in the merge");
            }
        }
        // The coordinator's bits are exactly the OR of the replicas' bits.
        let mut union: Vec<u32> = replicas.iter().flat_map(|r| r.filter().set_bits()).collect();
        union.sort();
        union.dedup();
        assert_eq!(all.filter().set_bits().collect::<Vec<_>>(), union);
        assert_eq!(all.hint(12345).bytes, None);
    }

    #[test]
    fn generation_switches_once_every_replica_has_sent_it() {
        let (old_key, new_key, later_key) = (1_001u64, 2_002u64, 3_003u64);
        let mut replicas: Vec<LargeKeyIndex> =
            (0..2).map(|_| LargeKeyIndex::new(&cfg(100), 100).expect("valid")).collect();
        let mut coord = BloomSizeOracle::new(&cfg(100), 2).expect("valid");
        let send = |replica: &mut LargeKeyIndex, from: NodeId, coord: &mut BloomSizeOracle| {
            let mut fb = Feedback { from, ..Feedback::default() };
            replica.fill_feedback(7, &mut fb);
            coord.learn(&fb);
        };
        for (r, replica) in replicas.iter_mut().enumerate() {
            replica.record_write(old_key, 1_000);
            send(replica, r as NodeId, &mut coord);
        }
        assert!(coord.contains(old_key) && !coord.contains(new_key));

        // Both rebuild: old_key's value was deleted, new_key is large now.
        for replica in replicas.iter_mut() {
            replica.rebuild([new_key]);
            assert_eq!(replica.generation(), 1);
            assert!(!replica.contains(old_key));
        }
        send(&mut replicas[0], 0, &mut coord);
        assert_eq!(coord.generation(), 0, "replica 1 has not sent generation 1 yet");
        assert!(coord.contains(old_key), "generation 0 still answers");
        assert!(coord.contains(new_key), "pending generation 1 also answers");
        // A delta from replica 0 again does not complete generation 1.
        replicas[0].record_write(later_key, 1_000);
        send(&mut replicas[0], 0, &mut coord);
        assert_eq!(coord.generation(), 0);

        send(&mut replicas[1], 1, &mut coord);
        assert_eq!(coord.generation(), 1);
        assert!(!coord.contains(old_key) && coord.contains(new_key) && coord.contains(later_key));
        // Late feedback from generation 0 is ignored.
        let old_bits: Vec<u32> = BloomFilter::from_config(&cfg(100)).expect("valid").insert(old_key);
        coord.apply(1, 0, &old_bits);
        assert!(!coord.contains(old_key));
        // Unknown replicas are ignored, and an empty rebuild still counts as having sent it.
        coord.apply(9, 2, &old_bits);
        for (r, replica) in replicas.iter_mut().enumerate() {
            replica.rebuild(std::iter::empty());
            send(replica, r as NodeId, &mut coord);
        }
        assert_eq!(coord.generation(), 2);
        assert!(!coord.contains(new_key) && !coord.contains(old_key));
    }

    #[test]
    fn skipped_generation_is_superseded_and_pending_is_bounded() {
        let mut coord = BloomSizeOracle::new(&cfg(100), 2).expect("valid");
        coord.apply(0, 1, &[]);
        // Replica 1 rebuilt twice before talking to us: generation 1 never completes, 2 does.
        coord.apply(1, 2, &[]);
        coord.apply(0, 2, &[]);
        assert_eq!(coord.generation(), 2);
        assert!(coord.pending.is_empty());
        for g in 3..20 {
            coord.apply(0, g, &[]);
        }
        assert_eq!(coord.pending.len(), MAX_PENDING_GENERATIONS);
        assert_eq!(coord.pending.keys().copied().collect::<Vec<_>>(), vec![16, 17, 18, 19]);
        coord.apply(1, 19, &[]);
        assert_eq!((coord.generation(), coord.pending.len()), (19, 0));
    }
}
