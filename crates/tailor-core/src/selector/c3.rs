//! `c3`: C3's replica selection (Suresh et al., NSDI 2015) with the constants of its simulator
//! absim: cubic scoring of piggybacked feedback, per-server cubic rate control and backpressure.
//!
//! Per server this coordinator keeps EWMAs (weight 0.9 on the new sample) of the response time it
//! measured minus the piggybacked service time (`R̄ − 1/µ̄`), of the queue length `q̄` and of the
//! service time `1/µ̄`, plus its own outstanding count `os_s`. The score is
//! `Ψ_s = (R̄ − 1/µ̄) + q̂^b · (1/µ̄)` with `q̂ = 1 + os_s·w + q̄`; a server with no feedback yet
//! scores 0 and is tried first.
//!
//! Choices:
//! - Equal scores are ranked in random order (absim's stable sort kept the ring order, which makes
//!   every coordinator try the primary first while nothing is known).
//! - Rate adaptation runs on every response, stale or not: it depends on the response count, not
//!   on the piggybacked facts; only the facts of stale feedback are ignored.
//! - `backpressure` without `rate_control` has nothing to wait for and never parks a request.
//! - With rate control on and backpressure off, a request that finds no token goes to the
//!   best-scored replica and takes a token from it anyway (into debt), as absim's forced sends.
//! - State is kept only for the servers this coordinator has sent to or heard from; any other
//!   reads as a server never heard from (score 0, a fresh rate limiter).

use super::c3_rate::{CubicRateLimiter, RateParams};
use super::c3_score::{rank_by_score, shuffle, FeedbackWeight, ServerFeedback, ABSIM_EWMA_WEIGHT};
use super::{Decision, Reach, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::Response;
use crate::model::{NodeId, RequestView};
use crate::node_map::NodeMap;
use crate::time::{from_ms, Nanos};
use serde::{Deserialize, Serialize};
use super::registry::{Fact, Needs, Registration, tunable};

/// Tunables of `c3`; the defaults are absim's full C3 (the code behind the paper's Fig. 14).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct C3Config {
    /// Rank replicas by the cubic score (off: random order).
    pub scoring: bool,
    /// Limit the sending rate to each server with the cubic token bucket.
    pub rate_control: bool,
    /// When every replica is out of tokens, park the request (off: send to the best anyway).
    pub backpressure: bool,
    /// Weight `w` of the outstanding count in `q̂`; unset means the number of coordinators.
    pub concurrency_weight: Option<f64>,
    /// EWMA weight of each new feedback sample.
    pub ewma_weight: f64,
    /// Exponent `b` of `q̂` in the score.
    pub score_exponent: f64,
    /// Rate interval `δ` in milliseconds.
    pub rate_interval_ms: f64,
    /// Initial sending rate, tokens per interval.
    pub initial_rate: f64,
    /// Token-bucket capacity.
    pub max_tokens: f64,
    /// Initial saturation rate `R0`, tokens per interval.
    pub initial_r0: f64,
    /// Initial receive rate, responses per interval.
    pub initial_rrate: f64,
    /// EWMA weight of each closed slot in the receive rate.
    pub rrate_weight: f64,
    /// Cubic scaling `γ`, with time in milliseconds.
    pub cubic_gamma: f64,
    /// Largest single rate increase `s_max`, tokens per interval.
    pub cubic_s_max: f64,
    /// Multiplicative decrease factor `β`.
    pub cubic_beta: f64,
    /// Hysteresis after an increase before a decrease, in rate intervals.
    pub hysteresis_intervals: f64,
    /// Lowest sending rate, tokens per interval.
    pub rate_floor: f64,
}

impl Default for C3Config {
    fn default() -> Self {
        C3Config {
            scoring: true,
            rate_control: true,
            backpressure: true,
            concurrency_weight: None,
            ewma_weight: ABSIM_EWMA_WEIGHT,
            score_exponent: 3.0,
            rate_interval_ms: 20.0,
            initial_rate: 5.0,
            max_tokens: 50.0,
            initial_r0: 10.0,
            initial_rrate: 10.0,
            rrate_weight: 0.9,
            cubic_gamma: 4e-6,
            cubic_s_max: 10.0,
            cubic_beta: 0.2,
            hysteresis_intervals: 2.0,
            rate_floor: 1e-4,
        }
    }
}

