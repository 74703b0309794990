//! Size oracles: what a coordinator believes about a key's value size, as the [`SizeHint`]
//! engines attach to a request before asking the selector (docs/strategies.md, Facts).
//!
//! "Large" always means strictly above the configured threshold (Héron's "exceeds `THR_L`").

#[cfg(test)]
use super::bloom::LargeKeyIndex;
use super::bloom::{BloomConfig, BloomError};
use crate::facts::Feedback;
use crate::model::SizeHint;
use crate::time::Nanos;
use serde::{Deserialize, Serialize};

pub use super::bloom::BloomSizeOracle;

/// Default large-value threshold: Héron's `THR_L` of 256 KiB.
pub const DEFAULT_LARGE_THRESHOLD_BYTES: u64 = 256 * 1024;

/// A coordinator's source of size hints.
pub trait SizeOracle: Send {
    /// What the oracle believes about `key`'s value.
    fn hint(&self, key: u64) -> SizeHint;
    /// Fold in facts a replica piggybacked (only the Bloom oracle learns; others ignore them).
    fn learn(&mut self, _fb: &Feedback) {}
    /// The coordinator saw a value of `bytes` for `key` (a write it handled, a value it read);
    /// only oracles that learn from traffic ([`SeenSizes`]) use it.
    fn observe(&mut self, _key: u64, _bytes: u64) {}
    /// The generation of the oracle's answers, for oracles rebuilt in generations (Bloom).
    fn generation(&self) -> Option<u32> {
        None
    }
}

/// The store's exact oracle: the sizes this coordinator has seen (writes it handled, values it
/// read), at most `capacity` keys; past that it starts over (a bounded memory beats an LRU's
/// bookkeeping on the request path, and a forgotten key only loses its hint until seen again).
pub struct SeenSizes {
    /// Key hash → bytes (foldhash, seeded per process: keys are the client's choice).
    sizes: foldhash::HashMap<u64, u64>,
    capacity: usize,
    large_threshold: u64,
    service: Option<ServiceModel>,
}

impl SeenSizes {
    /// An empty table of at most `capacity` keys, large above `large_threshold_bytes`, with
    /// `service` filled from the model when one is given.
    pub fn new(capacity: usize, large_threshold_bytes: u64, service: Option<ServiceModel>) -> Self {
        assert!(capacity > 0, "a size table needs room for one key");
        SeenSizes { sizes: Default::default(), capacity, large_threshold: large_threshold_bytes, service }
    }
}

impl SizeOracle for SeenSizes {
    fn hint(&self, key: u64) -> SizeHint {
        match self.sizes.get(&key) {
            Some(&bytes) => hint_for(bytes, self.large_threshold, self.service.as_ref()),
            None => SizeHint::default(),
        }
    }

    fn observe(&mut self, key: u64, bytes: u64) {
        if self.sizes.len() >= self.capacity && !self.sizes.contains_key(&key) {
            self.sizes.clear();
        }
        self.sizes.insert(key, bytes);
        debug_assert!(self.sizes.len() <= self.capacity, "the table holds at most {} keys", self.capacity);
    }
}

/// A linear processing-time model `p = alpha * size + beta` used to turn a size into `service`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceModel {
    /// Nanoseconds per byte (`alpha`; Euro-Par's 100 Mbit/s is 80 ns/byte).
    pub alpha_ns_per_byte: f64,
    /// Fixed cost per request in nanoseconds (`beta`; Euro-Par: 1 ms).
    pub beta_ns: Nanos,
}

impl ServiceModel {
    /// Estimated processing time of a `bytes`-byte value, rounded, at least 1 ns (the
    /// [`crate::model::JobMeta::service`] convention), saturating instead of overflowing.
    pub fn service(&self, bytes: u64) -> Nanos {
        // `+ 0.5` then the saturating `as` rounds a non-negative product without a libm call
        // (`round` is not inlined on baseline x86-64, and this runs for every request); `as`
        // maps NaN to 0.
        let scaled = (self.alpha_ns_per_byte * bytes as f64 + 0.5) as Nanos;
        scaled.saturating_add(self.beta_ns).max(1)
    }
}

