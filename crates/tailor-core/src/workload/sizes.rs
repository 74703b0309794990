//! Value sizes: how many bytes a key's value holds.

use super::{positive, unit_hash, WorkloadError};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// A value-size distribution, in bytes.
///
/// Continuous laws are rounded to the nearest byte, with a floor of 1 byte. Facebook's ETC pool
/// (Atikoglu et al., SIGMETRICS 2012) has generalized-Pareto value sizes with location 0, scale
/// 214.476 and shape 0.348238, a mean of about 329 bytes:
///
/// ```
/// use tailor_core::workload::{SizeConfig, SizeModel};
///
/// let etc = SizeConfig::GeneralizedPareto { location: 0.0, scale: 214.476, shape: 0.348238 };
/// let model = SizeModel::new(&etc).unwrap();
/// assert!((model.mean() - 329.07).abs() < 0.01);
/// assert_eq!(model.quantile(0.5), 168);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SizeConfig {
    /// Every value has `bytes` bytes (at least 1).
    Fixed {
        /// Size in bytes.
        bytes: u64,
    },
    /// A discrete mixture: `values[i]` bytes with probability `weights[i] / sum(weights)`
    /// (Héron's 1 KB / 512 KB, Hector's 3/4 × 1 KB + 1/4 × 1 MB).
    Mixture {
        /// Sizes in bytes (each at least 1).
        values: Vec<u64>,
        /// Relative weights (each finite and > 0), one per value.
        weights: Vec<f64>,
    },
    /// Weibull with `P(X > x) = exp(-(x / scale)^shape)` (Euro-Par: scale 32 000, shape 0.5).
    Weibull {
        /// Scale in bytes, > 0.
        scale: f64,
        /// Shape, > 0.
        shape: f64,
    },
    /// Generalized Pareto with `P(X > x) = (1 + shape (x - location) / scale)^(-1 / shape)`.
    ///
    /// `shape` must be below 1 so that the mean, which load factors are computed from, is finite.
    GeneralizedPareto {
        /// Location (smallest size) in bytes, >= 0.
        location: f64,
        /// Scale in bytes, > 0.
        scale: f64,
        /// Shape, < 1 (0 is the exponential law; negative shapes bound the sizes).
        shape: f64,
    },
    /// An empirical CDF: points `(size, P(X <= size))` with strictly increasing sizes,
    /// non-decreasing probabilities, and a last probability of 1.
    ///
    /// Between points the CDF is linear; the first point's probability is an atom at its size
    /// (nothing is smaller). Give the first point probability 0 for no atom, and use `mixture`
    /// for purely discrete sizes.
    Empirical {
        /// The CDF points.
        cdf: Vec<(u64, f64)>,
    },
}

impl SizeConfig {
    /// Facebook ETC's value sizes (generalized Pareto, location 0, scale 214.476, shape 0.348238).
    pub fn facebook_etc() -> SizeConfig {
        SizeConfig::GeneralizedPareto { location: 0.0, scale: 214.476, shape: 0.348238 }
    }
}

/// A validated value-size distribution that draws sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeModel {
    law: Law,
    mean: f64,
}

#[derive(Clone, Debug, PartialEq)]
enum Law {
    Fixed(u64),
    /// Values sorted ascending with their cumulative probabilities (last exactly 1).
    Mixture {
        values: Vec<u64>,
        cum: Vec<f64>,
    },
    Weibull {
        scale: f64,
        shape: f64,
    },
    Gpd {
        location: f64,
        scale: f64,
        shape: f64,
    },
    /// Sizes strictly increasing, cumulative probabilities non-decreasing (last exactly 1).
    Empirical {
        sizes: Vec<f64>,
        probs: Vec<f64>,
    },
}

/// Largest `u` the quantile functions see, so the open interval `[0, 1)` never reaches infinity.
const U_MAX: f64 = 1.0 - f64::EPSILON / 2.0;

/// Tolerance on the last probability of an empirical CDF (files are often written with rounding).
const CDF_END_TOLERANCE: f64 = 1e-6;

