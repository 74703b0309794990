//! `envoy-least-request`: Envoy's `LEAST_REQUEST` load balancer with equal host weights, the
//! default of the most deployed service proxy, as a baseline (Envoy's load-balancer docs,
//! "Weighted least request"; `choice_count` default 2).
//!
//! Rule: draw `choice_count` replicas uniformly **with replacement** (Envoy draws an index per
//! choice) and keep the one with the fewest requests this coordinator has active there; a later
//! draw replaces the kept one only when it has strictly fewer, so ties go to the earliest draw.
//! Active requests count this coordinator's own (an Envoy instance's `rq_active`).
//!
//! Not modelled: `active_request_bias` applies only when host weights differ (every replica
//! weighs the same here), and Envoy's slow start; `full_scan_mode` is `choice_count >= 3` with a
//! full scan (set `choice_count` to the replica count for a near-equivalent).

use super::registry::{tunable, Needs, Registration};
use super::{Decision, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::Response;
use crate::model::{NodeId, RequestView};
use crate::node_map::InFlight;
use crate::time::Nanos;
use serde::{Deserialize, Serialize};

/// Tunables of `envoy-least-request`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnvoyLeastRequestConfig {
    /// Replicas drawn per request (Envoy's `choice_count`, default 2, at least 2).
    pub choice_count: u32,
}

impl Default for EnvoyLeastRequestConfig {
    fn default() -> Self {
        EnvoyLeastRequestConfig { choice_count: 2 }
    }
}

impl EnvoyLeastRequestConfig {
    /// Reject values the strategy cannot run with, naming the field.
    pub fn validate(&self) -> Result<(), super::c3::InvalidConfig> {
        super::c3::check("choice_count", f64::from(self.choice_count), ">= 2 (as Envoy requires)", |v| v >= 2.0)
    }
}

/// Envoy's least-request choice for one coordinator.
pub struct EnvoyLeastRequest {
    choices: u32,
    active: InFlight,
    rng: Rng,
}

impl EnvoyLeastRequest {
    /// A selector for one coordinator.
    pub fn new(cfg: &EnvoyLeastRequestConfig, env: &SelectorEnv) -> Self {
        EnvoyLeastRequest {
            choices: cfg.choice_count.max(2),
            active: InFlight::default(),
            rng: Rng::new(env.seed, 0x454E_564F + env.coordinator as u64),
        }
    }
}

impl ReplicaSelector for EnvoyLeastRequest {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        debug_assert!(self.choices >= 2, "Envoy draws at least two, not {}", self.choices);
        let first = replicas[self.rng.below(replicas.len())];
        let mut kept = first;
        for _ in 1..self.choices {
            let drawn = replicas[self.rng.below(replicas.len())];
            if self.active.count(drawn) < self.active.count(kept) {
                kept = drawn;
            }
        }
        debug_assert!(self.active.count(kept) <= self.active.count(first), "a draw is kept only when less loaded");
        Decision::to(kept)
    }

    fn on_sent(&mut self, _now: Nanos, _req: &RequestView, replica: NodeId) {
        self.active.sent(replica);
    }

    fn on_response(&mut self, _now: Nanos, resp: &Response) {
        self.active.answered(resp.replica);
    }
}

/// `envoy-least-request`: Envoy's least request, power of `choice_count` choices.
pub const REGISTRATION: Registration = Registration {
    name: "envoy-least-request",
    source: "Envoy LEAST_REQUEST load balancer (power of choice_count choices on active requests)",
    needs: Needs::NOTHING,
    build: |cfg, env| Box::new(EnvoyLeastRequest::new(&cfg.envoy_least_request, env)),
    validate: |cfg| cfg.envoy_least_request.validate().map_err(|e| tunable("envoy_least_request", e)),
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::facts::Feedback;
    use crate::model::SizeHint;

    #[test]
    fn of_two_draws_the_one_with_fewer_active_requests_wins() {
        let mut s = EnvoyLeastRequest::new(&EnvoyLeastRequestConfig::default(), &env(3));
        let a = read(1, 0, SizeHint::default());
        for _ in 0..5 {
            s.on_sent(0, &a, 1);
        }
        // replica 1 is busy: it wins only when both draws pick it, 1 in 4
        let picks = (0..4_000).filter(|&i| replica_of(s.select(0, &read(i, 0, SizeHint::default()), &[1, 2], &Blind)) == 1);
        let share = picks.count() as f64 / 4_000.0;
        assert!((0.22..0.28).contains(&share), "{share}");
        for _ in 0..5 {
            s.on_response(1, &response(1, 1, 0, false, Feedback::default()));
        }
        assert_eq!(s.active.count(1), 0);
    }

    #[test]
    fn with_as_many_choices_as_replicas_the_idlest_is_found_more_often() {
        let cfg = EnvoyLeastRequestConfig { choice_count: 8 };
        let mut s = EnvoyLeastRequest::new(&cfg, &env(3));
        let a = read(1, 0, SizeHint::default());
        s.on_sent(0, &a, 1);
        s.on_sent(0, &a, 2);
        let idle = (0..1_000).filter(|&i| replica_of(s.select(0, &read(i, 0, SizeHint::default()), &[1, 2, 3], &Blind)) == 3);
        assert!(idle.count() > 950, "3 of 3 replicas missed in 8 draws: (2/3)^8 = 4 %");
        assert!(EnvoyLeastRequestConfig { choice_count: 1 }.validate().is_err());
    }
}
