//! `grpc-wrr`: gRPC's client-side weighted round robin (gRFC A58, `weighted_round_robin`) with
//! per-call load reports, as a baseline.
//!
//! Rule, with A58's defaults:
//! - A report with utilization `u > 0` and rate `qps > 0` sets the replica's weight to
//!   `qps / (u + eps / qps * error_utilization_penalty)`; any other report changes nothing. The
//!   first such report since the weight was last unusable starts its `non_empty_since`; every
//!   one refreshes its `last_updated`.
//! - A weight is read as 0 once `weight_expiration_period` (3 min) has passed since
//!   `last_updated` (and `non_empty_since` restarts with the next report), and while
//!   `blackout_period` (10 s) has not passed since `non_empty_since`.
//! - Every `weight_update_period` (1 s; A58 raises shorter ones to 100 ms) the scheduler is
//!   rebuilt from the weights read then: a replica weighing 0 gets the mean of the others'; with
//!   fewer than two weights above 0 all weigh the same (plain round robin). Each replica's
//!   period is `1 / weight` and its first deadline is drawn uniformly in `[0, period]`.
//! - A pick takes the replica with the earliest deadline and adds its period to that deadline.
//!
//! **Choices (engine differences):**
//! - gRPC's scheduler rotates through every endpoint of a channel; a read here may go only to its
//!   key's replicas, so one earliest-deadline schedule covers all servers and a pick takes the
//!   earliest deadline among the read's replicas (ties: the first listed). A deadline is
//!   raised to the schedule's current time (the latest deadline picked) when it falls behind,
//!   as a replica joining gRPC's schedule starts within a period of it; otherwise a replica
//!   that reads stopped offering (down) would win every read on its return until caught up.
//! - ORCA reports the backend's own `qps`; Tailor's replicas report their `completed` counter
//!   and this selector derives the rate: over the span since the report it last derived a rate
//!   from, once that span reaches `weight_update_period` (replica clock), so a weight is
//!   updated at most once per period and from at least a period of completions. Utilization is
//!   the replica's busy worker-time over its last 100 to 200 ms ([`crate::facts::Feedback::utilization`]).
//! - Replicas report no errors: `eps` is 0 and `error_utilization_penalty` has no effect.
//! - Time is the engine's `now` (simulated time in the simulator): A58's periods are seconds
//!   and minutes, so in a run of a few simulated seconds the 10 s blackout keeps every weight
//!   unused unless the periods are scaled down (docs/strategies.md).

use super::registry::{tunable, Fact, Needs, Registration};
use super::{Decision, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::{Feedback, Response};
use crate::model::{NodeId, RequestView};
use crate::time::{from_ms, Nanos, MS, SEC};
use serde::{Deserialize, Serialize};

/// Shortest weight update period A58 accepts; shorter ones are raised to it.
const MIN_UPDATE_PERIOD: Nanos = 100 * MS;

/// Tunables of `grpc-wrr` (A58's `WeightedRoundRobinLbConfig`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GrpcWrrConfig {
    /// How long a replica must report before its weight is used, in ms (10 s).
    pub blackout_period_ms: f64,
    /// How long without a report before a weight is dropped, in ms (3 min).
    pub weight_expiration_period_ms: f64,
    /// How often the scheduler is rebuilt from the weights, in ms (1 s; at least 100 ms).
    pub weight_update_period_ms: f64,
    /// Multiplier of the error rate `eps / qps` added to utilization (1.0).
    pub error_utilization_penalty: f64,
}

impl Default for GrpcWrrConfig {
    fn default() -> Self {
        GrpcWrrConfig {
            blackout_period_ms: 10_000.0,
            weight_expiration_period_ms: 180_000.0,
            weight_update_period_ms: 1_000.0,
            error_utilization_penalty: 1.0,
        }
    }
}

impl GrpcWrrConfig {
    /// Reject values the strategy cannot run with, naming the field.
    pub fn validate(&self) -> Result<(), super::c3::InvalidConfig> {
        use super::c3::check;
        check("blackout_period_ms", self.blackout_period_ms, ">= 0", |v| v >= 0.0)?;
        check("weight_expiration_period_ms", self.weight_expiration_period_ms, "> 0", |v| v > 0.0)?;
        check("weight_update_period_ms", self.weight_update_period_ms, "> 0", |v| v > 0.0)?;
        check("error_utilization_penalty", self.error_utilization_penalty, ">= 0", |v| v >= 0.0)
    }
}

