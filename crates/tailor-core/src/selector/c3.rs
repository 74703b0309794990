//! `c3`: being implemented (see ALGORITHMS.md §2).

use super::{Decision, ReplicaSelector, SelectorEnv, World};
use crate::model::{NodeId, RequestView};
use crate::time::Nanos;
use serde::{Deserialize, Serialize};

/// Tunables of `c3`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct C3Config {}

/// `c3` selector.
pub struct C3 {}

impl C3 {
    /// Build for one coordinator.
    pub fn new(_cfg: &C3Config, _env: &SelectorEnv) -> Self {
        C3 {}
    }
}

impl ReplicaSelector for C3 {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        Decision::to(replicas[0])
    }
}
