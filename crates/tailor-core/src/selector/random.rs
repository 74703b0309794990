//! `random`: uniform choice among the replicas; the baseline every comparison starts from.

use super::{Decision, ReplicaSelector, Rng, SelectorEnv, World};
use crate::model::{NodeId, RequestView};
use crate::time::Nanos;
use super::registry::{no_tunables, Needs, Registration};

/// Uniform random replica selection.
pub struct Random {
    rng: Rng,
}

impl Random {
    /// A random selector for one coordinator.
    pub fn new(env: &SelectorEnv) -> Self {
        Random { rng: Rng::new(env.seed, 0x5241_4e44 + env.coordinator as u64) }
    }
}

impl ReplicaSelector for Random {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        Decision::to(replicas[self.rng.below(replicas.len())])
    }
}


/// `random`: baseline: uniform choice.
pub const REGISTRATION: Registration = Registration {
    name: "random",
    source: "baseline: uniform choice",
    needs: Needs::NOTHING,
    build: |_cfg, env| Box::new(Random::new(env)),
    validate: no_tunables,
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::model::SizeHint;

    #[test]
    fn draws_every_replica_about_equally() {
        let mut s = Random::new(&env(5));
        let mut counts = [0; 5];
        for i in 0..9_000 {
            counts[replica_of(s.select(0, &read(i, 0, SizeHint::default()), &[1, 2, 3], &super::super::Blind))
                as usize] += 1;
        }
        assert_eq!(counts[0] + counts[4], 0);
        assert!(counts[1..4].iter().all(|&c| (2_700..3_300).contains(&c)), "{counts:?}");
    }
}