/// A58's weight of a report: `qps / (utilization + eps / qps * penalty)`, 0 (no weight) unless
/// both `qps` and `utilization` are above 0.
pub fn weight(qps: f64, eps: f64, utilization: f64, penalty: f64) -> f64 {
    debug_assert!(eps >= 0.0 && penalty >= 0.0, "errors per second {eps} and penalty {penalty} are not negative");
    if qps <= 0.0 || utilization <= 0.0 {
        return 0.0;
    }
    let w = qps / (utilization + eps / qps * penalty);
    debug_assert!(w > 0.0 && !w.is_nan(), "a reported load's weight is positive: {w}");
    w
}

/// One replica as this client sees it.
#[derive(Clone, Copy, Debug, Default)]
struct Server {
    /// The report the rate was last derived from: replica clock and completed count.
    base: Option<(Nanos, u64)>,
    weight: f64,
    last_updated: Nanos,
    non_empty_since: Option<Nanos>,
    /// The schedule: 1 / weight, and the next deadline.
    period: f64,
    deadline: f64,
}

/// gRPC's weighted round robin for one coordinator.
pub struct GrpcWrr {
    blackout: Nanos,
    expiration: Nanos,
    update_period: Nanos,
    penalty: f64,
    servers: Vec<Server>,
    /// When the scheduler is next rebuilt (coordinator clock).
    next_rebuild: Nanos,
    /// The schedule's current time: the latest deadline picked since the rebuild.
    current: f64,
    rng: Rng,
}

impl GrpcWrr {
    /// A selector for one coordinator.
    pub fn new(cfg: &GrpcWrrConfig, env: &SelectorEnv) -> Self {
        GrpcWrr {
            blackout: from_ms(cfg.blackout_period_ms.max(0.0)),
            expiration: from_ms(cfg.weight_expiration_period_ms.max(0.0)).max(1),
            update_period: from_ms(cfg.weight_update_period_ms.max(0.0)).max(MIN_UPDATE_PERIOD),
            penalty: cfg.error_utilization_penalty.max(0.0),
            servers: vec![Server::default(); env.servers],
            next_rebuild: 0,
            current: 0.0,
            rng: Rng::new(env.seed, 0x4752_5043 + env.coordinator as u64),
        }
    }

    fn server(&mut self, r: NodeId) -> &mut Server {
        let i = r as usize;
        if i >= self.servers.len() {
            self.servers.resize(i + 1, Server::default());
        }
        &mut self.servers[i]
    }

    /// A load report received at `now`: a new weight once a period of completions is known.
    fn report(&mut self, now: Nanos, fb: &Feedback) {
        let (period, penalty) = (self.update_period, self.penalty);
        let s = self.server(fb.from);
        let Some((t0, c0)) = s.base else {
            s.base = Some((fb.timestamp, fb.completed));
            return;
        };
        if fb.timestamp < t0 + period {
            return;
        }
        debug_assert!(fb.timestamp > t0, "a report a whole period later is later: {} after {t0}", fb.timestamp);
        s.base = Some((fb.timestamp, fb.completed));
        let qps = fb.completed.saturating_sub(c0) as f64 * SEC as f64 / (fb.timestamp - t0) as f64;
        debug_assert!(qps.is_finite() && qps >= 0.0, "a completion rate {qps}");
        let w = weight(qps, 0.0, fb.utilization, penalty);
        if w > 0.0 {
            s.non_empty_since.get_or_insert(now);
            s.last_updated = now;
            s.weight = w;
        }
    }

    /// The weight of server `i` at `now` as A58 reads it: 0 when expired or in blackout.
    fn usable_weight(&mut self, i: usize, now: Nanos) -> f64 {
        let (blackout, expiration) = (self.blackout, self.expiration);
        let s = &mut self.servers[i];
        let Some(since) = s.non_empty_since else { return 0.0 };
        if now.saturating_sub(s.last_updated) >= expiration {
            s.non_empty_since = None;
            return 0.0;
        }
        if blackout > 0 && now.saturating_sub(since) < blackout {
            return 0.0;
        }
        debug_assert!(s.weight > 0.0, "a server with a known weight has a positive one: {}", s.weight);
        s.weight
    }

    /// A new schedule from the weights at `now` (A58's scheduler swap).
    fn rebuild(&mut self, now: Nanos) {
        let weights: Vec<f64> = (0..self.servers.len()).map(|i| self.usable_weight(i, now)).collect();
        let known: Vec<f64> = weights.iter().copied().filter(|&w| w > 0.0).collect();
        let mean = known.iter().sum::<f64>() / known.len().max(1) as f64;
        debug_assert!(known.len() < 2 || (mean.is_finite() && mean > 0.0), "the mean of positive weights is positive: {mean}");
        for (s, &w) in self.servers.iter_mut().zip(&weights) {
            let w = if known.len() < 2 {
                1.0
            } else if w > 0.0 {
                w
            } else {
                mean
            };
            s.period = 1.0 / w;
            s.deadline = self.rng.unit() * s.period;
            debug_assert!(s.period > 0.0 && s.period.is_finite(), "an EDF period is positive: {}", s.period);
            debug_assert!((0.0..=s.period).contains(&s.deadline), "a first deadline within one period");
        }
        self.next_rebuild = now + self.update_period;
        self.current = 0.0;
    }
}