/// A `C3Config` or `TapConfig` field with a value the strategy cannot run with.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("invalid `{field}` = {value}: {expected}")]
pub struct InvalidConfig {
    /// The field's name as written in a spec.
    pub field: &'static str,
    /// The value given.
    pub value: f64,
    /// What it must be.
    pub expected: &'static str,
}

/// Check that `value` lies in the range named by `expected` (`pred` decides).
pub(crate) fn check(
    field: &'static str,
    value: f64,
    expected: &'static str,
    pred: impl Fn(f64) -> bool,
) -> Result<(), InvalidConfig> {
    if value.is_finite() && pred(value) {
        Ok(())
    } else {
        Err(InvalidConfig { field, value, expected })
    }
}

/// Workers of one absim server, the setup absim's rate constants were chosen for.
pub const ABSIM_WORKERS: f64 = 4.0;
/// Mean service time of one absim request in ns (its slow base rate, as the `c3` preset).
pub const ABSIM_SERVICE_NS: f64 = 4e6;

impl C3Config {
    /// These constants moved to a server `k` times as fast as absim's: the rates (initial,
    /// saturation, receive, floor), the token cap, the largest increase and the cubic's scale
    /// `γ` are multiplied by `k`; time constants stay. The cubic's shape in time is unchanged
    /// (`cbrt(β·R0/γ)`, the time to climb back to `R0`, does not depend on `k`), so the limiter
    /// behaves at the new rates as absim's does at its own.
    pub fn scaled(&self, k: f64) -> C3Config {
        assert!(k.is_finite() && k > 0.0, "a rate scale is a positive number, got {k}");
        C3Config {
            initial_rate: self.initial_rate * k,
            max_tokens: self.max_tokens * k,
            initial_r0: self.initial_r0 * k,
            initial_rrate: self.initial_rrate * k,
            cubic_gamma: self.cubic_gamma * k,
            cubic_s_max: self.cubic_s_max * k,
            rate_floor: self.rate_floor * k,
            ..self.clone()
        }
    }

    /// The scale [`C3Config::scaled`] needs for servers of `workers` workers serving a request in
    /// `service_ns` on average: their capacity over absim's (4 workers, 4 ms). A store node with
    /// 4 workers and 50 µs reads gets 80: 400 tokens per 20 ms interval to start, as C3's
    /// Cassandra implementation used a few hundred (a store node assumes 5 µs reads: 800).
    pub fn capacity_scale(workers: usize, service_ns: f64) -> f64 {
        assert!(workers > 0 && service_ns > 0.0, "a server has workers and a service time");
        (workers as f64 / ABSIM_WORKERS) * (ABSIM_SERVICE_NS / service_ns)
    }

    /// Hector's C3 variant: scoring only, no rate control or backpressure, concurrency weight 5.
    pub fn hector() -> Self {
        C3Config { rate_control: false, backpressure: false, concurrency_weight: Some(5.0), ..C3Config::default() }
    }

    /// Reject values the strategy cannot run with, naming the field.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        if let Some(w) = self.concurrency_weight {
            check("concurrency_weight", w, "a number >= 0", |v| v >= 0.0)?;
        }
        check("ewma_weight", self.ewma_weight, "in (0, 1]", |v| v > 0.0 && v <= 1.0)?;
        check("score_exponent", self.score_exponent, "a number >= 0", |v| v >= 0.0)?;
        check("rate_interval_ms", self.rate_interval_ms, "> 0", |v| v > 0.0)?;
        check("initial_rate", self.initial_rate, "> 0", |v| v > 0.0)?;
        check("max_tokens", self.max_tokens, ">= 1", |v| v >= 1.0)?;
        check("initial_r0", self.initial_r0, "> 0", |v| v > 0.0)?;
        check("initial_rrate", self.initial_rrate, ">= 0", |v| v >= 0.0)?;
        check("rrate_weight", self.rrate_weight, "in [0, 1]", |v| (0.0..=1.0).contains(&v))?;
        check("cubic_gamma", self.cubic_gamma, "> 0", |v| v > 0.0)?;
        check("cubic_s_max", self.cubic_s_max, "> 0", |v| v > 0.0)?;
        check("cubic_beta", self.cubic_beta, "in (0, 1)", |v| v > 0.0 && v < 1.0)?;
        check("hysteresis_intervals", self.hysteresis_intervals, ">= 0", |v| v >= 0.0)?;
        check("rate_floor", self.rate_floor, "> 0", |v| v > 0.0)?;
        Ok(())
    }

    /// The rate limiter's constants in engine units.
    pub fn rate_params(&self) -> RateParams {
        let interval = from_ms(self.rate_interval_ms).max(1);
        RateParams {
            interval,
            initial_rate: self.initial_rate,
            max_tokens: self.max_tokens,
            initial_r0: self.initial_r0,
            initial_rrate: self.initial_rrate,
            rrate_weight: self.rrate_weight.clamp(0.0, 1.0),
            gamma: self.cubic_gamma,
            s_max: self.cubic_s_max,
            beta: self.cubic_beta,
            hysteresis: from_ms(self.rate_interval_ms * self.hysteresis_intervals),
            rate_floor: self.rate_floor,
        }
    }
}

