//! placeholder
use super::WorkloadError;
/// Mix.
pub struct OpMix {
    r: f64,
}
impl OpMix {
    /// New.
    pub fn new(r: f64) -> Result<OpMix, WorkloadError> {
        Ok(OpMix { r })
    }
    /// Sample.
    pub fn sample<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> crate::model::Op {
        if rng.random::<f64>() < self.r {
            crate::model::Op::Read
        } else {
            crate::model::Op::Write
        }
    }
}