impl ReplicaSelector for GrpcWrr {
    fn select(&mut self, now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        if now >= self.next_rebuild || replicas.iter().any(|&r| r as usize >= self.servers.len()) {
            if let Some(&far) = replicas.iter().max() {
                self.server(far);
            }
            self.rebuild(now);
        }
        debug_assert!(replicas.iter().all(|&r| (r as usize) < self.servers.len()), "a slot per offered replica");
        let current = self.current;
        let mut chosen = replicas[0];
        for &r in replicas {
            // no deadline before the schedule's current time (see the module's choices)
            let d = &mut self.servers[r as usize].deadline;
            *d = d.max(current);
            if *d < self.servers[chosen as usize].deadline {
                chosen = r;
            }
        }
        let s = &mut self.servers[chosen as usize];
        debug_assert!(s.deadline >= current, "EDF time never goes back: {} before {current}", s.deadline);
        self.current = s.deadline;
        s.deadline += s.period;
        debug_assert!(s.deadline >= self.current, "the chosen server's next deadline is not earlier: {s:?}");
        Decision::to(chosen)
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        if resp.fresh {
            self.report(now, resp.feedback);
        }
    }

    fn on_facts(&mut self, now: Nanos, facts: &Feedback) {
        self.report(now, facts);
    }
}

