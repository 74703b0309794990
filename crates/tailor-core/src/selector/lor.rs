//! `lor`: least outstanding requests, counting only this coordinator's own in-flight requests.

use super::{argmin_random_ties, Decision, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::Response;
use crate::model::{NodeId, RequestView};
use crate::node_map::InFlight;
use crate::time::Nanos;
use super::registry::{Needs, Registration, no_tunables};

/// Fewest outstanding requests from this coordinator; ties broken at random.
pub struct Lor {
    /// In-flight requests per server this coordinator has sent to.
    outstanding: InFlight,
    rng: Rng,
}

impl Lor {
    /// A LOR selector for one coordinator.
    pub fn new(env: &SelectorEnv) -> Self {
        Lor { outstanding: InFlight::default(), rng: Rng::new(env.seed, 0x004c_4f52 + env.coordinator as u64) }
    }

    /// Requests this coordinator has in flight at `replica`.
    pub fn outstanding(&self, replica: NodeId) -> u32 {
        self.outstanding.count(replica)
    }
}

impl ReplicaSelector for Lor {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        let out = &self.outstanding;
        let i =
            argmin_random_ties(replicas, &mut self.rng, |&r| out.count(r) as f64).expect("replica set is never empty");
        debug_assert!(replicas.iter().all(|&r| out.count(r) >= out.count(replicas[i])), "the least loaded is chosen");
        Decision::to(replicas[i])
    }

    fn on_sent(&mut self, _now: Nanos, _req: &RequestView, replica: NodeId) {
        self.outstanding.sent(replica);
    }

    fn on_response(&mut self, _now: Nanos, resp: &Response) {
        self.outstanding.answered(resp.replica);
    }
}


/// `lor`: least outstanding requests (C3 §2, as in Riak and Cassandra clients).
pub const REGISTRATION: Registration = Registration {
    name: "lor",
    source: "least outstanding requests (C3 §2, as in Riak and Cassandra clients)",
    needs: Needs::NOTHING,
    build: |_cfg, env| Box::new(Lor::new(env)),
    validate: no_tunables,
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::facts::Feedback;
    use crate::model::SizeHint;

    #[test]
    fn picks_fewest_outstanding() {
        let mut s = Lor::new(&env(5));
        let h = SizeHint::default();
        let w = &super::super::Blind;
        let a = read(1, 0, h);
        s.on_sent(0, &a, 1);
        s.on_sent(0, &a, 1);
        s.on_sent(0, &a, 2);
        assert_eq!(replica_of(s.select(0, &read(2, 0, h), &[1, 2, 3], w)), 3);
        s.on_sent(0, &a, 3);
        s.on_sent(0, &a, 3);
        assert_eq!(replica_of(s.select(0, &read(3, 0, h), &[1, 2, 3], w)), 2);
        s.on_response(1, &response(1, 1, 0, false, Feedback::default()));
        s.on_response(1, &response(1, 1, 0, false, Feedback::default()));
        assert_eq!(replica_of(s.select(0, &read(4, 0, h), &[1, 2, 3], w)), 1);
    }
}
