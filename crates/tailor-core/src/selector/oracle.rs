//! `oracle`: C3's "ORA" yardstick: the replica with the smallest true `(q_s + 1) / mu_s`, read from
//! the simulator's omniscient [`World`] (`q_s` = requests waiting or running at `s`, `mu_s` its
//! current service rate per worker); ties at random. A server whose rate is not positive is never
//! preferred over one that serves.
//!
//! **Choice:** without a world (the store, or any replica lacking either quantity) it falls back to
//! LOR on this coordinator's own outstanding counts, which it always tracks.

use super::{argmin_random_ties, Decision, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::Response;
use crate::model::{NodeId, RequestView};
use crate::node_map::InFlight;
use crate::time::Nanos;
use super::registry::{Needs, Registration, no_tunables};

/// `oracle` selector.
pub struct Oracle {
    /// In-flight requests per server this coordinator has sent to.
    outstanding: InFlight,
    rng: Rng,
}

impl Oracle {
    /// Build for one coordinator.
    pub fn new(env: &SelectorEnv) -> Self {
        Oracle { outstanding: InFlight::default(), rng: Rng::new(env.seed, 0x004f_5241 + env.coordinator as u64) }
    }

    /// Requests this coordinator has in flight at `replica`.
    pub fn outstanding(&self, replica: NodeId) -> u32 {
        self.outstanding.count(replica)
    }
}

/// The true expected wait of a new request at `node`, if the world knows it.
fn true_cost(world: &dyn World, node: NodeId) -> Option<f64> {
    let q = world.queue_len(node)?;
    let mu = world.service_rate(node)?;
    debug_assert!(!mu.is_nan() && mu >= 0.0, "a service rate {mu} of {node:?}");
    let cost = if mu > 0.0 { (f64::from(q) + 1.0) / mu } else { f64::INFINITY };
    debug_assert!(cost > 0.0, "a request costs time even on an empty server: {cost}");
    Some(cost)
}

impl ReplicaSelector for Oracle {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], world: &dyn World) -> Decision {
        let omniscient = replicas.iter().all(|&r| true_cost(world, r).is_some());
        let pick = if omniscient {
            argmin_random_ties(replicas, &mut self.rng, |&r| true_cost(world, r).unwrap_or(f64::INFINITY))
        } else {
            let out = &self.outstanding;
            argmin_random_ties(replicas, &mut self.rng, |&r| f64::from(out.count(r)))
        };
        match pick {
            Some(i) => Decision::to(replicas[i]),
            None => Decision::Wait { retry_at: None },
        }
    }

    fn on_sent(&mut self, _now: Nanos, _req: &RequestView, replica: NodeId) {
        self.outstanding.sent(replica);
    }

    fn on_response(&mut self, _now: Nanos, resp: &Response) {
        self.outstanding.answered(resp.replica);
    }
}


/// `oracle`: omniscient reference: true queues and rates.
pub const REGISTRATION: Registration = Registration {
    name: "oracle",
    source: "omniscient reference: true queues and rates",
    needs: Needs { world: true, ..Needs::NOTHING },
    build: |_cfg, env| Box::new(Oracle::new(env)),
    validate: no_tunables,
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::facts::Feedback;
    use crate::model::SizeHint;

    /// A world with true queue lengths and per-worker rates.
    struct Truth(Vec<(u32, f64)>);
    impl World for Truth {
        fn queue_len(&self, node: NodeId) -> Option<u32> {
            self.0.get(node as usize).map(|s| s.0)
        }
        fn service_rate(&self, node: NodeId) -> Option<f64> {
            self.0.get(node as usize).map(|s| s.1)
        }
    }

    #[test]
    fn picks_min_true_queue_over_rate() {
        let mut s = Oracle::new(&env(4));
        let h = SizeHint::default();
        // (q + 1) / mu: 0 -> 3/100, 1 -> 5/250 = 2/100, 2 -> 1/40 = 2.5/100, 3 stalled.
        let w = Truth(vec![(2, 100.0), (4, 250.0), (0, 40.0), (0, 0.0)]);
        assert_eq!(replica_of(s.select(0, &read(1, 0, h), &[0, 1, 2], &w)), 1);
        assert_eq!(replica_of(s.select(0, &read(2, 0, h), &[3, 0, 2], &w)), 2);
        // Own outstanding counts do not matter when the world is known.
        s.on_sent(0, &read(3, 0, h), 1);
        assert_eq!(replica_of(s.select(0, &read(4, 0, h), &[0, 1, 2], &w)), 1);
    }

    #[test]
    fn falls_back_to_lor_without_a_world() {
        let mut s = Oracle::new(&env(4));
        let h = SizeHint::default();
        for r in [0, 0, 1, 2, 2] {
            s.on_sent(0, &read(1, 0, h), r);
        }
        assert_eq!(replica_of(s.select(0, &read(2, 0, h), &[0, 1, 2], &Blind)), 1);
        s.on_response(1, &response(1, 0, 0, false, Feedback::default()));
        s.on_response(1, &response(1, 0, 0, false, Feedback::default()));
        assert_eq!(s.outstanding(0), 0);
        assert_eq!(replica_of(s.select(1, &read(3, 1, h), &[0, 1, 2], &Blind)), 0);
        // A world that knows only part of the set is not used.
        let partial = Truth(vec![(9, 1.0)]);
        assert_eq!(replica_of(s.select(1, &read(4, 1, h), &[0, 1, 2], &partial)), 0);
    }
}