/// What one coordinator keeps about one server.
#[derive(Clone, Debug)]
struct Server {
    feedback: ServerFeedback,
    rate: CubicRateLimiter,
}

/// `c3` selector for one coordinator.
pub struct C3 {
    scoring: bool,
    rate_control: bool,
    backpressure: bool,
    /// Concurrency weight `w` in `q̂`.
    weight: f64,
    /// Score exponent `b`.
    exponent: f64,
    /// EWMA weight of the feedback averages.
    ewma: FeedbackWeight,
    params: RateParams,
    /// State per server this coordinator has sent to or heard from.
    servers: NodeMap<Server>,
    /// The state of a server never dealt with: what ranking and rate control read for it.
    fresh: Server,
    rng: Rng,
    /// Scratch ranking, reused so `select` does not allocate.
    order: Vec<(f64, NodeId)>,
}

impl C3 {
    /// Build for one coordinator. Call [`C3Config::validate`] first to report bad values; here
    /// they are only kept from panicking.
    pub fn new(cfg: &C3Config, env: &SelectorEnv) -> Self {
        let params = cfg.rate_params();
        let weight = cfg.concurrency_weight.unwrap_or(env.coordinators as f64);
        debug_assert!(params.interval > 0, "a rate interval is never empty");
        C3 {
            fresh: Server { feedback: ServerFeedback::default(), rate: CubicRateLimiter::new(&params) },
            scoring: cfg.scoring,
            rate_control: cfg.rate_control,
            backpressure: cfg.backpressure,
            weight: if weight.is_finite() { weight.max(0.0) } else { env.coordinators as f64 },
            exponent: cfg.score_exponent,
            ewma: FeedbackWeight::new(cfg.ewma_weight),
            params,
            servers: NodeMap::new(),
            rng: Rng::new(env.seed, 0xC3 + ((env.coordinator as u64) << 8)),
            order: Vec::new(),
        }
    }

    /// The state kept for `node` and the rate constants, borrowed together: copying the
    /// constants (88 bytes) for every send and response cost more than using them.
    #[inline]
    fn server_and_params(&mut self, node: NodeId) -> (&mut Server, &RateParams) {
        let fresh = &self.fresh;
        (self.servers.get_or_insert_with(node, || fresh.clone()), &self.params)
    }

    /// What is known of `node` (a fresh state if it was never dealt with).
    #[inline]
    fn state(&self, node: NodeId) -> &Server {
        self.servers.get(node).unwrap_or(&self.fresh)
    }

    /// The feedback state kept for `node`, if it was ever seen.
    pub fn feedback(&self, node: NodeId) -> Option<&ServerFeedback> {
        self.servers.get(node).map(|s| &s.feedback)
    }

    /// The rate limiter kept for `node`, if it was ever seen.
    pub fn rate_limiter(&self, node: NodeId) -> Option<&CubicRateLimiter> {
        self.servers.get(node).map(|s| &s.rate)
    }

    /// The rate limiter's constants.
    pub fn rate_params(&self) -> &RateParams {
        &self.params
    }

    /// `q̂ = 1 + os_s·w + q̄` for `node`, if it has sent feedback.
    pub fn q_hat(&self, node: NodeId) -> Option<f64> {
        self.state(node).feedback.q_hat(self.weight)
    }

    /// C3's score of `node` (lower is better; 0 without feedback).
    #[inline]
    pub fn score(&self, node: NodeId) -> f64 {
        self.state(node).feedback.c3_score(self.weight, self.exponent)
    }

