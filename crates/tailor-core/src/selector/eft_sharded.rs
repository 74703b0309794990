//! `eft-sharded`: being implemented (see ALGORITHMS.md §2).

use super::{Decision, ReplicaSelector, SelectorEnv, World};
use crate::model::{NodeId, RequestView};
use crate::time::Nanos;
use serde::{Deserialize, Serialize};

/// Tunables of `eft-sharded`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EftShardedConfig {}

/// `eft-sharded` selector.
pub struct EftSharded {}

impl EftSharded {
    /// Build for one coordinator.
    pub fn new(_cfg: &EftShardedConfig, _env: &SelectorEnv) -> Self {
        EftSharded {}
    }
}

impl ReplicaSelector for EftSharded {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        Decision::to(replicas[0])
    }
}
