//! `tap`: being implemented (see ALGORITHMS.md §2).

use super::{Decision, ReplicaSelector, SelectorEnv, World};
use crate::model::{NodeId, RequestView};
use crate::time::Nanos;
use serde::{Deserialize, Serialize};

/// Tunables of `tap`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TapConfig {}

/// `tap` selector.
pub struct Tap {}

impl Tap {
    /// Build for one coordinator.
    pub fn new(_cfg: &TapConfig, _env: &SelectorEnv) -> Self {
        Tap {}
    }
}

impl ReplicaSelector for Tap {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        Decision::to(replicas[0])
    }
}
