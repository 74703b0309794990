//! `slow-replica-avoidance`: the default replica ordering of the Apache Cassandra Java driver
//! (4.x `DefaultLoadBalancingPolicy`, "slow replica avoidance", on by default), as a baseline
//! that production clients actually run.
//!
//! The replicas are shuffled. With three or more, a replica is **unhealthy** when this
//! coordinator has at least [`BUSY_IN_FLIGHT`] requests in flight there *and* it answered fewer
//! than two of them in the last [`RESPONSE_WINDOW`] (the older of its last two answers is older
//! than that, or it has answered fewer than two ever). When some but fewer than half of the
//! replicas are unhealthy, they move to the back, in order. Then, of the first two, the one with
//! more requests in flight goes second (a power of two choices on in-flight counts). The first
//! replica is the choice.
//!
//! **Choices:** the driver also sends a replica that came up less than a minute ago to the back
//! three times in four; no node-up event reaches a selector, so that rule is left out. Every
//! answer counts as a response (the driver leaves out its own client-side timeouts, which the
//! coordinator core reports as failures like any other).

use super::{Decision, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::Response;
use crate::model::{NodeId, RequestView};
use crate::node_map::{InFlight, NodeMap};
use crate::time::Nanos;
use super::registry::{Needs, Registration, no_tunables};

/// In-flight requests at which a replica counts as busy (the Java driver's threshold).
pub const BUSY_IN_FLIGHT: u32 = 10;

/// Window in which a busy replica must have answered twice to stay healthy (200 ms).
pub const RESPONSE_WINDOW: Nanos = 200_000_000;

/// `slow-replica-avoidance` selector.
pub struct SlowReplicaAvoidance {
    in_flight: InFlight,
    /// Per replica, the times of its last two answers (older first).
    answers: NodeMap<[Option<Nanos>; 2]>,
    rng: Rng,
    order: Vec<NodeId>,
}

impl SlowReplicaAvoidance {
    /// Build for one coordinator.
    pub fn new(env: &SelectorEnv) -> Self {
        SlowReplicaAvoidance {
            in_flight: InFlight::default(),
            answers: NodeMap::new(),
            rng: Rng::new(env.seed, 0x534c_4f57 + env.coordinator as u64),
            order: Vec::new(),
        }
    }

    /// Busy, and fewer than two answers within the window.
    fn unhealthy(&self, now: Nanos, node: NodeId) -> bool {
        let answered_twice_lately = self
            .answers
            .get(node)
            .and_then(|[older, _]| *older)
            .is_some_and(|t| now.saturating_sub(t) < RESPONSE_WINDOW);
        self.in_flight.count(node) >= BUSY_IN_FLIGHT && !answered_twice_lately
    }
}

impl ReplicaSelector for SlowReplicaAvoidance {
    fn select(&mut self, now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        assert!(!replicas.is_empty(), "a read has at least one replica");
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend_from_slice(replicas);
        for i in (1..order.len()).rev() {
            let j = self.rng.below(i + 1);
            order.swap(i, j);
        }
        let mut partitioned = false;
        if order.len() > 2 {
            let unhealthy = order.iter().filter(|&&r| self.unhealthy(now, r)).count();
            if unhealthy > 0 && 2 * unhealthy < order.len() {
                // a stable partition: healthy replicas first, each group in shuffled order
                order.sort_by_key(|&r| self.unhealthy(now, r));
                partitioned = true;
                debug_assert!(!self.unhealthy(now, order[0]) && !self.unhealthy(now, order[1]), "a healthy majority leads");
            }
            if self.in_flight.count(order[0]) > self.in_flight.count(order[1]) {
                order.swap(0, 1);
            }
        }
        let chosen = order[0];
        debug_assert!(!partitioned || !self.unhealthy(now, chosen), "an unhealthy replica is avoided while most are healthy");
        self.order = order;
        Decision::to(chosen)
    }

    fn on_sent(&mut self, _now: Nanos, _req: &RequestView, replica: NodeId) {
        self.in_flight.sent(replica);
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        self.in_flight.answered(resp.replica);
        let last = self.answers.get_or_insert_with(resp.replica, || [None, None]);
        *last = [last[1], Some(now)];
    }
}


/// `slow-replica-avoidance`: slow replica avoidance (ScyllaDB drivers).
pub const REGISTRATION: Registration = Registration {
    name: "slow-replica-avoidance",
    source: "slow replica avoidance (ScyllaDB drivers)",
    needs: Needs::NOTHING,
    build: |_cfg, env| Box::new(SlowReplicaAvoidance::new(env)),
    validate: no_tunables,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::Feedback;
    use crate::model::Op;
    use crate::selector::Blind;
    use crate::time::from_ms;

    fn env() -> SelectorEnv {
        SelectorEnv { coordinator: 0, coordinators: 1, servers: 3, replication: 3, workers: 4, seed: 9 }
    }

    fn view(id: u64) -> RequestView {
        RequestView { id, key: id, op: Op::Read, release: 0, coordinator: 0, hint: Default::default() }
    }

    fn answer(s: &mut SlowReplicaAvoidance, now: Nanos, replica: NodeId) {
        let resp =
            Response { request: 0, replica, sent_at: 0, large: false, feedback: &Feedback::default(), fresh: true };
        s.on_response(now, &resp);
    }

    fn pick(s: &mut SlowReplicaAvoidance, now: Nanos, id: u64) -> NodeId {
        match s.select(now, &view(id), &[0, 1, 2], &Blind) {
            Decision::Send { replica, .. } => replica,
            Decision::Wait { .. } => panic!("never waits"),
        }
    }

    #[test]
    fn idle_replicas_are_chosen_uniformly() {
        let mut s = SlowReplicaAvoidance::new(&env());
        let mut counts = [0u32; 3];
        for id in 0..3000 {
            counts[pick(&mut s, 0, id) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (800..1200).contains(&c)), "{counts:?}");
    }

    #[test]
    fn a_busy_silent_replica_is_avoided_and_a_busy_answering_one_is_not() {
        let mut s = SlowReplicaAvoidance::new(&env());
        for id in 0..BUSY_IN_FLIGHT as u64 {
            s.on_sent(0, &view(id), 2);
        }
        let now = from_ms(1000.0);
        assert!((0..300).all(|id| pick(&mut s, now, id) != 2), "unhealthy replica 2 never comes first");
        // two answers within the window make it healthy again (still busy: p2c mostly avoids it)
        answer(&mut s, now - from_ms(50.0), 2);
        answer(&mut s, now - from_ms(10.0), 2);
        s.on_sent(now, &view(0), 2);
        s.on_sent(now, &view(1), 2);
        assert!(!s.unhealthy(now, 2));
        assert!((0..300).all(|id| pick(&mut s, now, id) != 2), "p2c on in-flight: 2 loses to either idle replica");
    }

    #[test]
    fn with_two_replicas_only_the_shuffle_applies() {
        let mut s = SlowReplicaAvoidance::new(&env());
        for id in 0..20 {
            s.on_sent(0, &view(id), 1);
        }
        let picks: Vec<NodeId> = (0..200)
            .map(|id| match s.select(from_ms(1000.0), &view(id), &[0, 1], &Blind) {
                Decision::Send { replica, .. } => replica,
                Decision::Wait { .. } => unreachable!(),
            })
            .collect();
        assert!(picks.contains(&1) && picks.contains(&0), "the Java driver reorders only three or more replicas");
    }
}