/// The hint for a value believed to be `bytes` long.
fn hint_for(bytes: u64, large_threshold: u64, service: Option<&ServiceModel>) -> SizeHint {
    SizeHint { bytes: Some(bytes), service: service.map(|m| m.service(bytes)), large: bytes > large_threshold }
}

/// An oracle that knows nothing: every hint is the default (small, no size, no service time).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NoOracle;

impl SizeOracle for NoOracle {
    fn hint(&self, _key: u64) -> SizeHint {
        SizeHint::default()
    }
}

/// A perfect oracle for an engine that knows every value's size (the simulator): the engine
/// tells the truth with each request ([`SizeOracle::observe`] right before [`SizeOracle::hint`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExactOracle {
    last: Option<(u64, u64)>,
    large_threshold: u64,
    service: Option<ServiceModel>,
}

impl ExactOracle {
    /// An oracle large above `large_threshold_bytes`, with `service` from the model if given.
    pub fn new(large_threshold_bytes: u64, service: Option<ServiceModel>) -> Self {
        ExactOracle { last: None, large_threshold: large_threshold_bytes, service }
    }
}

impl SizeOracle for ExactOracle {
    fn hint(&self, key: u64) -> SizeHint {
        match self.last {
            Some((k, bytes)) if k == key => hint_for(bytes, self.large_threshold, self.service.as_ref()),
            _ => SizeHint::default(),
        }
    }

    fn observe(&mut self, key: u64, bytes: u64) {
        self.last = Some((key, bytes));
    }
}

/// Héron's Bloom oracle as the simulator models it: the data set is preloaded before
/// measurement, so every coordinator's filter already holds every large key (the load phase's
/// write acks carried the bits); what remains of the filter is its error. A small key is
/// reported large with the filter's false-positive probability, never the reverse; the draw is
/// a hash of (seed, key), so a key is a false positive consistently, as in a real filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PreloadedBloom {
    exact: ExactOracle,
    seed: u64,
    false_positive_rate: f64,
}

impl SizeOracle for PreloadedBloom {
    fn hint(&self, key: u64) -> SizeHint {
        debug_assert!(self.false_positive_rate > 0.0 && self.false_positive_rate < 1.0, "a validated rate");
        let large = self.exact.hint(key).large
            || crate::workload::unit_hash(self.seed ^ 0xB100_F11E, key) < self.false_positive_rate;
        SizeHint { bytes: None, service: None, large }
    }

    fn observe(&mut self, key: u64, bytes: u64) {
        self.exact.observe(key, bytes);
    }
}

/// Which size oracle coordinators consult: one choice for every engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OracleKind {
    /// The true size: told by the simulator; in the store, the sizes the coordinator has seen.
    #[default]
    Exact,
    /// Héron's Bloom filter of large keys, learnt from replicas' piggybacked bits (modelled by
    /// its false positives in the simulator, where the data set is preloaded).
    Bloom,
    /// Nothing known.
    None,
}

/// What an engine can know about value sizes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Knowledge {
    /// A simulator: it tells the true size with every request; `seed` drives modelled errors.
    Simulated {
        /// Run seed.
        seed: u64,
    },
    /// A live store: sizes are learnt from traffic and replicas' facts; `servers` replicas
    /// send Bloom deltas.
    Live {
        /// Cluster size.
        servers: usize,
    },
}

/// Most keys the live exact oracle ([`SeenSizes`]) remembers.
pub const SEEN_SIZES_CAPACITY: usize = 1 << 20;