    /// Fill `self.order` with the replicas in preference order.
    fn rank(&mut self, replicas: &[NodeId]) {
        self.order.clear();
        for &r in replicas {
            let s = if self.scoring { self.score(r) } else { 0.0 };
            self.order.push((s, r));
        }
        if self.scoring {
            rank_by_score(&mut self.order, &mut self.rng);
        } else {
            shuffle(&mut self.order, &mut self.rng);
        }
        debug_assert_eq!(self.order.len(), replicas.len(), "every replica ranked once");
        debug_assert!(self.order.iter().all(|(s, _)| s.is_finite() && *s >= 0.0), "scores are times: {:?}", self.order);
    }

    #[inline]
    fn has_token(&self, node: NodeId, now: Nanos) -> bool {
        self.state(node).rate.has_token(&self.params, now)
    }
}

impl ReplicaSelector for C3 {
    fn select(&mut self, now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        self.rank(replicas);
        let Some(&(_, best)) = self.order.first() else {
            return Decision::Wait { retry_at: None };
        };
        if !self.rate_control {
            return Decision::to(best);
        }
        if let Some(&(_, r)) = self.order.iter().find(|&&(_, r)| self.has_token(r, now)) {
            debug_assert!(replicas.contains(&r), "a token-holding replica {r:?} comes from the offered set");
            return Decision::to(r);
        }
        if !self.backpressure {
            return Decision::to(best);
        }
        let retry_at = self.order.iter().map(|&(_, r)| self.state(r).rate.token_time(&self.params, now)).min();
        debug_assert!(retry_at.is_some_and(|t| t > now), "parked with no token now, so the retry {retry_at:?} is later than {now}");
        Decision::Wait { retry_at }
    }

    fn footprint(&self, servers: &[NodeId], reach: Reach, out: &mut dyn FnMut(*const u8)) -> bool {
        self.servers.footprint(servers, reach, out);
        true
    }

    fn on_sent(&mut self, now: Nanos, _req: &RequestView, replica: NodeId) {
        let rate_control = self.rate_control;
        let (s, p) = self.server_and_params(replica);
        s.feedback.sent();
        if rate_control {
            s.rate.consume(p, now);
        }
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        let (rate_control, ewma) = (self.rate_control, self.ewma);
        let (s, p) = self.server_and_params(resp.replica);
        s.feedback.respond(now, resp, ewma);
        if rate_control {
            s.rate.on_response(p, now);
        }
    }
}


