//! placeholder
use super::WorkloadError;
use serde::{Deserialize, Serialize};
/// Sizes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SizeConfig {
    /// Fixed.
    Fixed { bytes: u64 },
    /// Mixture.
    Mixture { values: Vec<u64>, weights: Vec<f64> },
    /// Weibull.
    Weibull { scale: f64, shape: f64 },
    /// GPD.
    GeneralizedPareto { location: f64, scale: f64, shape: f64 },
    /// Empirical.
    Empirical { cdf: Vec<(u64, f64)> },
}
/// Model.
pub struct SizeModel {
    b: u64,
}
impl SizeModel {
    /// New.
    pub fn new(c: &SizeConfig) -> Result<SizeModel, WorkloadError> {
        Ok(SizeModel {
            b: match c {
                SizeConfig::Fixed { bytes } => *bytes,
                _ => 1000,
            },
        })
    }
    /// q.
    pub fn quantile(&self, _u: f64) -> u64 {
        self.b
    }
    /// s.
    pub fn sample<R: rand::Rng + ?Sized>(&self, _rng: &mut R) -> u64 {
        self.b
    }
    /// k.
    pub fn size_of_key(&self, _seed: u64, _key: u64) -> u64 {
        self.b
    }
    /// m.
    pub fn mean(&self) -> f64 {
        self.b as f64
    }
    /// l.
    pub fn large_fraction(&self, t: u64) -> f64 {
        if self.b > t {
            1.0
        } else {
            0.0
        }
    }
}