impl SizeModel {
    /// Validates `cfg` and prepares it for sampling.
    pub fn new(cfg: &SizeConfig) -> Result<SizeModel, WorkloadError> {
        let law = match cfg {
            SizeConfig::Fixed { bytes } => {
                if *bytes == 0 {
                    return Err(WorkloadError::invalid("fixed.bytes", bytes, "must be at least 1 byte"));
                }
                Law::Fixed(*bytes)
            }
            SizeConfig::Mixture { values, weights } => mixture(values, weights)?,
            SizeConfig::Weibull { scale, shape } => {
                Law::Weibull { scale: positive("weibull.scale", *scale)?, shape: positive("weibull.shape", *shape)? }
            }
            SizeConfig::GeneralizedPareto { location, scale, shape } => {
                if !(location.is_finite() && *location >= 0.0) {
                    return Err(WorkloadError::invalid_f64(
                        "generalized-pareto.location",
                        *location,
                        "must be a finite number >= 0",
                    ));
                }
                let scale = positive("generalized-pareto.scale", *scale)?;
                if !(shape.is_finite() && *shape < 1.0) {
                    return Err(WorkloadError::invalid_f64(
                        "generalized-pareto.shape",
                        *shape,
                        "must be a finite number < 1 (the mean is infinite otherwise)",
                    ));
                }
                Law::Gpd { location: *location, scale, shape: *shape }
            }
            SizeConfig::Empirical { cdf } => empirical(cdf)?,
        };
        let mean = law.mean();
        if !mean.is_finite() {
            let (field, value) = match cfg {
                SizeConfig::Weibull { shape, .. } => ("weibull.shape", *shape),
                SizeConfig::GeneralizedPareto { scale, .. } => ("generalized-pareto.scale", *scale),
                _ => ("size", mean),
            };
            return Err(WorkloadError::invalid_f64(field, value, "makes the mean value size overflow"));
        }
        debug_assert!(mean > 0.0, "a law of positive sizes has a positive mean: {mean}");
        Ok(SizeModel { law, mean })
    }

    /// The size at probability `u` (inverse CDF), in bytes, at least 1; `u` is clamped to `[0, 1)`.
    pub fn quantile(&self, u: f64) -> u64 {
        let u = if u > 0.0 { u.min(U_MAX) } else { 0.0 };
        debug_assert!((0.0..1.0).contains(&u), "a unit draw {u} below 1");
        let bytes = match &self.law {
            Law::Fixed(bytes) => *bytes,
            Law::Mixture { values, cum } => {
                let i = cum.partition_point(|&c| c <= u).min(values.len() - 1);
                values[i]
            }
            law => bytes_of(law.continuous_quantile(u)),
        };
        debug_assert!(bytes >= 1, "a value is at least 1 byte");
        bytes
    }

    /// A fresh size drawn from the distribution.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.quantile(rng.random::<f64>())
    }

    /// The size of `key`'s value in the data set seeded by `seed`: a fixed function of both, so
    /// every read of a key sees the same size, and distributed over keys like [`SizeModel::sample`].
    #[inline]
    pub fn size_of_key(&self, seed: u64, key: u64) -> u64 {
        self.quantile(unit_hash(seed, key))
    }

    /// Mean size in bytes of the underlying law, in closed form.
    ///
    /// For continuous laws this is the mean before rounding to whole bytes; rounding moves the
    /// sampled mean by well under a byte (only the 1-byte floor biases it, upwards).
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Fraction of sizes strictly greater than `threshold` bytes (e.g. Héron's `THR_L`).
    ///
    /// Exact for the rounded sizes [`SizeModel::quantile`] returns: a continuous draw `x` counts as
    /// large when it rounds above `threshold`, i.e. when `x >= threshold + 0.5`.
    pub fn large_fraction(&self, threshold: u64) -> f64 {
        if threshold == 0 {
            return 1.0;
        }
        let fraction = self.fraction_above(threshold);
        debug_assert!(
            (0.0..=1.0).contains(&fraction),
            "a fraction {fraction} above {threshold} bytes is a probability"
        );
        fraction
    }

    /// [`SizeModel::large_fraction`] by the law's kind, for a threshold of at least 1 byte.
    fn fraction_above(&self, threshold: u64) -> f64 {
        match &self.law {
            Law::Fixed(bytes) => f64::from(u8::from(*bytes > threshold)),
            Law::Mixture { values, cum } => {
                let i = values.partition_point(|&v| v <= threshold);
                if i == 0 {
                    1.0
                } else {
                    1.0 - cum[i - 1]
                }
            }
            law => law.survival(threshold as f64 + 0.5),
        }
    }
}

