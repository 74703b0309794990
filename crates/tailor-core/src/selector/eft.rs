//! `eft`: Earliest Finish Time (Euro-Par 2021): send to the replica whose queue empties first.
//!
//! In the simulator [`World::finish_time`] is `now + pending work / P` from the replicas' nominal
//! estimates (exact for one worker in the size model; a fluid approximation with `P` workers,
//! exponential service, fluctuation or a cache); the selector takes the replica with the
//! smallest `max(finish_time, now)` (an idle server's finish time is `now`), ties at random.
//!
//! In the store (any replica without a world finish time) it estimates it (the project's
//! choice, docs/strategies.md). Per replica it keeps the newest fresh `Feedback::pending_work` (work queued or
//! running there, in ns, from the replica's size oracle), the coordinator time `received_at` when
//! it arrived, and `sent_since`, the estimated work of the requests this coordinator sent there
//! since. With `P` workers per server:
//!
//! ```text
//! finish = max(now, received_at + pending / P) + sent_since / P
//! ```
//!
//! The pending work drains at `P` ns per ns from the moment the feedback arrived; what this
//! coordinator sent afterwards is queued behind it. A replica never heard from counts as idle
//! (`pending = 0`). A sent request's work is its `hint.service`; when the engine has no size
//! model (`None`), it is the running mean service time seen in this coordinator's feedback
//! (EWMA, weight 0.1 on the newest sample; 0 before any) **(choice)**. Requests sent before the
//! feedback arrived but still in flight when it was measured are not counted (the estimate is
//! optimistic by one network delay's worth of sends); feedback the engine marks stale is ignored.

