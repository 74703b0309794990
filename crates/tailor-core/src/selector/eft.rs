//! `eft`: being implemented (see ALGORITHMS.md §2).

use super::{Decision, ReplicaSelector, SelectorEnv, World};
use crate::model::{NodeId, RequestView};
use crate::time::Nanos;

/// `eft` selector.
pub struct Eft {}

impl Eft {
    /// Build for one coordinator.
    pub fn new(_env: &SelectorEnv) -> Self {
        Eft {}
    }
}

impl ReplicaSelector for Eft {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        Decision::to(replicas[0])
    }
}
