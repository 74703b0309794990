//! `heron`: being implemented (see ALGORITHMS.md §2).

use super::{Decision, ReplicaSelector, SelectorEnv, World};
use crate::model::{NodeId, RequestView};
use crate::time::Nanos;
use serde::{Deserialize, Serialize};

/// Tunables of `heron`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HeronConfig {}

/// `heron` selector.
pub struct Heron {}

impl Heron {
    /// Build for one coordinator.
    pub fn new(_cfg: &HeronConfig, _env: &SelectorEnv) -> Self {
        Heron {}
    }
}

impl ReplicaSelector for Heron {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        Decision::to(replicas[0])
    }
}
