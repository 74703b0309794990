//! The service-time estimate a replica gives a job ([`crate::model::JobMeta::service`],
//! [`super::Arrival::service`]): what local policies order by (SJF, RML) and what the
//! accountant sums into pending work. Defined once, here; each engine hands it its own service
//! model and the job's exact size:
//! - the simulator: the spec's nominal model `alpha * size + beta`
//!   (`ClusterSpec::nominal_linear`), which is also its nominal time for stretch;
//! - the store: its emulated device `alpha * size + beta` when emulation is on, else
//!   [`ServiceEstimate::UNMODELLED`] (1 ns per byte + 20 µs, a rough local-SSD figure).
//!
//! Cassandra schedules its own reads and gives no job an estimate: what Tailor knows there is a
//! measurement of a node (its mean read service time by Little's law, `tailor-cql`'s
//! `service_meter.rs`), a fact, not this estimate (see `coordinator/limits.rs`).

use crate::time::{round_nonneg, Nanos};

/// A linear service-time model `alpha * size + beta`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServiceEstimate {
    /// Nanoseconds per byte.
    pub alpha_ns_per_byte: f64,
    /// Fixed cost per job, in ns (a float: the simulator's spec gives it in fractional ms).
    pub beta_ns: f64,
}

impl ServiceEstimate {
    /// An engine with no model of its device (the store without emulation): 1 ns per byte +
    /// 20 µs, a rough local-SSD figure.
    pub const UNMODELLED: ServiceEstimate = ServiceEstimate { alpha_ns_per_byte: 1.0, beta_ns: 20_000.0 };

    /// The estimate of a job of `size` bytes: `alpha * size + beta`, rounded, at least 1 ns.
    #[inline]
    pub fn of(&self, size: u64) -> Nanos {
        round_nonneg(self.alpha_ns_per_byte * size as f64 + self.beta_ns).max(1.0) as Nanos
    }

    /// Whether every job gets the same estimate (no per-byte cost): an engine may then compute
    /// it once.
    pub fn is_fixed(&self) -> bool {
        self.alpha_ns_per_byte == 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_linear_rounded_and_at_least_one_ns() {
        let euro_par = ServiceEstimate { alpha_ns_per_byte: 80.0, beta_ns: 1e6 };
        assert_eq!(euro_par.of(1_000), 1_080_000);
        assert_eq!(ServiceEstimate { alpha_ns_per_byte: 0.25, beta_ns: 0.0 }.of(2), 1, "0.5 rounds up");
        assert_eq!(ServiceEstimate { alpha_ns_per_byte: 0.0, beta_ns: 0.0 }.of(9), 1, "never 0");
        assert_eq!(ServiceEstimate::UNMODELLED.of(4_096), 24_096);
        assert!(ServiceEstimate { alpha_ns_per_byte: 0.0, beta_ns: 5.0 }.is_fixed());
        // the rounding the simulator's nominal times always had: the sum is rounded, not its terms
        assert_eq!(ServiceEstimate { alpha_ns_per_byte: 0.3, beta_ns: 0.3 }.of(1), 1);
        assert_eq!(ServiceEstimate { alpha_ns_per_byte: 1.5, beta_ns: 0.5 }.of(1), 2);
    }
}