/// Build one coordinator's size oracle of `kind`: large above `large_threshold` bytes,
/// `service` filling [`SizeHint::service`] where a size is known, `bloom` shaping filters.
pub fn build(
    kind: OracleKind,
    large_threshold: u64,
    service: Option<ServiceModel>,
    bloom: &BloomConfig,
    knowledge: Knowledge,
) -> Result<Box<dyn SizeOracle>, BloomError> {
    let exact = ExactOracle::new(large_threshold, service);
    Ok(match (kind, knowledge) {
        (OracleKind::None, _) => Box::new(NoOracle),
        (OracleKind::Exact, Knowledge::Simulated { .. }) => Box::new(exact),
        (OracleKind::Exact, Knowledge::Live { .. }) => {
            Box::new(SeenSizes::new(SEEN_SIZES_CAPACITY, large_threshold, service))
        }
        (OracleKind::Bloom, Knowledge::Simulated { seed }) => {
            super::bloom::BloomFilter::from_config(bloom)?;
            Box::new(PreloadedBloom { exact, seed, false_positive_rate: bloom.false_positive_rate })
        }
        (OracleKind::Bloom, Knowledge::Live { servers }) => Box::new(BloomSizeOracle::new(bloom, servers)?),
    })
}

/// An oracle that reads the size out of the key itself, as Hector's experiments did.
///
/// Encoding (choice): the low [`KeyEncodedOracle::SIZE_BITS`] = 40 bits of the key are the value
/// size in bytes (up to 1 TiB - 1), the high 24 bits an item number to tell keys of equal size
/// apart. The ring hashes keys again, so such keys still spread evenly over nodes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyEncodedOracle {
    large_threshold: u64,
    service: Option<ServiceModel>,
}

impl KeyEncodedOracle {
    /// Bits of the key holding the size.
    pub const SIZE_BITS: u32 = 40;
    /// Mask of the size bits.
    pub const SIZE_MASK: u64 = (1 << Self::SIZE_BITS) - 1;

    /// An oracle large above `large_threshold_bytes`, with `service` from the model if given.
    pub fn new(large_threshold_bytes: u64, service: Option<ServiceModel>) -> Self {
        KeyEncodedOracle { large_threshold: large_threshold_bytes, service }
    }

    /// The key for item `item` (low 24 bits kept) whose value is `size` bytes (clamped to
    /// `SIZE_MASK`).
    pub fn encode(item: u64, size: u64) -> u64 {
        let key = (item << Self::SIZE_BITS) | size.min(Self::SIZE_MASK);
        debug_assert_eq!(Self::decode_size(key), size.min(Self::SIZE_MASK), "a key decodes to the size it encodes");
        key
    }

    /// The size a key encodes.
    pub fn decode_size(key: u64) -> u64 {
        key & Self::SIZE_MASK
    }
}