/// Rounds a continuous size to whole bytes, at least 1 (saturating for absurdly large draws).
fn bytes_of(x: f64) -> u64 {
    (crate::time::round_nonneg(x) as u64).max(1)
}

fn mixture(values: &[u64], weights: &[f64]) -> Result<Law, WorkloadError> {
    if values.is_empty() {
        return Err(WorkloadError::invalid("mixture.values", "[]", "needs at least one value"));
    }
    if weights.len() != values.len() {
        return Err(WorkloadError::invalid(
            "mixture.weights",
            format!("{weights:?}"),
            format!("needs one weight per value ({} values)", values.len()),
        ));
    }
    for (i, &v) in values.iter().enumerate() {
        if v == 0 {
            return Err(WorkloadError::invalid(format!("mixture.values[{i}]"), v, "must be at least 1 byte"));
        }
    }
    for (i, &w) in weights.iter().enumerate() {
        positive(&format!("mixture.weights[{i}]"), w)?;
    }
    let total: f64 = weights.iter().sum();
    if !total.is_finite() {
        return Err(WorkloadError::invalid("mixture.weights", format!("{weights:?}"), "their sum overflows"));
    }
    let mut pairs: Vec<(u64, f64)> = values.iter().copied().zip(weights.iter().map(|w| w / total)).collect();
    // Sorting makes `quantile` monotone, so a hashed key's size is a true inverse-CDF draw.
    pairs.sort_by_key(|p| p.0);
    let mut acc = 0.0;
    let mut cum: Vec<f64> = pairs
        .iter()
        .map(|p| {
            acc += p.1;
            acc
        })
        .collect();
    if let Some(last) = cum.last_mut() {
        *last = 1.0;
    }
    debug_assert!(cum.windows(2).all(|w| w[0] <= w[1]) && cum[0] > 0.0, "a cumulative distribution rises: {cum:?}");
    debug_assert!(pairs.windows(2).all(|w| w[0].0 <= w[1].0), "values sorted so the quantile is monotone");
    Ok(Law::Mixture { values: pairs.iter().map(|p| p.0).collect(), cum })
}

fn empirical(cdf: &[(u64, f64)]) -> Result<Law, WorkloadError> {
    let field = |i: usize| format!("empirical.cdf[{i}]");
    if cdf.is_empty() {
        return Err(WorkloadError::invalid("empirical.cdf", "[]", "needs at least one (size, probability) point"));
    }
    for (i, &(size, p)) in cdf.iter().enumerate() {
        let shown = format!("({size}, {p:?})");
        if size == 0 {
            return Err(WorkloadError::invalid(field(i), shown, "sizes must be at least 1 byte"));
        }
        if !(0.0..=1.0).contains(&p) {
            return Err(WorkloadError::invalid(field(i), shown, "probabilities must be between 0 and 1"));
        }
        if i > 0 {
            let (prev_size, prev_p) = cdf[i - 1];
            if size <= prev_size {
                return Err(WorkloadError::invalid(field(i), shown, "sizes must be strictly increasing"));
            }
            if p < prev_p {
                return Err(WorkloadError::invalid(field(i), shown, "probabilities must be non-decreasing"));
            }
        }
    }
    let last = cdf.len() - 1;
    let (size, p) = cdf[last];
    if (p - 1.0).abs() > CDF_END_TOLERANCE {
        return Err(WorkloadError::invalid(field(last), format!("({size}, {p:?})"), "the last probability must be 1"));
    }
    let sizes = cdf.iter().map(|c| c.0 as f64).collect();
    let mut probs: Vec<f64> = cdf.iter().map(|c| c.1).collect();
    probs[last] = 1.0;
    debug_assert!(probs.windows(2).all(|w| w[0] <= w[1]), "a CDF never falls: {probs:?}");
    Ok(Law::Empirical { sizes, probs })
}

