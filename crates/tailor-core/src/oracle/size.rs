//! Size oracles: what a coordinator believes about a key's value size, as the [`SizeHint`]
//! engines attach to a request before asking the selector (ALGORITHMS.md §4).
//!
//! "Large" always means strictly above the configured threshold (Héron's "exceeds `THR_L`").

use super::bloom::{BloomConfig, BloomError, LargeKeyIndex};
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
    sizes: std::collections::HashMap<u64, u64>,
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
        let p = (self.alpha_ns_per_byte * bytes as f64).round() + self.beta_ns as f64;
        // `as` saturates at u64::MAX and maps NaN to 0.
        (p as Nanos).max(1)
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

/// The engine's true size function, `key -> bytes`.
pub type SizeFn = Box<dyn Fn(u64) -> u64 + Send>;

/// A perfect oracle, from the engine's own knowledge of every value's size (simulator, tests).
pub struct ExactOracle {
    size_of: SizeFn,
    large_threshold: u64,
    service: Option<ServiceModel>,
}

impl ExactOracle {
    /// An oracle answering `size_of(key)`, large above `large_threshold_bytes`, with `service`
    /// filled from the model when one is given.
    pub fn new(size_of: SizeFn, large_threshold_bytes: u64, service: Option<ServiceModel>) -> Self {
        ExactOracle { size_of, large_threshold: large_threshold_bytes, service }
    }
}

impl SizeOracle for ExactOracle {
    fn hint(&self, key: u64) -> SizeHint {
        hint_for((self.size_of)(key), self.large_threshold, self.service.as_ref())
    }
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
        (item << Self::SIZE_BITS) | size.min(Self::SIZE_MASK)
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

/// Which size oracle coordinators use, as written in a spec (`kind = "bloom"`, ...).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SizeOracleConfig {
    /// [`NoOracle`].
    #[default]
    None,
    /// [`ExactOracle`]: the engine supplies the true sizes.
    Exact {
        /// Values strictly above this many bytes are large.
        #[serde(default = "default_threshold")]
        large_threshold_bytes: u64,
    },
    /// [`KeyEncodedOracle`]: sizes read from the keys' low 40 bits.
    KeyEncoded {
        /// Values strictly above this many bytes are large.
        #[serde(default = "default_threshold")]
        large_threshold_bytes: u64,
    },
    /// [`BloomSizeOracle`] at coordinators, fed by a [`LargeKeyIndex`] at each replica.
    Bloom {
        /// Héron's `THR_L`: values strictly above this many bytes enter the replicas' filters.
        #[serde(default = "default_threshold")]
        large_threshold_bytes: u64,
        /// Number of large keys the filters are sized for.
        #[serde(default = "default_expected_items")]
        expected_items: u64,
        /// Target false-positive rate (Héron: at most 0.1 %).
        #[serde(default = "default_false_positive_rate")]
        false_positive_rate: f64,
    },
}

fn default_threshold() -> u64 {
    DEFAULT_LARGE_THRESHOLD_BYTES
}

fn default_expected_items() -> u64 {
    BloomConfig::default().expected_items
}

fn default_false_positive_rate() -> f64 {
    BloomConfig::default().false_positive_rate
}

/// A size oracle that cannot be built from its configuration.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SizeOracleError {
    /// `exact` was asked for but the engine has no true size function to give it.
    #[error("size oracle `exact` needs the engine's true sizes, which this engine cannot provide")]
    NoTruth,
    /// The Bloom filter parameters are invalid.
    #[error(transparent)]
    Bloom(#[from] BloomError),
}

impl SizeOracleConfig {
    /// The large-value threshold in bytes (`None` has none and never calls a value large).
    pub fn large_threshold_bytes(&self) -> Option<u64> {
        match self {
            SizeOracleConfig::None => None,
            SizeOracleConfig::Exact { large_threshold_bytes }
            | SizeOracleConfig::KeyEncoded { large_threshold_bytes }
            | SizeOracleConfig::Bloom { large_threshold_bytes, .. } => Some(*large_threshold_bytes),
        }
    }

    /// The filter shape, for the Bloom variant.
    pub fn bloom_config(&self) -> Option<BloomConfig> {
        match self {
            SizeOracleConfig::Bloom { expected_items, false_positive_rate, .. } => {
                Some(BloomConfig { expected_items: *expected_items, false_positive_rate: *false_positive_rate })
            }
            _ => None,
        }
    }

    /// Check the configuration without building anything.
    pub fn validate(&self) -> Result<(), SizeOracleError> {
        if let Some(cfg) = self.bloom_config() {
            super::bloom::BloomFilter::from_config(&cfg)?;
        }
        Ok(())
    }

