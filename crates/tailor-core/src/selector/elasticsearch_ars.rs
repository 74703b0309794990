//! `elasticsearch-ars`: Elasticsearch's adaptive replica selection, C3's ranking as production
//! runs it in a search engine's coordinating node, with its documented changes (Elasticsearch's
//! `ResponseCollectorService` and the shard routing table's `rankShardsAndUpdateStats`).
//!
//! Per replica the coordinator keeps an EWMA (weight 0.3 on the newest, the first sample as is)
//! of the queue size its responses report and of the response time it measures, and the
//! replica's service time. A read goes to the replica of lowest rank
//!
//! ```text
//! rank = R - S + (1 + os * n + q)^3 * S          (times in ms)
//! ```
//!
//! with `q` the queue average truncated to a whole number, `R` the response-time average, `S`
//! the service time, `os` the searches this coordinator has outstanding there and `n` the number
//! of replicas it holds statistics for ("the number of clients", as Elasticsearch counts it).
//! What differs from C3 (`c3`):
//! - no rate limiting or backpressure: the ranking alone decides;
//! - a replica without statistics ranks first (Elasticsearch sorts them before ranked ones);
//!   replicas are shuffled before a stable sort, so ties go at random;
//! - **the non-winners' adjustment**: after each choice, every other replica with statistics is
//!   given a sample halfway between its values and the winner's (queue, response time) and its
//!   service time moves 0.3 of the way to that halfway value, so a replica that once ranked badly
//!   drifts back and is tried again (C3 relies on Cassandra's read repair for that);
//! - the winner's outstanding count is raised at once for this choice.
//!
//! **Choice:** Elasticsearch takes the node's own EWMA of task service time; Tailor's replicas
//! report each request's service time, so the coordinator averages it with the same weight 0.3.
//! Stale feedback (`fresh == false`) updates the response time, measured here, but not the
//! replica's facts.

use super::registry::{no_tunables, Fact, Needs, Registration};
use super::{Decision, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::{Ewma, Response};
use crate::model::{NodeId, RequestView};
use crate::node_map::NodeMap;
use crate::time::Nanos;

/// Weight of the newest sample in every average (Elasticsearch's `ALPHA`).
const ALPHA: f64 = 0.3;

/// Nanoseconds per millisecond: Elasticsearch ranks in milliseconds.
const NS_PER_MS: f64 = 1e6;

/// What the coordinator knows of one replica.
#[derive(Clone, Copy, Debug)]
struct Stats {
    queue: Ewma,
    response: Ewma,
    service: Ewma,
    outstanding: u32,
}

impl Default for Stats {
    fn default() -> Self {
        Stats { queue: Ewma::new(ALPHA), response: Ewma::new(ALPHA), service: Ewma::new(ALPHA), outstanding: 0 }
    }
}

impl Stats {
    /// Whether the replica has statistics (Elasticsearch keeps them from its first response).
    fn known(&self) -> bool {
        self.response.get().is_some()
    }

    /// Queue average as Elasticsearch reads it: truncated to a whole number.
    fn queue_size(&self) -> f64 {
        self.queue.get_or(0.0).trunc()
    }

    /// The rank, with `clients` replicas known (see the module doc).
    fn rank(&self, clients: usize) -> f64 {
        let r = self.response.get_or(0.0) / NS_PER_MS;
        let s = self.service.get_or(0.0) / NS_PER_MS;
        let q_hat = 1.0 + f64::from(self.outstanding) * clients as f64 + self.queue_size();
        debug_assert!(q_hat >= 1.0 && r >= 0.0 && s >= 0.0, "rank terms: q̂ {q_hat}, response {r}, service {s}");
        let rank = r - s + q_hat.powi(3) * s;
        debug_assert!(!rank.is_nan(), "a rank orders replicas: {self:?}");
        rank
    }
}

/// Elasticsearch's adaptive replica selection for one coordinator.
pub struct ElasticsearchArs {
    stats: NodeMap<Stats>,
    /// Replicas with statistics (`n`): counted as each gets its first response, so a rank never
    /// walks the map.
    known: usize,
    order: Vec<NodeId>,
    rng: Rng,
}

impl ElasticsearchArs {
    /// A selector for one coordinator.
    pub fn new(env: &SelectorEnv) -> Self {
        ElasticsearchArs { stats: NodeMap::new(), known: 0, order: Vec::new(), rng: Rng::new(env.seed, 0x4553_4152 + env.coordinator as u64) }
    }

    /// The rank of `replica` now (`None`: no statistics yet, ranked first).
    pub fn rank(&self, replica: NodeId) -> Option<f64> {
        self.stats.get(replica).filter(|s| s.known()).map(|s| s.rank(self.known))
    }

    /// Move every other known replica's statistics halfway towards the winner's.
    fn adjust_others(&mut self, winner: NodeId, replicas: &[NodeId]) {
        let Some(best) = self.stats.get(winner).filter(|s| s.known()).copied() else { return };
        for &r in replicas.iter().filter(|&&r| r != winner) {
            let Some(s) = self.stats.get_mut(r).filter(|s| s.known()) else { continue };
            let queue = ((best.queue_size() + s.queue_size()) / 2.0).trunc();
            let response = ((best.response.get_or(0.0) + s.response.get_or(0.0)) / 2.0).trunc();
            let halfway = (best.service.get_or(0.0) + s.service.get_or(0.0)) / 2.0;
            let mut service = Ewma::with_initial(ALPHA, s.service.get_or(0.0));
            service.update(halfway);
            s.queue.update(queue);
            s.response.update(response);
            s.service = Ewma::with_initial(ALPHA, service.get_or(0.0).trunc());
            debug_assert!(
                [s.queue.get_or(0.0), s.response.get_or(0.0), s.service.get_or(0.0)].iter().all(|v| *v >= 0.0),
                "an adjustment moves averages halfway between non-negative ones: {s:?}"
            );
        }
    }
}

impl ReplicaSelector for ElasticsearchArs {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend_from_slice(replicas);
        for i in (1..order.len()).rev() {
            order.swap(i, self.rng.below(i + 1));
        }
        // the first minimum after the shuffle: ties go at random; unknown replicas first
        let winner = (order.iter().copied())
            .min_by(|&a, &b| match (self.rank(a), self.rank(b)) {
                (None, None) => std::cmp::Ordering::Equal,
                (None, Some(_)) => std::cmp::Ordering::Less,
                (Some(_), None) => std::cmp::Ordering::Greater,
                (Some(x), Some(y)) => x.total_cmp(&y),
            })
            .expect("replica set is never empty");
        debug_assert!(replicas.contains(&winner), "the winner {winner:?} is one of the offered replicas");
        self.order = order;
        self.adjust_others(winner, replicas);
        Decision::to(winner)
    }

    fn on_sent(&mut self, _now: Nanos, _req: &RequestView, replica: NodeId) {
        let s = self.stats.get_or_insert_with(replica, Stats::default);
        s.outstanding = s.outstanding.saturating_add(1);
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        let s = self.stats.get_or_insert_with(resp.replica, Stats::default);
        s.outstanding = s.outstanding.saturating_sub(1);
        let first = !s.known();
        s.response.update(now.saturating_sub(resp.sent_at) as f64);
        if resp.fresh {
            s.queue.update(f64::from(resp.feedback.queue_len));
            s.service.update(resp.feedback.service_time as f64);
        }
        debug_assert!(s.known(), "a response makes its server known");
        self.known += usize::from(first);
        debug_assert_eq!(self.known, self.stats.values().filter(|s| s.known()).count(), "the count is the map's");
    }
}

