//! `p2c-peak-ewma`: being implemented (see ALGORITHMS.md §2).

use super::{Decision, ReplicaSelector, SelectorEnv, World};
use crate::model::{NodeId, RequestView};
use crate::time::Nanos;
use serde::{Deserialize, Serialize};

/// Tunables of `p2c-peak-ewma`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct P2cConfig {}

/// `p2c-peak-ewma` selector.
pub struct P2cPeakEwma {}

impl P2cPeakEwma {
    /// Build for one coordinator.
    pub fn new(_cfg: &P2cConfig, _env: &SelectorEnv) -> Self {
        P2cPeakEwma {}
    }
}

impl ReplicaSelector for P2cPeakEwma {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        Decision::to(replicas[0])
    }
}