    /// Build one coordinator's oracle. `servers` is the cluster size (the Bloom oracle waits for
    /// every replica before switching generation), `truth` the engine's true size function
    /// (required by `exact`, ignored otherwise), `service` the engine's processing-time model
    /// (fills [`SizeHint::service`] for `exact` and `key-encoded`).
    pub fn build(
        &self,
        servers: usize,
        truth: Option<SizeFn>,
        service: Option<ServiceModel>,
    ) -> Result<Box<dyn SizeOracle>, SizeOracleError> {
        Ok(match self {
            SizeOracleConfig::None => Box::new(NoOracle),
            SizeOracleConfig::Exact { large_threshold_bytes } => {
                Box::new(ExactOracle::new(truth.ok_or(SizeOracleError::NoTruth)?, *large_threshold_bytes, service))
            }
            SizeOracleConfig::KeyEncoded { large_threshold_bytes } => {
                Box::new(KeyEncodedOracle::new(*large_threshold_bytes, service))
            }
            SizeOracleConfig::Bloom { expected_items, false_positive_rate, .. } => Box::new(BloomSizeOracle::new(
                &BloomConfig { expected_items: *expected_items, false_positive_rate: *false_positive_rate },
                servers,
            )?),
        })
    }

    /// The replica-side index a replica must keep for this oracle (`Some` only for `bloom`).
    pub fn replica_index(&self) -> Result<Option<LargeKeyIndex>, SizeOracleError> {
        match (self.bloom_config(), self.large_threshold_bytes()) {
            (Some(cfg), Some(threshold)) => Ok(Some(LargeKeyIndex::new(&cfg, threshold)?)),
            _ => Ok(None),
        }
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
    fn exact_oracle_uses_truth_threshold_and_service_model() {
        let euro_par = ServiceModel { alpha_ns_per_byte: 80.0, beta_ns: MS };
        let o = ExactOracle::new(Box::new(|key| key * 1_000), 4_000, Some(euro_par));
        assert_eq!(o.hint(4), SizeHint { bytes: Some(4_000), service: Some(320_000 + MS), large: false });
        assert_eq!(o.hint(5), SizeHint { bytes: Some(5_000), service: Some(400_000 + MS), large: true });
        let bare = ExactOracle::new(Box::new(|_| 7), 0, None);
        assert_eq!(bare.hint(1), SizeHint { bytes: Some(7), service: None, large: true });
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
    fn config_parses_kebab_case_with_defaults() {
        let parse = |s: &str| serde_json::from_str::<SizeOracleConfig>(s);
        assert_eq!(parse(r#"{"kind": "none"}"#).expect("valid"), SizeOracleConfig::None);
        assert_eq!(
            parse(r#"{"kind": "key-encoded", "large_threshold_bytes": 1024}"#).expect("valid"),
            SizeOracleConfig::KeyEncoded { large_threshold_bytes: 1024 }
        );
        let bloom = parse(r#"{"kind": "bloom"}"#).expect("valid");
        assert_eq!(bloom.large_threshold_bytes(), Some(256 * 1024));
        assert_eq!(bloom.bloom_config(), Some(BloomConfig::default()));
        assert!(parse(r#"{"kind": "bloom", "fp_rate": 0.1}"#).is_err(), "unknown field");
        assert!(parse(r#"{"kind": "magic"}"#).is_err(), "unknown kind");
        assert_eq!(SizeOracleConfig::default(), SizeOracleConfig::None);
        let back = serde_json::to_string(&SizeOracleConfig::Exact { large_threshold_bytes: 9 }).expect("serializes");
        assert_eq!(back, r#"{"kind":"exact","large_threshold_bytes":9}"#);
    }

    #[test]
    fn build_every_kind() {
        let truth = || Some(Box::new(|k: u64| k) as SizeFn);
        let exact = SizeOracleConfig::Exact { large_threshold_bytes: 10 };
        assert!(exact.build(3, truth(), None).expect("builds").hint(11).large);
        assert_eq!(exact.build(3, None, None).err(), Some(SizeOracleError::NoTruth));
        assert!(exact.replica_index().expect("ok").is_none());
        let bad = SizeOracleConfig::Bloom { large_threshold_bytes: 1, expected_items: 10, false_positive_rate: 2.0 };
        assert!(matches!(bad.validate(), Err(SizeOracleError::Bloom(_))));
        assert!(bad.build(3, None, None).is_err());

        // A Bloom oracle learns from feedback built by the replica-side index of the same config.
        let bloom =
            SizeOracleConfig::Bloom { large_threshold_bytes: 100, expected_items: 1_000, false_positive_rate: 1e-3 };
        let mut index = bloom.replica_index().expect("ok").expect("bloom has an index");
        let mut oracle = bloom.build(1, None, None).expect("builds");
        index.record_write(77, 101);
        assert!(!oracle.hint(77).large);
        let mut fb = Feedback::default();
        index.fill_feedback(0, &mut fb);
        oracle.learn(&fb);
        assert_eq!(oracle.hint(77), SizeHint { bytes: None, service: None, large: true });
        for (cfg, key) in
            [(SizeOracleConfig::None, 1u64), (SizeOracleConfig::KeyEncoded { large_threshold_bytes: 5 }, 6)]
        {
            let o = cfg.build(1, None, Some(ServiceModel { alpha_ns_per_byte: 1.0, beta_ns: 0 })).expect("builds");
            assert_eq!(o.hint(key).large, cfg != SizeOracleConfig::None);
        }
    }
}
