//! `dynamic-snitch`: being implemented (see ALGORITHMS.md §2).

use super::{Decision, ReplicaSelector, SelectorEnv, World};
use crate::model::{NodeId, RequestView};
use crate::time::Nanos;
use serde::{Deserialize, Serialize};

/// Tunables of `dynamic-snitch`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SnitchConfig {}

/// `dynamic-snitch` selector.
pub struct DynamicSnitch {}

impl DynamicSnitch {
    /// Build for one coordinator.
    pub fn new(_cfg: &SnitchConfig, _env: &SelectorEnv) -> Self {
        DynamicSnitch {}
    }
}

impl ReplicaSelector for DynamicSnitch {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        Decision::to(replicas[0])
    }
}