impl Law {
    /// Mean of the law before rounding.
    fn mean(&self) -> f64 {
        match self {
            Law::Fixed(bytes) => *bytes as f64,
            Law::Mixture { values, cum } => {
                let mut prev = 0.0;
                values
                    .iter()
                    .zip(cum)
                    .map(|(&v, &c)| {
                        let m = v as f64 * (c - prev);
                        prev = c;
                        m
                    })
                    .sum()
            }
            Law::Weibull { scale, shape } => scale * ln_gamma(1.0 + 1.0 / shape).exp(),
            Law::Gpd { location, scale, shape } => location + scale / (1.0 - shape),
            Law::Empirical { sizes, probs } => {
                let atom = sizes[0] * probs[0];
                let ramps: f64 =
                    (1..sizes.len()).map(|i| (probs[i] - probs[i - 1]) * (sizes[i - 1] + sizes[i]) / 2.0).sum();
                atom + ramps
            }
        }
    }

    /// Inverse CDF of a continuous law at `u` in `[0, 1)`.
    fn continuous_quantile(&self, u: f64) -> f64 {
        let x = self.continuous_quantile_of(u);
        debug_assert!(x >= 0.0, "a size quantile {x} at {u} is a size (never negative or NaN)");
        x
    }

    /// [`Law::continuous_quantile`] by the law's kind.
    fn continuous_quantile_of(&self, u: f64) -> f64 {
        match self {
            Law::Weibull { scale, shape } => scale * (-(-u).ln_1p()).powf(1.0 / shape),
            Law::Gpd { location, scale, shape } => {
                let tail = -(-u).ln_1p();
                if *shape == 0.0 {
                    location + scale * tail
                } else {
                    location + scale * (shape * tail).exp_m1() / shape
                }
            }
            Law::Empirical { sizes, probs } => {
                let i = probs.partition_point(|&p| p < u);
                if i == 0 {
                    sizes[0]
                } else {
                    let i = i.min(sizes.len() - 1);
                    let (p0, p1) = (probs[i - 1], probs[i]);
                    debug_assert!(p0 < p1 && (p0..=p1).contains(&u), "{u} interpolated within [{p0}, {p1}]");
                    sizes[i - 1] + (sizes[i] - sizes[i - 1]) * (u - p0) / (p1 - p0)
                }
            }
            Law::Fixed(bytes) => *bytes as f64,
            Law::Mixture { .. } => f64::NAN,
        }
    }

    /// `P(X >= x)` of a continuous law (its CDF has no atom at the non-integer points asked for).
    fn survival(&self, x: f64) -> f64 {
        match self {
            Law::Weibull { scale, shape } => (-(x / scale).powf(*shape)).exp(),
            Law::Gpd { location, scale, shape } => {
                let z = (x - location) / scale;
                if z <= 0.0 {
                    1.0
                } else if *shape == 0.0 {
                    (-z).exp()
                } else {
                    let base = shape * z;
                    if base <= -1.0 {
                        0.0
                    } else {
                        (-base.ln_1p() / shape).exp()
                    }
                }
            }
            Law::Empirical { sizes, probs } => {
                let i = sizes.partition_point(|&s| s <= x);
                if i == 0 {
                    1.0
                } else if i == sizes.len() {
                    0.0
                } else {
                    let (s0, s1) = (sizes[i - 1], sizes[i]);
                    let (p0, p1) = (probs[i - 1], probs[i]);
                    1.0 - (p0 + (p1 - p0) * (x - s0) / (s1 - s0))
                }
            }
            Law::Fixed(_) | Law::Mixture { .. } => f64::NAN,
        }
    }
}

