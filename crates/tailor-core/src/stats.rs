//! Latency and stretch histograms with the percentiles every report prints.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The percentiles of a distribution, in the histogram's reporting unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest sample.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Number of samples.
    pub count: u64,
}

/// A high-dynamic-range histogram of non-negative values with 3 significant digits.
///
/// Values are recorded as integers in `1/scale` units (nanoseconds for latency, thousandths for
/// stretch) and reported divided by `unit`, so reports read in milliseconds or plain ratios.
#[derive(Clone, Debug)]
pub struct Hist {
    hist: Histogram<u64>,
    scale: f64,
    unit: f64,
}

impl Hist {
    /// A latency histogram: record nanoseconds, report milliseconds.
    pub fn latency() -> Self {
        Hist { hist: Histogram::new(3).expect("3 significant digits is valid"), scale: 1.0, unit: 1e6 }
    }

    /// A stretch histogram: record ratios (≥ 1 in theory), kept to 1/1000 precision.
    pub fn stretch() -> Self {
        Hist { hist: Histogram::new(3).expect("3 significant digits is valid"), scale: 1000.0, unit: 1000.0 }
    }

    /// Record a latency in nanoseconds (or a ratio, for stretch histograms).
    #[inline]
    pub fn record(&mut self, value: f64) {
        self.record_units(crate::time::round_nonneg(value * self.scale).max(0.0) as u64);
    }

    /// Record a whole number of recording units (nanoseconds, for a latency histogram): what
    /// [`Hist::record`] does for an integral value, without the float round trip (the simulator
    /// records two values per request).
    #[inline]
    pub fn record_units(&mut self, units: u64) {
        self.hist.record(units.max(1)).expect("auto-resizing histogram accepts any u64");
    }

    /// Merge another histogram of the same kind.
    pub fn add(&mut self, other: &Hist) {
        self.hist.add(&other.hist).expect("auto-resizing histograms merge");
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Percentiles in reporting units (all zero when empty).
    pub fn summary(&self) -> Summary {
        if self.hist.is_empty() {
            return Summary::default();
        }
        let q = |p: f64| self.hist.value_at_quantile(p) as f64 / self.unit;
        let s = Summary {
            p50: q(0.50),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: self.hist.max() as f64 / self.unit,
            mean: self.hist.mean() / self.unit,
            count: self.hist.len(),
        };
        debug_assert!(
            s.p50 <= s.p95 && s.p95 <= s.p99 && s.p99 <= s.p999 && s.p999 <= s.max,
            "quantiles in order: {s:?}"
        );
        debug_assert!(s.mean > 0.0 && s.mean <= s.max && s.count > 0, "a mean within the recorded values: {s:?}");
        s
    }

    /// The cumulative distribution as `(value, fraction ≤ value)` points, at most ~`points` of them,
    /// denser in the tail (for CDF plots).
    pub fn cdf(&self, points: usize) -> Vec<(f64, f64)> {
        if self.hist.is_empty() {
            return Vec::new();
        }
        let mut out: Vec<(f64, f64)> = Vec::with_capacity(points + 1);
        let mut push = |value: f64, q: f64| match out.last_mut() {
            // equal values: keep the highest fraction reached at that value
            Some(last) if last.0 == value => last.1 = q,
            _ => out.push((value, q)),
        };
        for i in 0..points {
            // quantiles 1 - 10^-x spread x in [0, 4): dense near the tail
            let x = 4.0 * i as f64 / points as f64;
            let q = 1.0 - 10f64.powf(-x);
            push(self.hist.value_at_quantile(q) as f64 / self.unit, q);
        }
        push(self.hist.max() as f64 / self.unit, 1.0);
        debug_assert!(out.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1), "a CDF rises in value and fraction");
        debug_assert!(out.iter().all(|&(v, q)| v > 0.0 && (0.0..=1.0).contains(&q)), "fractions in [0, 1]");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_percentiles_in_ms() {
        let mut h = Hist::latency();
        for i in 1..=1000u64 {
            h.record((i * 1_000_000) as f64);
        }
        let s = h.summary();
        assert!((s.p50 - 500.0).abs() < 1.0, "{s:?}");
        assert!((s.p99 - 990.0).abs() < 1.0, "{s:?}");
        assert!((s.max - 1000.0).abs() < 1.0, "{s:?}");
        assert!((s.mean - 500.5).abs() < 1.0, "{s:?}");
        assert_eq!(s.count, 1000);
    }

    #[test]
    fn stretch_keeps_fractions() {
        let mut h = Hist::stretch();
        h.record(1.5);
        h.record(2.25);
        let s = h.summary();
        assert!((s.max - 2.25).abs() < 0.01 && (s.p50 - 1.5).abs() < 0.01, "{s:?}");
    }

    #[test]
    fn empty_summary_is_zero_and_cdf_ends_at_one() {
        assert_eq!(Hist::latency().summary(), Summary::default());
        let mut h = Hist::latency();
        h.record(5e6);
        h.record(7e6);
        let cdf = h.cdf(50);
        assert_eq!(cdf.last().unwrap().1, 1.0);
        assert!(cdf.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    }
}