/// `grpc-wrr`: gRPC's weighted round robin over ORCA-style utilization reports.
pub const REGISTRATION: Registration = Registration {
    name: "grpc-wrr",
    source: "gRPC weighted_round_robin (gRFC A58): qps / utilization weights, blackout, expiry, EDF",
    needs: Needs { facts: &[Fact::Utilization], ..Needs::NOTHING },
    build: |cfg, env| Box::new(GrpcWrr::new(&cfg.grpc_wrr, env)),
    validate: |cfg| cfg.grpc_wrr.validate().map_err(|e| tunable("grpc_wrr", e)),
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::model::SizeHint;

    /// Facts from `from` at `t` with `completed` done and utilization `u`.
    fn fb(from: NodeId, t: Nanos, completed: u64, u: f64) -> Feedback {
        Feedback { from, timestamp: t, completed, utilization: u, ..Feedback::default() }
    }

    /// Picks among `replicas` at `now`, counted per server.
    fn picks(s: &mut GrpcWrr, now: Nanos, replicas: &[NodeId], n: usize) -> Vec<usize> {
        let mut count = vec![0; s.servers.len()];
        for i in 0..n {
            count[replica_of(s.select(now, &read(i as u64, now, SizeHint::default()), replicas, &Blind)) as usize] +=
                1;
        }
        count
    }

    /// Each count within one of `want` (an earliest-deadline schedule started at random
    /// deadlines is off by at most one pick per server over any stretch).
    fn close(count: &[usize], want: &[usize]) {
        assert!(count.iter().zip(want).all(|(&c, &w)| c.abs_diff(w) <= 1), "{count:?} vs {want:?}");
    }

    /// Server `r` reports at `t0` and `t0 + 1 s` a rate of `qps` at utilization `u`.
    fn reports(s: &mut GrpcWrr, r: NodeId, t0: Nanos, qps: u64, u: f64) {
        s.on_facts(t0, &fb(r, t0, 0, u));
        s.on_facts(t0 + SEC, &fb(r, t0 + SEC, qps, u));
    }

    #[test]
    fn the_weight_is_qps_over_utilization_plus_the_error_penalty() {
        assert_eq!(weight(100.0, 0.0, 0.5, 1.0), 200.0);
        // 10 errors per 100 queries add 0.1 to utilization at penalty 1, 0.2 at penalty 2
        assert_eq!(weight(100.0, 10.0, 0.4, 1.0), 200.0);
        assert_eq!(weight(100.0, 10.0, 0.3, 2.0), 200.0);
        assert_eq!(weight(0.0, 0.0, 0.5, 1.0), 0.0, "no queries: no weight");
        assert_eq!(weight(100.0, 0.0, 0.0, 1.0), 0.0, "no utilization: no weight");
    }

    #[test]
    fn the_rate_is_derived_from_completed_over_a_period() {
        let mut s = GrpcWrr::new(&GrpcWrrConfig::default(), &env(3));
        s.on_facts(0, &fb(0, 0, 0, 0.5));
        s.on_facts(SEC / 2, &fb(0, SEC / 2, 40, 0.5));
        assert_eq!(s.servers[0].weight, 0.0, "half a period: no rate yet");
        s.on_facts(SEC, &fb(0, 2 * SEC, 300, 0.5));
        assert_eq!(s.servers[0].weight, 300.0, "150 per second over utilization 0.5");
        assert_eq!((s.servers[0].non_empty_since, s.servers[0].last_updated), (Some(SEC), SEC));
    }

    #[test]
    fn weights_are_used_only_after_the_blackout_and_until_they_expire() {
        let cfg = GrpcWrrConfig::default();
        let mut s = GrpcWrr::new(&cfg, &env(3));
        reports(&mut s, 0, 0, 100, 0.5);
        assert_eq!(s.usable_weight(0, SEC), 0.0, "reported at 1 s: in blackout");
        assert_eq!(s.usable_weight(0, 11 * SEC - 1), 0.0, "blackout lasts 10 s");
        assert_eq!(s.usable_weight(0, 11 * SEC), 200.0);
        assert_eq!(s.usable_weight(0, 181 * SEC - 1), 200.0, "3 min after the last report");
        assert_eq!(s.usable_weight(0, 181 * SEC), 0.0, "expired");
        assert_eq!(s.servers[0].non_empty_since, None, "expiry restarts the blackout");
        reports(&mut s, 0, 200 * SEC, 100, 0.5);
        assert_eq!(s.usable_weight(0, 202 * SEC), 0.0, "blackout again after fresh reports");
        assert_eq!(s.usable_weight(0, 211 * SEC), 200.0);
    }

    #[test]
    fn picks_follow_the_weights_and_unknown_replicas_get_the_mean() {
        let cfg = GrpcWrrConfig { blackout_period_ms: 0.0, ..GrpcWrrConfig::default() };
        let mut s = GrpcWrr::new(&cfg, &env(4));
        reports(&mut s, 0, 0, 100, 0.5);
        reports(&mut s, 1, 0, 300, 0.5);
        reports(&mut s, 2, 0, 200, 0.5);
        // weights 200, 600, 400; server 3 never reported: the mean, 400
        let count = picks(&mut s, 2 * SEC, &[0, 1, 2, 3], 1_600);
        close(&count, &[200, 600, 400, 400]);
        // among a read's replicas only
        let count = picks(&mut s, 2 * SEC, &[0, 1], 800);
        close(&count, &[200, 600, 0, 0]);
    }

    #[test]
    fn fewer_than_two_weights_is_round_robin() {
        let cfg = GrpcWrrConfig { blackout_period_ms: 0.0, ..GrpcWrrConfig::default() };
        let mut s = GrpcWrr::new(&cfg, &env(3));
        reports(&mut s, 0, 0, 900, 0.1);
        let count = picks(&mut s, 2 * SEC, &[0, 1, 2], 300);
        close(&count, &[100, 100, 100]);
    }

    #[test]
    fn the_blackout_keeps_round_robin_until_it_ends() {
        let mut s = GrpcWrr::new(&GrpcWrrConfig::default(), &env(2));
        reports(&mut s, 0, 0, 100, 0.5);
        reports(&mut s, 1, 0, 300, 0.5);
        // in blackout: equal shares; after it, 1 : 3
        close(&picks(&mut s, 2 * SEC, &[0, 1], 400), &[200, 200]);
        close(&picks(&mut s, 12 * SEC, &[0, 1], 400), &[100, 300]);
    }

    #[test]
    fn a_replica_back_from_absence_has_no_credit() {
        let mut s = GrpcWrr::new(&GrpcWrrConfig::default(), &env(3));
        // server 2 is not offered for 300 reads, then it is again
        picks(&mut s, 0, &[0, 1], 300);
        close(&picks(&mut s, 0, &[0, 1, 2], 300), &[100, 100, 100]);
    }

    #[test]
    fn a_stale_response_is_not_a_report() {
        let mut s = GrpcWrr::new(&GrpcWrrConfig::default(), &env(2));
        let stale = Response { fresh: false, ..response(1, 0, 0, false, fb(0, 0, 0, 0.5)) };
        s.on_response(0, &stale);
        assert_eq!(s.servers[0].base, None);
    }

    #[test]
    fn validation_names_the_field() {
        let bad = GrpcWrrConfig { error_utilization_penalty: -1.0, ..GrpcWrrConfig::default() };
        assert_eq!(bad.validate().unwrap_err().field, "error_utilization_penalty");
        let bad = GrpcWrrConfig { weight_update_period_ms: 0.0, ..GrpcWrrConfig::default() };
        assert_eq!(bad.validate().unwrap_err().field, "weight_update_period_ms");
        assert!(GrpcWrrConfig::default().validate().is_ok());
    }
}
