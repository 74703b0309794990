//! Arrivals: when requests reach the coordinators.

use super::{positive, WorkloadError};
use crate::time::{from_ms, Nanos, SEC};
use rand::Rng;
use rand_distr::Exp1;
use serde::{Deserialize, Serialize};

/// How requests arrive; the engine turns it into a [`Poisson`] process, client loops or a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ArrivalConfig {
    /// Open loop, Poisson at a fixed rate.
    Poisson {
        /// Requests per second over the whole cluster.
        rate_per_sec: f64,
    },
    /// Open loop, Poisson at the rate that gives this load factor (see [`rate_for_load`]).
    PoissonLoad {
        /// Offered load as a fraction of the cluster's service capacity (> 0).
        load: f64,
    },
    /// Closed loop: each client keeps a fixed number of requests outstanding.
    ClosedLoop(ClosedLoop),
    /// Replay of a CSV trace (see [`super::trace::parse_trace`]).
    Trace {
        /// Path of the trace file, read by the engine.
        path: String,
    },
}

impl ArrivalConfig {
    /// Checks the numeric fields (a trace path is checked when the engine reads it).
    pub fn validate(&self) -> Result<(), WorkloadError> {
        match self {
            ArrivalConfig::Poisson { rate_per_sec } => positive("poisson.rate_per_sec", *rate_per_sec).map(|_| ()),
            ArrivalConfig::PoissonLoad { load } => positive("poisson-load.load", *load).map(|_| ()),
            ArrivalConfig::ClosedLoop(c) => c.validate(),
            ArrivalConfig::Trace { path } => {
                if path.is_empty() {
                    Err(WorkloadError::invalid("trace.path", "\"\"", "must name a file"))
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// A closed-loop client: it keeps `outstanding_per_client` requests in flight and issues the next
/// one `think_time_ms` after each response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClosedLoop {
    /// Requests each client keeps in flight (>= 1).
    pub outstanding_per_client: u32,
    /// Pause between a response and the next request of that slot, in milliseconds (>= 0).
    pub think_time_ms: f64,
}

impl Default for ClosedLoop {
    fn default() -> Self {
        ClosedLoop { outstanding_per_client: 1, think_time_ms: 0.0 }
    }
}

impl ClosedLoop {
    /// Checks that at least one request is outstanding and the think time is a finite, non-negative duration.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.outstanding_per_client == 0 {
            return Err(WorkloadError::invalid(
                "closed-loop.outstanding_per_client",
                0,
                "each client needs at least one outstanding request",
            ));
        }
        if !(self.think_time_ms.is_finite() && self.think_time_ms >= 0.0) {
            return Err(WorkloadError::invalid_f64(
                "closed-loop.think_time_ms",
                self.think_time_ms,
                "must be a finite number >= 0",
            ));
        }
        Ok(())
    }

    /// The think time in nanoseconds.
    pub fn think_time(&self) -> Nanos {
        from_ms(self.think_time_ms)
    }
}

/// A Poisson arrival process: exponentially distributed gaps between requests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Poisson {
    rate_per_sec: f64,
    mean_gap_ns: f64,
}

impl Poisson {
    /// A process of `rate_per_sec` arrivals per second on average (finite, > 0).
    ///
    /// Gaps are whole nanoseconds of at least 1, so rates near or above 10^9 per second come out
    /// slower than asked.
    pub fn new(rate_per_sec: f64) -> Result<Poisson, WorkloadError> {
        let rate_per_sec = positive("rate_per_sec", rate_per_sec)?;
        let mean_gap_ns = SEC as f64 / rate_per_sec;
        debug_assert!(mean_gap_ns > 0.0 && !mean_gap_ns.is_nan(), "a mean gap {mean_gap_ns} from a positive rate");
        Ok(Poisson { rate_per_sec, mean_gap_ns })
    }

    /// Average arrivals per second.
    pub fn rate_per_sec(&self) -> f64 {
        self.rate_per_sec
    }