impl SizeOracle for KeyEncodedOracle {
    fn hint(&self, key: u64) -> SizeHint {
        hint_for(Self::decode_size(key), self.large_threshold, self.service.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    #[test]
    fn no_oracle_knows_nothing() {
        assert_eq!(NoOracle.hint(5), SizeHint::default());
        let mut o = NoOracle;
        o.learn(&Feedback { bloom_bits: vec![1, 2], ..Feedback::default() });
        assert_eq!(o.hint(5), SizeHint::default());
    }

    #[test]
    fn exact_oracle_uses_the_told_truth_threshold_and_service_model() {
        let euro_par = ServiceModel { alpha_ns_per_byte: 80.0, beta_ns: MS };
        let mut o = ExactOracle::new(4_000, Some(euro_par));
        o.observe(4, 4_000);
        assert_eq!(o.hint(4), SizeHint { bytes: Some(4_000), service: Some(320_000 + MS), large: false });
        assert_eq!(o.hint(5), SizeHint::default(), "only the key just told");
        o.observe(5, 5_000);
        assert_eq!(o.hint(5), SizeHint { bytes: Some(5_000), service: Some(400_000 + MS), large: true });
    }

    #[test]
    fn seen_sizes_remember_a_bounded_table() {
        let mut o = SeenSizes::new(2, 10, None);
        assert_eq!(o.hint(1), SizeHint::default());
        o.observe(1, 11);
        o.observe(2, 5);
        assert!(o.hint(1).large && !o.hint(2).large);
        o.observe(2, 50);
        assert!(o.hint(2).large, "a key already held is updated in place");
        o.observe(3, 1);
        assert_eq!((o.hint(1), o.hint(3).bytes), (SizeHint::default(), Some(1)), "full: starts over");
    }

    #[test]
    fn service_model_is_at_least_one_and_saturates() {
        let zero = ServiceModel { alpha_ns_per_byte: 0.0, beta_ns: 0 };
        assert_eq!(zero.service(0), 1);
        let huge = ServiceModel { alpha_ns_per_byte: 1e30, beta_ns: 5 };
        assert_eq!(huge.service(u64::MAX), u64::MAX);
    }

    #[test]
    fn key_encoding_round_trips() {
        let key = KeyEncodedOracle::encode(12, 1 << 20);
        assert_eq!(key, (12 << 40) | (1 << 20));
        assert_eq!(KeyEncodedOracle::decode_size(key), 1 << 20);
        assert_eq!(KeyEncodedOracle::decode_size(KeyEncodedOracle::encode(3, u64::MAX)), KeyEncodedOracle::SIZE_MASK);
        let o = KeyEncodedOracle::new(1024, None);
        assert_eq!(
            o.hint(KeyEncodedOracle::encode(1, 1024)),
            SizeHint { bytes: Some(1024), service: None, large: false }
        );
        assert!(o.hint(KeyEncodedOracle::encode(1, 1 << 20)).large);
    }

    #[test]
    fn build_every_kind_for_both_engines() {
        let bloom = BloomConfig { expected_items: 1_000, false_positive_rate: 1e-3 };
        let sim = Knowledge::Simulated { seed: 1 };
        let live = Knowledge::Live { servers: 1 };
        let mut exact = build(OracleKind::Exact, 10, None, &bloom, sim).unwrap();
        exact.observe(9, 11);
        assert!(exact.hint(9).large);
        let mut seen = build(OracleKind::Exact, 10, None, &bloom, live).unwrap();
        assert!(!seen.hint(9).large);
        seen.observe(9, 11);
        assert!(seen.hint(9).large);
        let mut modelled = build(OracleKind::Bloom, 10, None, &bloom, sim).unwrap();
        modelled.observe(9, 11);
        assert_eq!(modelled.hint(9), SizeHint { bytes: None, service: None, large: true });
        let false_positives = (0..100_000u64)
            .filter(|&k| {
                modelled.observe(k, 1);
                modelled.hint(k).large
            })
            .count();
        assert!((50..150).contains(&false_positives), "about 0.1 %: {false_positives}");
        let bad = BloomConfig { false_positive_rate: 2.0, ..bloom.clone() };
        assert!(build(OracleKind::Bloom, 10, None, &bad, sim).is_err());
        assert!(build(OracleKind::Bloom, 10, None, &bad, live).is_err());

        // the live Bloom oracle learns from feedback built by the replica-side index
        let mut index = LargeKeyIndex::new(&bloom, 100).unwrap();
        let mut oracle = build(OracleKind::Bloom, 100, None, &bloom, live).unwrap();
        index.record_write(77, 101);
        assert!(!oracle.hint(77).large);
        let mut fb = Feedback::default();
        index.fill_feedback(0, &mut fb);
        oracle.learn(&fb);
        assert_eq!(oracle.hint(77), SizeHint { bytes: None, service: None, large: true });
        assert_eq!(oracle.generation(), Some(0));
        assert!(build(OracleKind::None, 1, None, &bloom, live).unwrap().generation().is_none());
        let kinds: Vec<OracleKind> = serde_json::from_str(r#"["exact", "bloom", "none"]"#).unwrap();
        assert_eq!(kinds, [OracleKind::Exact, OracleKind::Bloom, OracleKind::None]);
    }
}
