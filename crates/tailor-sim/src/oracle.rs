//! The simulator's model of Héron's Bloom-filter size oracle.
//!
//! The data set is preloaded before measurement, so every coordinator's filter already holds
//! every large key (the load phase's write acknowledgements carried the bits). What remains of
//! the filter is its error: a small key is reported large with the filter's false-positive
//! probability, never the reverse. The draw is a hash of (seed, key), so a key is a false
//! positive consistently, as it would be in a real filter.

/// False-positive probability of the filters (Héron: at most 0.1 %).
pub const FALSE_POSITIVE_RATE: f64 = 0.001;

/// Whether the filter wrongly reports `key` as large.
pub fn bloom_false_positive(seed: u64, key: u64) -> bool {
    tailor_core::workload::unit_hash(seed ^ 0xB100_F11E, key) < FALSE_POSITIVE_RATE
}