    /// Time until the next arrival, rounded to the nanosecond, at least 1 ns.
    pub fn next_gap<R: Rng + ?Sized>(&self, rng: &mut R) -> Nanos {
        let e: f64 = rng.sample(Exp1);
        debug_assert!(e.is_finite() && e >= 0.0, "an exponential draw {e}");
        // `as` saturates, so an absurdly long gap cannot wrap.
        (crate::time::round_nonneg(e * self.mean_gap_ns) as Nanos).max(1)
    }
}

/// The arrival rate (per second) that offers `load` times the capacity of `servers` servers with
/// `workers` workers each, when a request takes `mean_service_ns` on average.
///
/// `= servers * workers * load / mean service time`. Load counts each request once at its mean
/// service time: the extra work of writes executed on every replica and of read-repair shadow
/// reads is not folded in (callers pass the plain mean). Inputs are not checked, so a zero
/// service time gives an infinite rate.
pub fn rate_for_load(load: f64, servers: usize, workers: usize, mean_service_ns: f64) -> f64 {
    debug_assert!(mean_service_ns > 0.0 && load >= 0.0, "a load {load} of requests lasting {mean_service_ns} ns");
    servers as f64 * workers as f64 * load * SEC as f64 / mean_service_ns
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn poisson_mean_gap_is_one_over_rate() {
        let p = Poisson::new(2_000.0).unwrap();
        let mut rng = SmallRng::seed_from_u64(4);
        let n = 200_000;
        let gaps: Vec<Nanos> = (0..n).map(|_| p.next_gap(&mut rng)).collect();
        assert!(gaps.iter().all(|&g| g >= 1));
        let mean = gaps.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean / 500_000.0 - 1.0).abs() < 0.01, "mean gap {mean} ns");
        // Exponential: P(gap > mean) = 1/e.
        let above = gaps.iter().filter(|&&g| g > 500_000).count() as f64 / n as f64;
        assert!((above - (-1f64).exp()).abs() < 0.005, "{above}");
    }

    #[test]
    fn huge_rates_still_advance_time() {
        let p = Poisson::new(1e12).unwrap();
        let mut rng = SmallRng::seed_from_u64(4);
        assert!((0..1000).all(|_| p.next_gap(&mut rng) >= 1));
    }

    #[test]
    fn rate_for_load_matches_the_c3_and_europar_setups() {
        // C3: 50 servers × 0.99 × 4 workers / 4 ms.
        let r = rate_for_load(0.99, 50, 4, 4e6);
        assert!((r - 49_500.0).abs() < 1e-6, "{r}");
        // Euro-Par: lambda = m L / p_mean with one worker.
        let r = rate_for_load(0.9, 12, 1, 2e6);
        assert!((r - 5_400.0).abs() < 1e-9, "{r}");
    }

    #[test]
    fn invalid_rates_are_errors_naming_the_field() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = Poisson::new(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("invalid rate_per_sec = {bad}")), "{e}");
        }
        let e = ArrivalConfig::PoissonLoad { load: -0.5 }.validate().unwrap_err().to_string();
        assert!(e.contains("poisson-load.load = -0.5"), "{e}");
        let e = ArrivalConfig::Poisson { rate_per_sec: f64::NAN }.validate().unwrap_err().to_string();
        assert!(e.contains("poisson.rate_per_sec = NaN"), "{e}");
        let closed = |o, t| ArrivalConfig::ClosedLoop(ClosedLoop { outstanding_per_client: o, think_time_ms: t });
        assert!(closed(0, 0.0).validate().unwrap_err().to_string().contains("outstanding_per_client = 0"));
        assert!(closed(1, -1.0).validate().unwrap_err().to_string().contains("think_time_ms = -1"));
        assert!(closed(4, 0.5).validate().is_ok());
        assert!(ArrivalConfig::Trace { path: String::new() }.validate().is_err());
    }

    #[test]
    fn closed_loop_config_defaults_and_serde() {
        let cfg: ArrivalConfig = serde_json::from_str(r#"{"kind":"closed-loop","think_time_ms":1.5}"#).unwrap();
        let ArrivalConfig::ClosedLoop(c) = cfg else { panic!("wrong variant {cfg:?}") };
        assert_eq!(c.outstanding_per_client, 1);
        assert_eq!(c.think_time(), 1_500_000);
        assert!(serde_json::from_str::<ArrivalConfig>(r#"{"kind":"closed-loop","thinktime":1}"#).is_err());
        let cfg: ArrivalConfig = serde_json::from_str(r#"{"kind":"poisson-load","load":0.9}"#).unwrap();
        assert_eq!(cfg, ArrivalConfig::PoissonLoad { load: 0.9 });
        assert!(serde_json::from_str::<ArrivalConfig>(r#"{"kind":"poisson","rate":1}"#).is_err());
    }
}