/// `ln Γ(x)` for `x >= 0.5` (Lanczos approximation, g = 7, nine terms; ~15 significant digits).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let a = C[0] + (1..9).map(|i| C[i] / (x + i as f64)).sum::<f64>();
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Parses an empirical CDF file into points for [`SizeConfig::Empirical`].
///
/// One `size,probability` point per line (a comma and/or whitespace between the two). Blank
/// lines and lines starting with `#` are skipped; the first remaining line is a header, and
/// skipped, when it starts with a letter. Errors carry the 1-based line number; the points
/// themselves are checked by [`SizeModel::new`].
pub fn parse_cdf(text: &str) -> Result<Vec<(u64, f64)>, WorkloadError> {
    let mut points = Vec::new();
    let mut first = true;
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let is_first = std::mem::replace(&mut first, false);
        if is_first && line.starts_with(|c: char| c.is_ascii_alphabetic()) {
            continue;
        }
        let err = |message: String| WorkloadError::Line { line: line_no, message };
        let fields: Vec<&str> = line.split(|c: char| c == ',' || c.is_whitespace()).filter(|f| !f.is_empty()).collect();
        if fields.len() != 2 {
            return Err(err(format!("expected `size,probability`, found {} fields", fields.len())));
        }
        let size: u64 =
            fields[0].parse().map_err(|_| err(format!("size `{}` is not a whole number of bytes", fields[0])))?;
        let p: f64 = fields[1].parse().map_err(|_| err(format!("probability `{}` is not a number", fields[1])))?;
        if !(0.0..=1.0).contains(&p) {
            return Err(err(format!("probability {p} is not between 0 and 1")));
        }
        points.push((size, p));
    }
    if points.is_empty() {
        return Err(WorkloadError::Line { line: text.lines().count(), message: "no CDF points".into() });
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn model(cfg: SizeConfig) -> SizeModel {
        SizeModel::new(&cfg).unwrap()
    }

    fn sample_mean(m: &SizeModel, n: usize) -> f64 {
        let mut rng = SmallRng::seed_from_u64(5);
        (0..n).map(|_| m.sample(&mut rng) as f64).sum::<f64>() / n as f64
    }

    #[test]
    fn ln_gamma_matches_known_values() {
        assert!((ln_gamma(1.0)).abs() < 1e-13);
        assert!((ln_gamma(3.0).exp() - 2.0).abs() < 1e-12);
        assert!((ln_gamma(1.5).exp() - std::f64::consts::PI.sqrt() / 2.0).abs() < 1e-13);
        assert!((ln_gamma(11.0).exp() - 3_628_800.0).abs() < 1e-6);
    }

    #[test]
    fn fixed_is_fixed() {
        let m = model(SizeConfig::Fixed { bytes: 1024 });
        assert_eq!(m.quantile(0.0), 1024);
        assert_eq!(m.quantile(0.999), 1024);
        assert_eq!(m.mean(), 1024.0);
        assert_eq!(m.large_fraction(1023), 1.0);
        assert_eq!(m.large_fraction(1024), 0.0);
    }

    #[test]
    fn weibull_mean_closed_form_and_sampled() {
        let m = model(SizeConfig::Weibull { scale: 32_000.0, shape: 0.5 });
        // scale * Γ(1 + 1/0.5) = 32000 * Γ(3) = 64000.
        assert!((m.mean() - 64_000.0).abs() < 1e-6, "{}", m.mean());
        let mean = sample_mean(&m, 400_000);
        assert!((mean / 64_000.0 - 1.0).abs() < 0.03, "sample mean {mean}");
        // Median = scale * ln(2)^(1/shape).
        assert_eq!(m.quantile(0.5), (32_000.0 * 2f64.ln().powi(2)).round() as u64);
        // Closed-form tail vs the rounded quantile.
        let thr = 256 * 1024;
        let expected = (-((thr as f64 + 0.5) / 32_000.0).sqrt()).exp();
        assert!((m.large_fraction(thr) - expected).abs() < 1e-15);
        let shape1 = model(SizeConfig::Weibull { scale: 100.0, shape: 1.0 });
        assert!((shape1.mean() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn mixture_respects_weights() {
        let m = model(SizeConfig::Mixture { values: vec![1_048_576, 1024], weights: vec![1.0, 3.0] });
        assert!((m.mean() - (3.0 * 1024.0 + 1_048_576.0) / 4.0).abs() < 1e-6);
        assert_eq!(m.quantile(0.0), 1024);
        assert_eq!(m.quantile(0.7499), 1024);
        assert_eq!(m.quantile(0.75), 1_048_576);
        assert_eq!(m.quantile(1.0), 1_048_576);
        assert!((m.large_fraction(1024) - 0.25).abs() < 1e-12);
        assert_eq!(m.large_fraction(1023), 1.0);
        assert_eq!(m.large_fraction(1_048_576), 0.0);
        let mut rng = SmallRng::seed_from_u64(9);
        let n = 100_000;
        let large = (0..n).filter(|_| m.sample(&mut rng) == 1_048_576).count();
        assert!((large as f64 / n as f64 - 0.25).abs() < 0.01, "large share {large}");
    }

    #[test]
    fn generalized_pareto_mean_and_quantiles() {
        let m = model(SizeConfig::facebook_etc());
        let expected = 214.476 / (1.0 - 0.348238);
        assert!((m.mean() - expected).abs() < 1e-9);
        let mean = sample_mean(&m, 400_000);
        assert!((mean / expected - 1.0).abs() < 0.03, "sample mean {mean} vs {expected}");
        // Quantile: scale * ((1-u)^-shape - 1) / shape.
        let q = |u: f64| 214.476 * ((1.0 - u).powf(-0.348238) - 1.0) / 0.348238;
        assert_eq!(m.quantile(0.9), q(0.9).round() as u64);
        assert_eq!(m.quantile(0.0), 1);
        // Exponential special case and a bounded (negative shape) case.
        let exp = model(SizeConfig::GeneralizedPareto { location: 100.0, scale: 50.0, shape: 0.0 });
        assert!((exp.mean() - 150.0).abs() < 1e-12);
        assert!((exp.large_fraction(149) - (-(49.5f64 / 50.0)).exp()).abs() < 1e-12);
        let bounded = model(SizeConfig::GeneralizedPareto { location: 0.0, scale: 100.0, shape: -0.5 });
        assert!(bounded.quantile(0.999_999_9) <= 200);
        assert_eq!(bounded.large_fraction(200), 0.0);
    }

    #[test]
    fn empirical_quantiles_interpolate() {
        let m = model(SizeConfig::Empirical { cdf: vec![(100, 0.0), (200, 0.5), (1000, 1.0)] });
        assert_eq!(m.quantile(0.0), 100);
        assert_eq!(m.quantile(0.25), 150);
        assert_eq!(m.quantile(0.5), 200);
        assert_eq!(m.quantile(0.75), 600);
        assert_eq!(m.quantile(0.999_999), 1000);
        assert!((m.mean() - (0.5 * 150.0 + 0.5 * 600.0)).abs() < 1e-9);
        assert!((m.large_fraction(599) - 0.5 * (1.0 - (599.5 - 200.0) / 800.0)).abs() < 1e-12);
        assert_eq!(m.large_fraction(1000), 0.0);
        // An atom at the first point.
        let atom = model(SizeConfig::Empirical { cdf: vec![(10, 0.2), (20, 1.0)] });
        assert_eq!(atom.quantile(0.1), 10);
        assert_eq!(atom.quantile(0.2), 10);
        assert_eq!(atom.quantile(0.6), 15);
        assert!((atom.mean() - (0.2 * 10.0 + 0.8 * 15.0)).abs() < 1e-12);
        assert!((atom.large_fraction(9) - 1.0).abs() < 1e-12);
        assert!((atom.large_fraction(10) - (1.0 - (0.2 + 0.8 * 0.05))).abs() < 1e-12);
        let one = model(SizeConfig::Empirical { cdf: vec![(64, 1.0)] });
        assert_eq!(one.quantile(0.3), 64);
        assert_eq!(one.mean(), 64.0);
    }

    #[test]
    fn size_of_key_is_deterministic_and_distributed_like_sample() {
        let m = model(SizeConfig::Weibull { scale: 32_000.0, shape: 0.5 });
        assert_eq!(m.size_of_key(1, 77), m.size_of_key(1, 77));
        assert!((0..100).any(|k| m.size_of_key(1, k) != m.size_of_key(2, k)));
        let n = 200_000u64;
        let mut by_key: Vec<u64> = (0..n).map(|k| m.size_of_key(42, k)).collect();
        let mut rng = SmallRng::seed_from_u64(8);
        let mut drawn: Vec<u64> = (0..n).map(|_| m.sample(&mut rng)).collect();
        by_key.sort_unstable();
        drawn.sort_unstable();
        for q in [0.1, 0.25, 0.5, 0.75, 0.9, 0.99] {
            let i = (q * n as f64) as usize;
            let (a, b) = (by_key[i] as f64, drawn[i] as f64);
            assert!((a / b - 1.0).abs() < 0.05, "quantile {q}: by key {a}, sampled {b}");
        }
        let mean = by_key.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean / 64_000.0 - 1.0).abs() < 0.03, "mean over keys {mean}");
        let large = by_key.iter().filter(|&&s| s > 262_144).count() as f64 / n as f64;
        assert!((large - m.large_fraction(262_144)).abs() < 0.005);
    }

    #[test]
    fn quantile_clamps_out_of_range_probabilities() {
        let m = model(SizeConfig::Weibull { scale: 1000.0, shape: 1.0 });
        assert_eq!(m.quantile(-1.0), 1);
        assert_eq!(m.quantile(f64::NAN), 1);
        assert!(m.quantile(1.0) < u64::MAX);
        assert_eq!(m.quantile(1.0), m.quantile(2.0));
    }

    #[test]
    fn invalid_configs_name_the_field() {
        let err = |cfg: SizeConfig| SizeModel::new(&cfg).unwrap_err().to_string();
        assert!(err(SizeConfig::Fixed { bytes: 0 }).contains("fixed.bytes = 0"));
        assert!(err(SizeConfig::Mixture { values: vec![], weights: vec![] }).contains("mixture.values"));
        assert!(err(SizeConfig::Mixture { values: vec![1, 2], weights: vec![1.0] }).contains("mixture.weights"));
        let w = err(SizeConfig::Mixture { values: vec![1, 2], weights: vec![1.0, 0.0] });
        assert!(w.contains("mixture.weights[1] = 0"), "{w}");
        let w = err(SizeConfig::Mixture { values: vec![1, 2], weights: vec![-1.0, 1.0] });
        assert!(w.contains("mixture.weights[0] = -1"), "{w}");
        let w = err(SizeConfig::Mixture { values: vec![1, 2], weights: vec![f64::NAN, 1.0] });
        assert!(w.contains("mixture.weights[0] = NaN"), "{w}");
        assert!(err(SizeConfig::Mixture { values: vec![0], weights: vec![1.0] }).contains("mixture.values[0] = 0"));
        assert!(err(SizeConfig::Weibull { scale: -1.0, shape: 0.5 }).contains("weibull.scale = -1"));
        assert!(err(SizeConfig::Weibull { scale: 1.0, shape: f64::NAN }).contains("weibull.shape = NaN"));
        assert!(err(SizeConfig::Weibull { scale: 1.0, shape: 0.001 }).contains("weibull.shape = 0.001"));
        let w = err(SizeConfig::GeneralizedPareto { location: 0.0, scale: 1e308, shape: 0.9 });
        assert!(w.contains("generalized-pareto.scale = 1e308"), "{w}");
        let gpd = |location, scale, shape| err(SizeConfig::GeneralizedPareto { location, scale, shape });
        assert!(gpd(-1.0, 1.0, 0.1).contains("generalized-pareto.location = -1"));
        assert!(gpd(0.0, 0.0, 0.1).contains("generalized-pareto.scale = 0"));
        assert!(gpd(0.0, 1.0, 1.0).contains("generalized-pareto.shape = 1"));
        assert!(gpd(0.0, 1.0, f64::NAN).contains("generalized-pareto.shape = NaN"));
        let emp = |cdf: Vec<(u64, f64)>| err(SizeConfig::Empirical { cdf });
        assert!(emp(vec![]).contains("empirical.cdf"));
        assert!(emp(vec![(0, 1.0)]).contains("empirical.cdf[0] = (0, 1.0)"));
        assert!(emp(vec![(10, 0.5), (10, 1.0)]).contains("empirical.cdf[1] = (10, 1.0): sizes must be strictly"));
        assert!(emp(vec![(10, 0.5), (20, 0.4), (30, 1.0)]).contains("empirical.cdf[1] = (20, 0.4)"));
        assert!(emp(vec![(10, 0.5), (20, 0.9)]).contains("empirical.cdf[1] = (20, 0.9): the last"));
        assert!(emp(vec![(10, -0.1), (20, 1.0)]).contains("empirical.cdf[0] = (10, -0.1)"));
        assert!(emp(vec![(10, f64::NAN), (20, 1.0)]).contains("empirical.cdf[0] = (10, NaN)"));
    }

    #[test]
    fn config_serde_uses_kind_tags() {
        let cfg: SizeConfig =
            serde_json::from_str(r#"{"kind":"generalized-pareto","location":0,"scale":214.476,"shape":0.348238}"#)
                .unwrap();
        assert_eq!(cfg, SizeConfig::facebook_etc());
        let cfg: SizeConfig = serde_json::from_str(r#"{"kind":"empirical","cdf":[[10,0.5],[20,1.0]]}"#).unwrap();
        assert_eq!(cfg, SizeConfig::Empirical { cdf: vec![(10, 0.5), (20, 1.0)] });
        let cfg: SizeConfig = serde_json::from_str(r#"{"kind":"mixture","values":[1,2],"weights":[3,1]}"#).unwrap();
        assert_eq!(cfg, SizeConfig::Mixture { values: vec![1, 2], weights: vec![3.0, 1.0] });
        assert!(serde_json::from_str::<SizeConfig>(r#"{"kind":"fixed","bytes":1,"extra":1}"#).is_err());
        assert!(serde_json::from_str::<SizeConfig>(r#"{"kind":"weibull","scale":1}"#).is_err());
    }

    #[test]
    fn cdf_files_parse_with_line_numbers() {
        let text = "# sizes\nsize,probability\n100, 0.0\n\n200 0.5\n1000,1\n";
        assert_eq!(parse_cdf(text).unwrap(), vec![(100, 0.0), (200, 0.5), (1000, 1.0)]);
        assert_eq!(parse_cdf("1,2\n").unwrap_err().to_string(), "line 1: probability 2 is not between 0 and 1");
        assert_eq!(
            parse_cdf("1,0.5\nx,1\n").unwrap_err().to_string(),
            "line 2: size `x` is not a whole number of bytes"
        );
        assert_eq!(
            parse_cdf("1,0.5\n2,one\n").unwrap_err(),
            WorkloadError::Line { line: 2, message: "probability `one` is not a number".into() }
        );
        assert!(parse_cdf("1,0.5,3\n").unwrap_err().to_string().starts_with("line 1: expected"));
        assert!(parse_cdf("# nothing\n").is_err());
    }
}
