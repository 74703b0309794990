//! Workload generators shared by the simulator and the load generator (placeholder until merged).
pub mod arrivals;
pub mod clients;
pub mod ops;
pub mod popularity;
pub mod sizes;
pub mod trace;

/// Invalid workload configuration.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct WorkloadError(pub String);

/// A uniform number in [0, 1) from a hash of (seed, key).
pub fn unit_hash(seed: u64, key: u64) -> f64 {
    (crate::ring::hash_key(seed ^ crate::ring::hash_key(key)) >> 11) as f64 / (1u64 << 53) as f64
}
