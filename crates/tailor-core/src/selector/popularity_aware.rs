//! `popularity-aware`: being implemented (see ALGORITHMS.md §2).

use super::{Decision, ReplicaSelector, SelectorEnv, World};
use crate::model::{NodeId, RequestView};
use crate::time::Nanos;
use serde::{Deserialize, Serialize};

/// Tunables of `popularity-aware`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PopularityConfig {}

/// `popularity-aware` selector.
pub struct PopularityAware {}

impl PopularityAware {
    /// Build for one coordinator.
    pub fn new(_cfg: &PopularityConfig, _env: &SelectorEnv) -> Self {
        PopularityAware {}
    }
}

impl ReplicaSelector for PopularityAware {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        Decision::to(replicas[0])
    }
}