/// `c3`: C3 (NSDI 2015).
pub const REGISTRATION: Registration = Registration {
    name: "c3",
    source: "C3 (NSDI 2015)",
    needs: Needs { facts: &[Fact::QueueLen, Fact::ServiceTime], ..Needs::NOTHING },
    build: |cfg, env| Box::new(C3::new(&cfg.c3, env)),
    validate: |cfg| cfg.c3.validate().map_err(|e| tunable("c3", e)),
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::facts::Feedback;
    use crate::model::SizeHint;
    use crate::time::MS;

    fn fb(queue_len: u32, service_ms: u64) -> Feedback {
        Feedback { queue_len, service_time: service_ms * MS, ..Feedback::default() }
    }

    fn scoring_only(w: Option<f64>) -> C3Config {
        C3Config { rate_control: false, backpressure: false, concurrency_weight: w, ..C3Config::default() }
    }

    #[test]
    fn scaling_multiplies_rates_and_keeps_time_constants() {
        let k = C3Config::capacity_scale(4, 50_000.0);
        assert!((k - 80.0).abs() < 1e-9, "{k}");
        assert_eq!(C3Config::capacity_scale(4, ABSIM_SERVICE_NS), 1.0);
        let (a, b) = (C3Config::default(), C3Config::default().scaled(k));
        assert_eq!(b.initial_rate, 400.0);
        assert_eq!((b.max_tokens, b.cubic_s_max), (a.max_tokens * k, a.cubic_s_max * k));
        assert_eq!((b.rate_interval_ms, b.cubic_beta, b.hysteresis_intervals), (20.0, a.cubic_beta, 2.0));
        let climb = |c: &C3Config| (c.cubic_beta * c.initial_r0 / c.cubic_gamma).cbrt();
        assert!((climb(&a) - climb(&b)).abs() < 1e-9 * climb(&a), "the cubic's time shape is kept");
        b.validate().unwrap();
    }

    /// Hand-computed scores with w = 1:
    /// - server 1: response 10 ms, service 2 ms, q 3 → (10 − 2) + (1 + 0 + 3)³·2 = 8 + 128 = 136 ms
    /// - server 2: response 5 ms, service 1 ms, q 1 → (5 − 1) + (1 + 0 + 1)³·1 = 4 + 8 = 12 ms
    /// - server 3: no feedback → 0, tried first.
    #[test]
    fn score_ordering_with_hand_computed_scores() {
        let mut c3 = C3::new(&scoring_only(None), &env(5));
        let h = SizeHint::default();
        c3.on_response(10 * MS, &response(1, 1, 0, false, fb(3, 2)));
        c3.on_response(5 * MS, &response(2, 2, 0, false, fb(1, 1)));
        assert_eq!(c3.score(1), 136.0 * MS as f64);
        assert_eq!(c3.score(2), 12.0 * MS as f64);
        assert_eq!(c3.score(3), 0.0);
        for i in 0..20 {
            assert_eq!(replica_of(c3.select(20 * MS, &read(10 + i, 20 * MS, h), &[1, 2, 3], &Blind)), 3);
        }
        // server 3 answers slowly: 30 ms, service 3 ms, q 2 → 27 + 27·3 = 108 ms: now 2 < 3 < 1
        c3.on_response(30 * MS, &response(3, 3, 0, false, fb(2, 3)));
        assert_eq!(c3.score(3), 108.0 * MS as f64);
        assert_eq!(replica_of(c3.select(30 * MS, &read(40, 30 * MS, h), &[1, 2, 3], &Blind)), 2);
        c3.rank(&[1, 2, 3]);
        assert_eq!(c3.order.iter().map(|&(_, r)| r).collect::<Vec<_>>(), vec![2, 3, 1]);
        // with scoring off, every replica comes first sometimes
        let mut random = C3::new(&C3Config { scoring: false, ..scoring_only(None) }, &env(5));
        random.on_response(5 * MS, &response(2, 2, 0, false, fb(1, 1)));
        let mut seen = [0; 4];
        for i in 0..300 {
            seen[replica_of(random.select(0, &read(i, 0, h), &[1, 2, 3], &Blind)) as usize] += 1;
        }
        assert!(seen[1..].iter().all(|&c| c > 60), "{seen:?}");
    }

    #[test]
    fn q_hat_uses_concurrency_weight_and_outstanding_counts() {
        let h = SizeHint::default();
        let four_coordinators = SelectorEnv { coordinators: 4, ..env(5) };
        // default w = number of coordinators
        let mut c3 = C3::new(&scoring_only(None), &four_coordinators);
        c3.on_response(4 * MS, &response(1, 1, 0, false, fb(2, 1)));
        assert_eq!(c3.q_hat(1), Some(3.0));
        let a = read(1, 0, h);
        c3.on_sent(5 * MS, &a, 1);
        c3.on_sent(5 * MS, &a, 1);
        assert_eq!(c3.feedback(1).map(|f| f.outstanding()), Some(2));
        assert_eq!(c3.q_hat(1), Some(1.0 + 2.0 * 4.0 + 2.0));
        // delay 3 ms + 11³ · 1 ms
        assert_eq!(c3.score(1), (3.0 + 1331.0) * MS as f64);
        // an explicit weight (Hector's 5) overrides it
        let mut hector = C3::new(&C3Config::hector(), &four_coordinators);
        hector.on_response(4 * MS, &response(1, 1, 0, false, fb(2, 1)));
        hector.on_sent(5 * MS, &a, 1);
        assert_eq!(hector.q_hat(1), Some(1.0 + 5.0 + 2.0));
        // a response takes one off os_s again
        hector.on_response(6 * MS, &response(1, 1, 5 * MS, false, fb(2, 1)));
        assert_eq!(hector.q_hat(1), Some(3.0));
    }

    /// Every bucket is empty at t = 0 and gains a token every 4 ms (5 per 20 ms): the request
    /// waits until 4 ms; once the three tokens are spent the next one waits until 8 ms.
    #[test]
    fn backpressure_parks_until_a_token_and_then_sends_the_same_request() {
        let mut c3 = C3::new(&C3Config::default(), &env(5));
        let h = SizeHint::default();
        let replicas = [0, 1, 2];
        let first = read(1, 0, h);
        assert_eq!(c3.select(0, &first, &replicas, &Blind), Decision::Wait { retry_at: Some(4 * MS) });
        // released at the refill time: the same request is sent
        let r = replica_of(c3.select(4 * MS, &first, &replicas, &Blind));
        c3.on_sent(4 * MS, &first, r);
        let mut used = vec![r];
        for i in 2..=3 {
            let req = read(i, 4 * MS, h);
            let r = replica_of(c3.select(4 * MS, &req, &replicas, &Blind));
            c3.on_sent(4 * MS, &req, r);
            used.push(r);
        }
        used.sort();
        assert_eq!(used, vec![0, 1, 2], "each replica's single token is used once");
        let parked = read(4, 5 * MS, h);
        assert_eq!(c3.select(5 * MS, &parked, &replicas, &Blind), Decision::Wait { retry_at: Some(8 * MS) });
        assert_eq!(c3.select(7_999_999, &parked, &replicas, &Blind), Decision::Wait { retry_at: Some(8 * MS) });
        let r = replica_of(c3.select(8 * MS, &parked, &replicas, &Blind));
        c3.on_sent(8 * MS, &parked, r);
        // the earliest refill is now the other two replicas' next token, still at 8 ms
        assert!(matches!(c3.select(8 * MS, &read(5, 8 * MS, h), &replicas, &Blind), Decision::Send { .. }));
    }

    /// The scored walk skips a replica without tokens; without backpressure the best one is used
    /// anyway when none has a token.
    #[test]
    fn rate_limited_walk_and_forced_send_without_backpressure() {
        let h = SizeHint::default();
        let cfg = C3Config { backpressure: false, ..C3Config::default() };
        let mut c3 = C3::new(&cfg, &env(5));
        // at 10 ms each bucket holds 2.5 tokens; server 1 is the worst, 3 the best
        c3.on_response(10 * MS, &response(1, 1, 0, false, fb(9, 2)));
        c3.on_response(10 * MS, &response(2, 2, 0, false, fb(5, 2)));
        c3.on_response(10 * MS, &response(3, 3, 0, false, fb(0, 2)));
        let mut picks = Vec::new();
        for i in 0..7 {
            let req = read(i, 10 * MS, h);
            let r = replica_of(c3.select(10 * MS, &req, &[1, 2, 3], &Blind));
            c3.on_sent(10 * MS, &req, r);
            picks.push(r);
        }
        // Scores in ms with w = 1 (delay 8 ms for all): server 3 = 8 + (1+os)³·2, server 2 =
        // 8 + (6+os)³·2, server 1 = 8 + (10+os)³·2. Server 3 (10, then 24) takes two sends and
        // is left with 0.5 token; it still ranks first (62) but is skipped, so 2 (440, 694)
        // takes two, then 1 (2008, 2670) takes two; with no token anywhere the 7th goes to the
        // best-scored replica, 3, into debt.
        assert_eq!(picks, vec![3, 3, 2, 2, 1, 1, 3]);
        assert!(c3.rate_limiter(3).unwrap().tokens(c3.rate_params(), 10 * MS) < -0.4);
    }

    #[test]
    fn stale_feedback_is_counted_but_not_applied() {
        let mut c3 = C3::new(&C3Config::default(), &env(5));
        let a = read(1, 0, SizeHint::default());
        c3.on_sent(4 * MS, &a, 1);
        c3.on_sent(4 * MS, &a, 1);
        c3.on_response(9 * MS, &response(1, 1, 4 * MS, false, fb(5, 1)));
        let before = c3.score(1);
        let q_before = c3.feedback(1).unwrap().queue();
        let mut stale = response(2, 1, 4 * MS, false, fb(100, 50));
        stale.fresh = false;
        c3.on_response(10 * MS, &stale);
        assert_eq!(c3.feedback(1).unwrap().outstanding(), 0, "the response is counted");
        assert_eq!(c3.feedback(1).unwrap().queue(), q_before, "its facts are not applied");
        assert!(c3.score(1) < before, "only os_s dropped");
        // the rate limiter still counted it (srate < rrate on both: two increases)
        assert!(c3.rate_limiter(1).unwrap().srate() > 5.0);
    }

    /// Responses drive the per-server rate through C3: the first response raises srate with the
    /// cubic law (rrate starts at 10 > srate 5), and once the measured rrate falls below srate
    /// the rate drops by β, but only 2·δ after the last increase.
    #[test]
    fn responses_adapt_the_rate_with_hysteresis() {
        let mut c3 = C3::new(&C3Config::default(), &env(5));
        c3.on_response(MS, &response(1, 1, 0, false, fb(1, 1)));
        let raised = c3.rate_limiter(1).unwrap().srate();
        assert!((raised - (4e-6 * (1.0 - 500_000f64.cbrt()).powi(3) + 10.0)).abs() < 1e-9);
        // slot closes at 25 ms: rrate = 0.9·1 + 0.1·10 = 1.9 < srate, 24 ms after the increase
        c3.on_response(25 * MS, &response(2, 1, 0, false, fb(1, 1)));
        assert_eq!(c3.rate_limiter(1).unwrap().srate(), raised);
        c3.on_response(41 * MS, &response(3, 1, 0, false, fb(1, 1)));
        assert!((c3.rate_limiter(1).unwrap().srate() - 0.2 * raised).abs() < 1e-12);
        // the other servers have no state: nothing was sent to or heard from them
        assert!(c3.rate_limiter(2).is_none());
    }

    /// A scripted closed loop: one request per ms, three servers answering in 2 ms. C3 must keep
    /// up (rates climb from 5 per 20 ms each) and never park a request forever.
    #[test]
    fn keeps_up_with_a_steady_load() {
        let mut c3 = C3::new(&C3Config::default(), &env(3));
        let h = SizeHint::default();
        let mut backlog = std::collections::VecDeque::new();
        let mut in_flight: Vec<(Nanos, NodeId, Nanos, u64)> = Vec::new();
        let mut sent = 0u64;
        for tick in 0..2_000u64 {
            let now = tick * MS;
            backlog.push_back(read(tick, now, h));
            let (due, rest): (Vec<_>, Vec<_>) = in_flight.into_iter().partition(|&(at, ..)| at <= now);
            in_flight = rest;
            for (_, r, sent_at, id) in due {
                c3.on_response(now, &response(id, r, sent_at, false, fb(1, 1)));
            }
            while let Some(req) = backlog.front().copied() {
                match c3.select(now, &req, &[0, 1, 2], &Blind) {
                    Decision::Send { replica, .. } => {
                        c3.on_sent(now, &req, replica);
                        in_flight.push((now + 2 * MS, replica, now, req.id));
                        backlog.pop_front();
                        sent += 1;
                    }
                    Decision::Wait { retry_at } => {
                        assert!(retry_at.is_some_and(|t| t > now), "{retry_at:?}");
                        break;
                    }
                }
            }
        }
        assert!(sent >= 1_950, "sent {sent}, backlog {}", backlog.len());
    }

    #[test]
    fn unknown_nodes_and_empty_sets_do_not_panic() {
        let mut c3 = C3::new(&C3Config::default(), &env(3));
        assert_eq!(c3.select(0, &read(1, 0, SizeHint::default()), &[], &Blind), Decision::Wait { retry_at: None });
        c3.on_response(MS, &response(1, 9, 0, false, fb(1, 1)));
        assert!(c3.feedback(9).is_some());
        c3.on_response(MS, &response(1, u32::MAX, 0, false, fb(1, 1)));
        assert!(c3.feedback(u32::MAX).is_some(), "any id is tracked, only for the servers seen");
        assert!(c3.feedback(4).is_none());
    }

    #[test]
    fn config_defaults_round_trip_and_validation_names_the_field() {
        let c = C3Config::default();
        assert!(c.validate().is_ok());
        assert!(C3Config::hector().validate().is_ok());
        let back: C3Config = serde_json::from_str("{}").unwrap();
        assert_eq!(back, c);
        let p = c.rate_params();
        assert_eq!((p.interval, p.hysteresis), (20 * MS, 40 * MS));
        let bad = C3Config { cubic_beta: 1.5, ..C3Config::default() };
        assert_eq!(bad.validate().unwrap_err().field, "cubic_beta");
        assert!(serde_json::from_str::<C3Config>(r#"{"nope": 1}"#).is_err());
    }
}