/// `elasticsearch-ars`: Elasticsearch's adaptive replica selection.
pub const REGISTRATION: Registration = Registration {
    name: "elasticsearch-ars",
    source: "Elasticsearch adaptive replica selection (C3's rank, no rate limiter, non-winners adjusted)",
    needs: Needs { facts: &[Fact::QueueLen, Fact::ServiceTime], ..Needs::NOTHING },
    build: |_cfg, env| Box::new(ElasticsearchArs::new(env)),
    validate: no_tunables,
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::facts::Feedback;
    use crate::model::SizeHint;
    use crate::time::MS;

    fn answer(s: &mut ElasticsearchArs, replica: NodeId, at: Nanos, queue: u32, service: Nanos) {
        s.on_sent(0, &read(1, 0, SizeHint::default()), replica);
        let fb = Feedback { queue_len: queue, service_time: service, ..Feedback::default() };
        s.on_response(at, &response(1, replica, 0, false, fb));
    }

    #[test]
    fn the_rank_is_c3s_with_the_queue_truncated_and_n_replicas_known() {
        let mut s = ElasticsearchArs::new(&env(3));
        answer(&mut s, 1, 10 * MS, 4, 2 * MS);
        answer(&mut s, 2, 4 * MS, 0, MS);
        // replica 1: R 10, S 2, q 4, os 0: 10 - 2 + 5^3 * 2 = 258
        assert_eq!(s.rank(1), Some(258.0));
        s.on_sent(0, &read(2, 0, SizeHint::default()), 2);
        // replica 2: R 4, S 1, q 0, os 1 with n = 2 known: 4 - 1 + 3^3 * 1 = 30
        assert_eq!(s.rank(2), Some(30.0));
        assert_eq!(s.rank(3), None);
    }

    #[test]
    fn an_unknown_replica_goes_first_then_the_lowest_rank() {
        let mut s = ElasticsearchArs::new(&env(3));
        answer(&mut s, 1, 10 * MS, 4, 2 * MS);
        answer(&mut s, 2, 4 * MS, 0, MS);
        assert_eq!(replica_of(s.select(0, &read(3, 0, SizeHint::default()), &[1, 2, 3], &Blind)), 3);
        assert_eq!(replica_of(s.select(0, &read(4, 0, SizeHint::default()), &[1, 2], &Blind)), 2);
    }

    #[test]
    fn a_losing_replica_drifts_back_towards_the_winner() {
        let mut s = ElasticsearchArs::new(&env(3));
        answer(&mut s, 1, 10 * MS, 4, 2 * MS);
        answer(&mut s, 2, 4 * MS, 0, MS);
        let before = s.rank(1).unwrap();
        s.select(0, &read(3, 0, SizeHint::default()), &[1, 2], &Blind);
        // queue (0 + 4) / 2 = 2 -> EWMA 0.3 * 2 + 0.7 * 4 = 3.4 -> 3; response 0.3 * 7 + 0.7 * 10 = 9.1;
        // service 0.3 * 1.5 + 0.7 * 2 = 1.85 ms: 9.1 - 1.85 + 4^3 * 1.85
        let after = s.rank(1).unwrap();
        assert!((after - (9.1 - 1.85 + 64.0 * 1.85)).abs() < 1e-9, "{after}");
        assert!(after < before);
        for i in 0..200 {
            s.select(0, &read(4 + i, 0, SizeHint::default()), &[1, 2], &Blind);
        }
        assert!(s.rank(1).unwrap() < 2.0 * s.rank(2).unwrap(), "the loser is tried again in time");
    }
}
