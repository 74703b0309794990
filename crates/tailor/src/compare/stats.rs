//! A figure over seeds: its mean and the 95 % confidence interval of that mean (Student's t,
//! since a comparison runs a handful of seeds), and whether two intervals overlap.

use serde::Serialize;

/// Two-sided 95 % quantiles of Student's t for 1 to 30 degrees of freedom (the usual table).
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
    2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/// The 0.975 quantile of Student's t with `df` degrees of freedom: the table up to 30, then the
/// Cornish-Fisher expansion around the normal quantile (within 1e-4 of the exact value there).
pub fn t975(df: usize) -> f64 {
    if (1..=T975.len()).contains(&df) {
        return T975[df - 1];
    }
    let z: f64 = 1.959_963_985;
    let v = df.max(1) as f64;
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * v)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v * v * v)
}

/// The mean of a figure over seeds, with its 95 % interval when there are two seeds or more.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// Mean over seeds.
    pub mean: f64,
    /// The 95 % confidence interval of the mean, `None` with one seed (no CI).
    pub ci95: Option<(f64, f64)>,
    /// Seeds.
    pub n: usize,
}

impl Estimate {
    /// The estimate of `values` (one per seed; non-finite ones are left out).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Estimate {
        let v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        let n = v.len();
        if n == 0 {
            return Estimate { mean: f64::NAN, ci95: None, n };
        }
        let mean = v.iter().sum::<f64>() / n as f64;
        let ci95 = (n >= 2).then(|| {
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let half = t975(n - 1) * (var / n as f64).sqrt();
            (mean - half, mean + half)
        });
        Estimate { mean, ci95, n }
    }

    /// The interval, or the mean alone as a point when there is no CI.
    pub fn range(&self) -> (f64, f64) {
        self.ci95.unwrap_or((self.mean, self.mean))
    }

    /// Whether the two intervals share a point (with no CI, the mean stands for it).
    pub fn overlaps(&self, other: &Estimate) -> bool {
        let (a, b) = (self.range(), other.range());
        a.0 <= b.1 && b.0 <= a.1
    }

    /// `12.10 [11.80, 12.40]`, or `12.10 (no CI)` with one seed.
    pub fn text(&self, decimals: usize) -> String {
        self.text_in(decimals, "")
    }

    /// [`Estimate::text`] with a unit after the mean: `12.10 ms [11.80, 12.40]`.
    pub fn text_in(&self, decimals: usize, unit: &str) -> String {
        let mean = format!("{:.d$}{unit}", self.mean, d = decimals);
        match self.ci95 {
            Some((lo, hi)) => format!("{mean} [{lo:.d$}, {hi:.d$}]", d = decimals),
            None => format!("{mean} (no CI)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_t_quantile_meets_the_table_and_tends_to_the_normal() {
        assert_eq!(t975(1), 12.706);
        assert!((t975(31) - 2.0395).abs() < 1e-3, "{}", t975(31));
        assert!((t975(120) - 1.9799).abs() < 1e-3, "{}", t975(120));
        assert!(t975(10_000) > 1.959 && t975(10_000) < 1.961);
    }

    #[test]
    fn the_interval_holds_the_mean_and_follows_the_t_rule() {
        let e = Estimate::of([10.0, 12.0, 14.0]);
        assert_eq!(e.mean, 12.0);
        // s = 2, half width = 4.303 * 2 / sqrt(3)
        let (lo, hi) = e.ci95.unwrap();
        assert!((hi - 12.0 - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-9);
        assert!(lo < e.mean && e.mean < hi);
        assert_eq!(e.text(1), "12.0 [7.0, 17.0]");
    }

    #[test]
    fn one_seed_has_no_ci_and_overlap_compares_points() {
        let one = Estimate::of([5.0]);
        assert_eq!((one.ci95, one.text(2).as_str()), (None, "5.00 (no CI)"));
        assert!(one.overlaps(&Estimate::of([5.0])));
        assert!(!one.overlaps(&Estimate::of([6.0])));
        assert!(Estimate::of([4.0, 6.0]).overlaps(&Estimate::of([5.5, 7.0])));
        assert!(Estimate::of([f64::NAN]).mean.is_nan());
    }
}
