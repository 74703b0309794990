//! `round-robin`: per coordinator and replica set, rotate through the replicas.

use super::{Decision, ReplicaSelector, SelectorEnv, World};
use crate::model::{NodeId, RequestView};
use crate::node_map::NodeMap;
use crate::time::Nanos;
use super::registry::{Needs, Registration, no_tunables};

/// Rotation per replica set (keyed by the primary, which identifies the set on a ring).
pub struct RoundRobin {
    /// Next turn per primary this coordinator has read from.
    turns: NodeMap<usize>,
}

impl RoundRobin {
    /// A round-robin selector for one coordinator.
    pub fn new(_env: &SelectorEnv) -> Self {
        RoundRobin { turns: NodeMap::new() }
    }

    /// The rotation counter of the replica set whose primary is `primary`.
    fn turn(&mut self, primary: NodeId) -> &mut usize {
        self.turns.get_or_insert_with(primary, || 0)
    }
}

impl ReplicaSelector for RoundRobin {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        let turn = self.turn(replicas[0]);
        let choice = replicas[*turn % replicas.len()];
        *turn = turn.wrapping_add(1);
        Decision::to(choice)
    }
}


/// `round-robin`: baseline: each replica in turn.
pub const REGISTRATION: Registration = Registration {
    name: "round-robin",
    source: "baseline: each replica in turn",
    needs: Needs::NOTHING,
    build: |_cfg, env| Box::new(RoundRobin::new(env)),
    validate: no_tunables,
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::model::SizeHint;

    #[test]
    fn rotates_per_replica_set() {
        let mut s = RoundRobin::new(&env(5));
        let h = SizeHint::default();
        let picks: Vec<_> =
            (0..4).map(|i| replica_of(s.select(0, &read(i, 0, h), &[1, 2, 3], &super::super::Blind))).collect();
        assert_eq!(picks, [1, 2, 3, 1]);
        assert_eq!(replica_of(s.select(0, &read(9, 0, h), &[4, 0, 1], &super::super::Blind)), 4);
        assert_eq!(replica_of(s.select(0, &read(10, 0, h), &[1, 2, 3], &super::super::Blind)), 2);
        // ids beyond the table (a peer's in the store) rotate too
        let big = NodeId::MAX;
        let picks: Vec<_> =
            (0..3).map(|i| replica_of(s.select(0, &read(i, 0, h), &[big, 2, 9], &super::super::Blind))).collect();
        assert_eq!(picks, [big, 2, 9]);
    }
}