use super::{argmin_random_ties, Decision, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::{Ewma, Response};
use crate::model::{NodeId, RequestView};
use crate::node_map::NodeMap;
use crate::time::Nanos;
use super::registry::{Fact, Needs, Registration, no_tunables};

/// The store-side estimate's state for one replica.
#[derive(Clone, Copy, Debug, Default)]
struct Backlog {
    /// Pending work from the newest fresh feedback, ns.
    pending: Nanos,
    /// Coordinator time the feedback arrived.
    received_at: Nanos,
    /// Estimated work this coordinator sent since then, ns.
    sent_since: Nanos,
}

/// `eft` selector.
pub struct Eft {
    /// Per server this coordinator has sent to or heard from.
    backlogs: NodeMap<Backlog>,
    workers: u64,
    mean_service: Ewma,
    rng: Rng,
}

impl Eft {
    /// Build for one coordinator.
    pub fn new(env: &SelectorEnv) -> Self {
        Eft {
            backlogs: NodeMap::new(),
            workers: env.workers.max(1) as u64,
            mean_service: Ewma::new(0.1),
            rng: Rng::new(env.seed, 0x0045_4654 + env.coordinator as u64),
        }
    }

    /// The store-side estimate of when `replica`'s queue empties, as seen at `now`.
    pub fn estimated_finish(&self, now: Nanos, replica: NodeId) -> Nanos {
        let b = self.backlogs.get(replica).copied().unwrap_or_default();
        let drained = b.received_at.saturating_add(b.pending / self.workers);
        now.max(drained).saturating_add(b.sent_since / self.workers)
    }

    /// Work a sent request adds to its replica, ns.
    fn work_of(&self, req: &RequestView) -> Nanos {
        req.hint.service.unwrap_or_else(|| self.mean_service.get_or(0.0).round() as Nanos)
    }

    /// The EFT choice among the replicas for which `allowed` holds (callers ensure one does).
    pub(crate) fn pick(
        &mut self,
        now: Nanos,
        replicas: &[NodeId],
        world: &dyn World,
        allowed: impl Fn(NodeId) -> bool,
    ) -> Decision {
        let exact = replicas.iter().all(|&r| world.finish_time(r).is_some());
        let this = &*self;
        let finish = |r: NodeId| -> f64 {
            if !allowed(r) {
                return f64::INFINITY;
            }
            let t = if exact { world.finish_time(r).unwrap_or(now).max(now) } else { this.estimated_finish(now, r) };
            t as f64
        };
        let mut rng = self.rng.clone();
        let pick = argmin_random_ties(replicas, &mut rng, |&r| finish(r));
        debug_assert!(
            pick.is_none_or(|i| allowed(replicas[i]) || !replicas.iter().any(|&r| allowed(r))),
            "a replica ruled out is picked only when every one is"
        );
        debug_assert!(pick.is_none_or(|i| finish(replicas[i]) >= now as f64), "the earliest finish is not before now");
        self.rng = rng;
        match pick {
            Some(i) => Decision::to(replicas[i]),
            None => Decision::Wait { retry_at: None },
        }
    }
}

impl ReplicaSelector for Eft {
    fn select(&mut self, now: Nanos, _req: &RequestView, replicas: &[NodeId], world: &dyn World) -> Decision {
        self.pick(now, replicas, world, |_| true)
    }

    fn on_sent(&mut self, _now: Nanos, req: &RequestView, replica: NodeId) {
        let work = self.work_of(req);
        let b = self.backlogs.get_or_insert_with(replica, Backlog::default);
        b.sent_since = b.sent_since.saturating_add(work);
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        if !resp.fresh {
            return;
        }
        let mean = self.mean_service.update(resp.feedback.service_time as f64);
        debug_assert!(mean.is_finite() && mean >= 0.0, "a mean service time {mean}");
        let b = Backlog { pending: resp.feedback.pending_work, received_at: now, sent_since: 0 };
        *self.backlogs.get_or_insert_with(resp.replica, Backlog::default) = b;
    }
}


/// `eft`: EFT (Euro-Par 2021).
pub const REGISTRATION: Registration = Registration {
    name: "eft",
    source: "EFT (Euro-Par 2021)",
    needs: Needs { facts: &[Fact::PendingWork, Fact::ServiceTime], size_oracle: true, ..Needs::NOTHING },
    build: |_cfg, env| Box::new(Eft::new(env)),
    validate: no_tunables,
};

#[cfg(test)]
pub(crate) mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::facts::Feedback;
    use crate::model::SizeHint;
    use crate::time::MS;

    /// A simulator world with fixed finish times per node.
    pub(crate) struct Finish(pub Vec<Nanos>);
    impl World for Finish {
        fn finish_time(&self, node: NodeId) -> Option<Nanos> {
            self.0.get(node as usize).copied()
        }
    }

    fn svc(ms: u64) -> SizeHint {
        SizeHint { bytes: None, service: Some(ms * MS), large: false }
    }

    #[test]
    fn picks_minimum_world_finish_time() {
        let mut s = Eft::new(&env(5));
        let w = Finish(vec![50, 30, 40, 10, 90]);
        assert_eq!(replica_of(s.select(0, &read(1, 0, svc(1)), &[0, 1, 2], &w)), 1);
        assert_eq!(replica_of(s.select(0, &read(2, 0, svc(1)), &[4, 0, 2], &w)), 2);
        // Finish times in the past all mean "idle now": ties, broken at random.
        let mut seen = [0; 5];
        for i in 0..300 {
            seen[replica_of(s.select(100, &read(i, 100, svc(1)), &[0, 1, 2], &w)) as usize] += 1;
        }
        assert!(seen[..3].iter().all(|&c| c > 60), "{seen:?}");
    }

    #[test]
    fn store_estimate_adds_sent_work() {
        let mut s = Eft::new(&env(5)); // P = 4
        let fb = |pending_ms: u64| Feedback { pending_work: pending_ms * MS, service_time: MS, ..Feedback::default() };
        s.on_response(10 * MS, &response(1, 0, 0, false, fb(40)));
        s.on_response(10 * MS, &response(2, 1, 0, false, fb(48)));
        s.on_response(10 * MS, &response(3, 2, 0, false, fb(80)));
        // finish = max(now, 10 + pending/4) + sent/4: 0 -> 20 ms, 1 -> 22 ms, 2 -> 30 ms.
        assert_eq!(s.estimated_finish(12 * MS, 0), 20 * MS);
        assert_eq!(replica_of(s.select(12 * MS, &read(4, 12 * MS, svc(12)), &[0, 1, 2], &Blind)), 0);
        s.on_sent(12 * MS, &read(4, 12 * MS, svc(12)), 0);
        // 0 now ends at 20 + 12/4 = 23 ms, after 1.
        assert_eq!(s.estimated_finish(12 * MS, 0), 23 * MS);
        assert_eq!(replica_of(s.select(12 * MS, &read(5, 12 * MS, svc(12)), &[0, 1, 2], &Blind)), 1);
        // Once the backlog has drained, only sent work counts, from now.
        assert_eq!(s.estimated_finish(40 * MS, 0), 43 * MS);
        // Fresh feedback replaces the estimate and forgets the sent work; stale feedback is ignored.
        let mut stale = response(6, 0, 0, false, fb(400));
        stale.fresh = false;
        s.on_response(13 * MS, &stale);
        assert_eq!(s.estimated_finish(13 * MS, 0), 23 * MS);
        s.on_response(14 * MS, &response(7, 0, 0, false, fb(4)));
        assert_eq!(s.estimated_finish(14 * MS, 0), 15 * MS);
        // A replica never heard from is idle.
        assert_eq!(s.estimated_finish(14 * MS, 3), 14 * MS);
    }

    #[test]
    fn without_a_size_model_sent_work_is_the_mean_feedback_service_time() {
        let mut s = Eft::new(&env(3));
        let none = SizeHint::default();
        s.on_sent(0, &read(1, 0, none), 0);
        assert_eq!(s.estimated_finish(0, 0), 0, "no feedback yet: unknown work counts as 0");
        s.on_response(0, &response(1, 1, 0, false, Feedback { service_time: 8 * MS, ..Feedback::default() }));
        s.on_sent(0, &read(2, 0, none), 2);
        assert_eq!(s.estimated_finish(0, 2), 2 * MS);
    }
}
