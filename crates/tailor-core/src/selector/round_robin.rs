//! `round-robin`: per coordinator and replica set, rotate through the replicas.

use super::c3_score::node_slot;
use super::{Decision, ReplicaSelector, SelectorEnv, World};
use crate::model::{NodeId, RequestView};
use crate::time::Nanos;
use std::collections::HashMap;

/// Rotation per replica set (keyed by the primary, which identifies the set on a ring).
pub struct RoundRobin {
    /// Next turn per primary id: a vector indexed by the id, since `select` runs for every read
    /// and a hashed lookup cost more than the rest of the choice.
    dense: Vec<usize>,
    /// Next turn for primary ids too large to index (only a peer's absurd id in the store).
    sparse: HashMap<NodeId, usize>,
}

impl RoundRobin {
    /// A round-robin selector for one coordinator.
    pub fn new(env: &SelectorEnv) -> Self {
        RoundRobin { dense: vec![0; env.servers.min(super::c3_score::MAX_NODES)], sparse: HashMap::new() }
    }

    /// The rotation counter of the replica set whose primary is `primary`.
    fn turn(&mut self, primary: NodeId) -> &mut usize {
        match node_slot(&mut self.dense, primary, || 0) {
            Some(turn) => turn,
            None => self.sparse.entry(primary).or_insert(0),
        }
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
