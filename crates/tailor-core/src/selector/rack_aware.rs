//! `rack-aware`: the drivers' locality baseline (DataStax `DCAwareRoundRobinPolicy` under
//! `TokenAwarePolicy`, the Scylla drivers' rack-aware round robin): the replicas up in the
//! coordinator's own rack in turn, a replica of another rack only when no local one is up.
//!
//! It sees no latency at all: a slow local replica keeps its turns (scylladb/java-driver#854),
//! which is the failure the `two-racks` preset shows. Racks are a static fact of the cluster,
//! placed by [`crate::topology::rack_of`] (node and coordinator `i` in rack `i mod racks`);
//! the engines fill `racks` from the spec's `cluster.topology` (0: one rack, plain round robin).

use super::registry::{tunable, Needs, Registration};
use super::{Decision, ReplicaSelector, SelectorEnv, World};
use crate::model::{NodeId, RequestView};
use crate::node_map::NodeMap;
use crate::time::Nanos;
use crate::topology::rack_of;
use serde::{Deserialize, Serialize};

/// Tunables of `rack-aware`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RackAwareConfig {
    /// Racks in the cluster (from `cluster.topology.racks`; 0 or 1: one rack).
    pub racks: usize,
}

impl RackAwareConfig {
    /// Reject values the strategy cannot run with, naming the field.
    pub fn validate(&self) -> Result<(), super::c3::InvalidConfig> {
        super::c3::check("racks", self.racks as f64, "< 65536", |v| v < 65536.0)
    }
}

/// Local replicas in turn per replica set, keyed by its primary as round robin does.
pub struct RackAware {
    racks: usize,
    /// This coordinator's rack.
    home: usize,
    /// Next turn per primary this coordinator has read from.
    turns: NodeMap<usize>,
}

impl RackAware {
    /// A rack-aware selector for one coordinator.
    pub fn new(cfg: &RackAwareConfig, env: &SelectorEnv) -> Self {
        RackAware { racks: cfg.racks, home: rack_of(env.coordinator, cfg.racks), turns: NodeMap::new() }
    }

    fn local(&self, replica: NodeId) -> bool {
        rack_of(replica, self.racks) == self.home
    }
}

impl ReplicaSelector for RackAware {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        let locals = replicas.iter().filter(|&&r| self.local(r)).count();
        let slot = self.turns.get_or_insert_with(replicas[0], || 0);
        let turn = *slot;
        *slot = turn.wrapping_add(1);
        let choice = if locals == 0 {
            replicas[turn % replicas.len()]
        } else {
            let mut local = replicas.iter().copied().filter(|&r| self.local(r));
            local.nth(turn % locals).expect("fewer turns than local replicas")
        };
        Decision::to(choice)
    }
}

/// `rack-aware`: the drivers' local-rack (local-DC) round robin.
pub const REGISTRATION: Registration = Registration {
    name: "rack-aware",
    source: "DataStax/Scylla drivers: DC-aware and rack-aware round robin (local first, remote only when no local replica is up)",
    needs: Needs::NOTHING,
    build: |cfg, env| Box::new(RackAware::new(&cfg.rack_aware, env)),
    validate: |cfg| cfg.rack_aware.validate().map_err(|e| tunable("rack_aware", e)),
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::model::SizeHint;

    fn picks(s: &mut RackAware, replicas: &[NodeId], n: u64) -> Vec<NodeId> {
        (0..n).map(|i| replica_of(s.select(0, &read(i, 0, SizeHint::default()), replicas, &Blind))).collect()
    }

    #[test]
    fn local_replicas_in_turn_remote_only_when_no_local_is_up() {
        // coordinator 1 sits in rack 1 of 2: odd nodes are local
        let mut s = RackAware::new(&RackAwareConfig { racks: 2 }, &SelectorEnv { coordinator: 1, ..env(6) });
        assert_eq!(picks(&mut s, &[1, 2, 3], 4), [1, 3, 1, 3]);
        assert_eq!(picks(&mut s, &[2, 3, 4], 2), [3, 3], "one local replica takes every read");
        assert_eq!(picks(&mut s, &[0, 2, 4], 3), [0, 2, 4], "no local replica up: all in turn");
    }

    #[test]
    fn one_rack_is_round_robin() {
        let mut s = RackAware::new(&RackAwareConfig::default(), &env(6));
        assert_eq!(picks(&mut s, &[1, 2, 3], 4), [1, 2, 3, 1]);
    }
}
