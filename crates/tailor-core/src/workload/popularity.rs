//! placeholder
use super::WorkloadError;
use serde::{Deserialize, Serialize};
/// Key popularity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum PopularityConfig {
    /// Uniform.
    Uniform,
    /// Zipf.
    Zipf { s: f64 },
    /// Hotspot.
    Hotspot { hot_fraction: f64, hot_probability: f64 },
    /// Latest.
    Latest { s: f64 },
}
/// Sampler.
pub struct KeySampler {
    keys: u64,
}
impl KeySampler {
    /// New.
    pub fn new(_cfg: &PopularityConfig, keys: u64) -> Result<KeySampler, WorkloadError> {
        Ok(KeySampler { keys })
    }
    /// Sample.
    pub fn sample<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        rng.random_range(0..self.keys)
    }
}
