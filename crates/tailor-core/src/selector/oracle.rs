//! `oracle`: being implemented (see ALGORITHMS.md §2).

use super::{Decision, ReplicaSelector, SelectorEnv, World};
use crate::model::{NodeId, RequestView};
use crate::time::Nanos;

/// `oracle` selector.
pub struct Oracle {}

impl Oracle {
    /// Build for one coordinator.
    pub fn new(_env: &SelectorEnv) -> Self {
        Oracle {}
    }
}

impl ReplicaSelector for Oracle {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        Decision::to(replicas[0])
    }
}
