//! placeholder
use super::WorkloadError;
use crate::time::Nanos;
/// Poisson.
pub struct Poisson {
    rate: f64,
}
impl Poisson {
    /// New.
    pub fn new(rate: f64) -> Result<Poisson, WorkloadError> {
        Ok(Poisson { rate })
    }
    /// Gap.
    pub fn next_gap<R: rand::Rng + ?Sized>(&mut self, rng: &mut R) -> Nanos {
        let u: f64 = rng.random();
        ((-(1.0 - u).ln() / self.rate * 1e9) as Nanos).max(1)
    }
}
/// Rate.
pub fn rate_for_load(load: f64, servers: usize, workers: usize, mean_service_ns: f64) -> f64 {
    servers as f64 * workers as f64 * load / (mean_service_ns / 1e9)
}
