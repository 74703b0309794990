//! Workload generators shared by the simulator and the load generator.
//!
//! Every generator is built once from a validated config and then sampled with a caller-owned
//! seeded random stream (`R: rand::Rng + ?Sized`, a `rand::rngs::SmallRng` in both engines), so a
//! run is a pure function of its spec and seed. Configs are serde types with
//! `deny_unknown_fields` and a kebab-case `kind` tag; the `new` constructors validate them and
//! name the offending field and value in every error.

use std::fmt::Display;

pub mod arrivals;
pub mod clients;
pub mod multiget;
pub mod ops;
pub mod popularity;
pub mod sizes;
pub mod trace;

pub use arrivals::{rate_for_load, ArrivalConfig, ClosedLoop, Poisson};
pub use clients::{ClientSampler, DemandSkew};
pub use multiget::{KeyCountLaw, MultigetDraws};
pub use ops::OpMix;
pub use popularity::{KeySampler, PopularityConfig};
pub use sizes::{SizeConfig, SizeModel};
pub use trace::{parse_trace, Trace, TraceFormat, TraceRecord};

/// Why a workload config, trace or CDF file was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    /// A config field holds a value outside its valid range.
    #[error("invalid {field} = {value}: {reason}")]
    Invalid {
        /// Dotted path of the field, e.g. `zipf.s` or `mixture.weights[1]`.
        field: String,
        /// The offending value as written.
        value: String,
        /// What a valid value looks like.
        reason: String,
    },
    /// A named operation mix that does not exist.
    #[error("invalid op mix name `{name}` (known: {known})")]
    UnknownMix {
        /// The name given.
        name: String,
        /// Comma-separated known names.
        known: String,
    },
    /// A trace file that cannot be read in its format (binary or compressed).
    #[error("{format} trace: {message}")]
    Format {
        /// The format it was read as.
        format: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// A line of a text input (trace or CDF file) that cannot be used.
    #[error("line {line}: {message}")]
    Line {
        /// 1-based line number in the input.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

impl WorkloadError {
    /// A [`WorkloadError::Invalid`] for `field` holding `value`.
    pub(crate) fn invalid(field: impl Into<String>, value: impl Display, reason: impl Into<String>) -> Self {
        WorkloadError::Invalid { field: field.into(), value: value.to_string(), reason: reason.into() }
    }

    /// A [`WorkloadError::Invalid`] for a float, written in Rust's shortest round-trip form so
    /// huge and tiny values stay readable (`1e308`, not 309 digits).
    pub(crate) fn invalid_f64(field: impl Into<String>, value: f64, reason: impl Into<String>) -> Self {
        Self::invalid(field, format!("{value:?}"), reason)
    }
}

/// Fails unless `value` is finite and strictly positive.
pub(crate) fn positive(field: &str, value: f64) -> Result<f64, WorkloadError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(WorkloadError::invalid_f64(field, value, "must be a finite number > 0"))
    }
}

/// Fails unless `value` is finite and in `[0, 1]`.
pub(crate) fn fraction(field: &str, value: f64) -> Result<f64, WorkloadError> {
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(WorkloadError::invalid_f64(field, value, "must be between 0 and 1"))
    }
}

/// A deterministic pseudo-random number in `[0, 1)` for `(seed, key)`, the same in every process.
///
/// Used where a property must be a fixed function of the key (a data set has one value size per
/// key) rather than a fresh draw. The key is mixed on its own first so that consecutive keys, and
/// seeds differing in one bit, give unrelated outputs.
pub fn unit_hash(seed: u64, key: u64) -> f64 {
    use crate::ring::hash_key;
    let h = hash_key(hash_key(seed ^ 0x5EED_5123_0F0F_A11C) ^ hash_key(key));
    let u = (h >> 11) as f64 / (1u64 << 53) as f64;
    debug_assert!((0.0..1.0).contains(&u), "53 random bits make a unit draw in [0, 1): {u}");
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_hash_is_deterministic_in_range_and_uniform() {
        assert_eq!(unit_hash(7, 42), unit_hash(7, 42));
        assert_ne!(unit_hash(7, 42), unit_hash(8, 42));
        let mut buckets = [0u32; 10];
        for key in 0..100_000 {
            let u = unit_hash(1, key);
            assert!((0.0..1.0).contains(&u));
            buckets[(u * 10.0) as usize] += 1;
        }
        for b in buckets {
            assert!((9_500..10_500).contains(&b), "uneven bucket {b}");
        }
    }

    #[test]
    fn errors_name_field_and_value() {
        let e = positive("weibull.scale", -1.0).unwrap_err();
        assert_eq!(e.to_string(), "invalid weibull.scale = -1.0: must be a finite number > 0");
        let e = fraction("read_fraction", f64::NAN).unwrap_err();
        assert!(e.to_string().contains("read_fraction = NaN"), "{e}");
    }
}
