//! placeholder
use super::WorkloadError;
use serde::{Deserialize, Serialize};
/// Skew.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DemandSkew {
    pub clients_fraction: f64,
    pub demand_fraction: f64,
}
/// Sampler.
pub struct ClientSampler {
    n: u32,
}
impl ClientSampler {
    /// New.
    pub fn new(n: u32, _s: Option<DemandSkew>) -> Result<ClientSampler, WorkloadError> {
        Ok(ClientSampler { n })
    }
    /// Sample.
    pub fn sample<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        rng.random_range(0..self.n)
    }
}
