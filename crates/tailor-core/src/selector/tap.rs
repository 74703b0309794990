//! `tap`: timeliness-aware, prediction-based replica selection (Zhou et al., CCPE 2019).
//!
//! C3's score without rate control or backpressure, except that feedback older than
//! `staleness_ms` (`τ_w`, the age at this coordinator of the newest feedback from `s`) is not
//! trusted: the queue term becomes a prediction from the trend of recent feedback, or 0 to probe
//! a server nobody has needed lately (`os_s == 0` and `f_s == 0`, `f_s` = times `s` was a
//! candidate but not chosen since that feedback).
//!
//! Choices:
//! - TAP's `R_s` is read as C3's delay term `R̄ − 1/µ̄` (absim's `nw`, which TAP's code built on),
//!   so with fresh feedback TAP scores exactly like C3: `(R̄ − 1/µ̄) + q̂^3·(1/µ̄)`.
//! - A server with no feedback yet scores 0, as in C3.
//! - `dq_last` starts at 0; `d2 = dq − dq_last` uses the previous *fresh* feedback's `dq`.
//! - Increase → decrease on `(dq < 0 or d2 < 0) and Q_f > 30` (the project's reading of the garbled
//!   figure, docs/strategies.md); stable → decrease on `dq < 0 and d2 < 0 and Q_f > 30`.
//! - Points are stamped with the coordinator's clock at receipt. The line is fitted through every
//!   point of the current trend (the paper's "feedback ... collected under this trend"), kept as
//!   running moments, so a long trend costs no memory.
//! - The least-squares line through a single point (or points at one instant) is flat at their mean.
//! - The stable prediction is an EWMA (weight `stable_ewma_weight` on the new point) over the
//!   points since the trend became stable. Only the newest of them is kept: the EWMA summarises
//!   the others, and only the newest can start the next trend.
//! - An increasing prediction is not capped: a stale server in *increase* keeps getting worse
//!   until fresh feedback (e.g. from read repair) arrives, as the paper's rule implies.

use super::c3::{check, InvalidConfig};
use super::c3_score::{usable_ewma_weight, FeedbackWeight, ServerFeedback, ABSIM_EWMA_WEIGHT};
use super::{argmin_random_ties, Decision, Reach, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::Response;
use crate::model::{NodeId, RequestView};
use crate::node_map::NodeMap;
use crate::time::{from_ms, Nanos, MS};
use serde::{Deserialize, Serialize};
use super::registry::{Fact, Needs, Registration, tunable};

/// Tunables of `tap`; the defaults are the paper's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TapConfig {
    /// Weight `n` of the outstanding count in `q̂`; unset means the number of coordinators.
    pub concurrency_weight: Option<f64>,
    /// EWMA weight of each new feedback sample (as C3).
    pub ewma_weight: f64,
    /// Exponent of `q̂` in the score.
    pub score_exponent: f64,
    /// Feedback at least this old (ms) is stale and replaced by the prediction.
    pub staleness_ms: f64,
    /// Queue length at or below which the trend is *stable* (`Q_f` threshold).
    pub trend_queue_threshold: f64,
    /// EWMA weight of each new point in the stable-state prediction.
    pub stable_ewma_weight: f64,
}

impl Default for TapConfig {
    fn default() -> Self {
        TapConfig {
            concurrency_weight: None,
            ewma_weight: ABSIM_EWMA_WEIGHT,
            score_exponent: 3.0,
            staleness_ms: 100.0,
            trend_queue_threshold: 30.0,
            stable_ewma_weight: ABSIM_EWMA_WEIGHT,
        }
    }
}

impl TapConfig {
    /// Reject values the strategy cannot run with, naming the field.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        if let Some(w) = self.concurrency_weight {
            check("concurrency_weight", w, "a number >= 0", |v| v >= 0.0)?;
        }
        check("ewma_weight", self.ewma_weight, "in (0, 1]", |v| v > 0.0 && v <= 1.0)?;
        check("score_exponent", self.score_exponent, "a number >= 0", |v| v >= 0.0)?;
        check("staleness_ms", self.staleness_ms, ">= 0", |v| v >= 0.0)?;
        check("trend_queue_threshold", self.trend_queue_threshold, ">= 0", |v| v >= 0.0)?;
        check("stable_ewma_weight", self.stable_ewma_weight, "in (0, 1]", |v| v > 0.0 && v <= 1.0)?;
        Ok(())
    }
}

/// The direction a server's queue is heading, judged from its feedback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trend {
    /// Small or steady queue: predict with an EWMA.
    Stable,
    /// Growing queue: extrapolate the line.
    Increase,
    /// Shrinking queue: extrapolate the line.
    Decrease,
}

/// Signed milliseconds from `from` to `to`.
fn ms_between(from: Nanos, to: Nanos) -> f64 {
    (to as i128 - from as i128) as f64 / MS as f64
}

/// The constants of TAP's trend rules, shared by every tracker of a coordinator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrendRule {
    /// `Q_f` at or below which the trend is *stable*.
    threshold: f64,
    /// EWMA weight of each new point in the stable prediction, in `[0, 1]`.
    stable_weight: f64,
}

impl TrendRule {
    /// The rule for a `Q_f` threshold and a stable EWMA weight (clamped into `[0, 1]` so a bad
    /// config cannot panic here; configs validate it earlier).
    pub fn new(threshold: f64, stable_weight: f64) -> Self {
        let rule = TrendRule { threshold, stable_weight: usable_ewma_weight(stable_weight) };
        debug_assert!((0.0..=1.0).contains(&rule.stable_weight), "stable weight {} is a fraction", rule.stable_weight);
        rule
    }
}

/// TAP's trend state machine for one server, with the least-squares fit through the points of
/// the current trend kept as running moments (Welford's update) instead of the points
/// themselves: a fit costs O(1) time and memory however long the trend runs, where refitting a
/// kept list cost O(points) per feedback and a heap allocation per server.
#[derive(Clone, Debug, PartialEq)]
pub struct TrendTracker {
    state: Trend,
    dq_last: i64,
    /// Points in the current fit: 0 before any feedback, 1 while stable (the newest).
    n: u32,
    /// The newest point `(receipt time, Q_f)`: it may start the next trend.
    last: (Nanos, f64),
    /// Receipt time of the fit's first point; the fit's times are milliseconds since it.
    origin: Nanos,
    /// Mean time (ms since `origin`) and mean `Q_f` of the fit's points.
    mean_t: f64,
    mean_q: f64,
    /// Sum of squared time deviations, and of time × `Q_f` deviation products.
    m_tt: f64,
    c_tq: f64,
    /// EWMA of the points since the trend became stable (a value once stable with `n > 0`).
    stable: f64,
}

const _: () = assert!(size_of::<TrendTracker>() <= 80, "one per server and coordinator: kept small");

impl Default for TrendTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl TrendTracker {
    /// A tracker in the *stable* state with no points.
    pub fn new() -> Self {
        TrendTracker {
            state: Trend::Stable,
            dq_last: 0,
            n: 0,
            last: (0, 0.0),
            origin: 0,
            mean_t: 0.0,
            mean_q: 0.0,
            m_tt: 0.0,
            c_tq: 0.0,
            stable: 0.0,
        }
    }

    /// The current trend.
    pub fn state(&self) -> Trend {
        self.state
    }

    /// Points in the current trend's fit (1 while stable: the newest).
    pub fn points(&self) -> u32 {
        self.n
    }

    /// Fold in feedback `(Q_f, dq)` received at `now`: judge the trend, select the points.
    pub fn observe(&mut self, rule: &TrendRule, now: Nanos, q_f: f64, dq: i64) {
        debug_assert!(q_f.is_finite() && q_f >= 0.0, "a queue length is a count: {q_f}");
        let next = self.next_state(rule, q_f, dq);
        let stable_before = self.state == Trend::Stable && self.n > 0;
        if next != self.state || next == Trend::Stable {
            // The last point of the old trend is kept only when it can start the new one; while
            // stable, the EWMA summarises the older points and only the newest is kept.
            let keep = self.n > 0
                && match (self.state, next) {
                    (Trend::Stable, Trend::Increase) => true,
                    (Trend::Increase, Trend::Decrease) => self.last.1 > q_f,
                    (Trend::Decrease, Trend::Increase) => self.last.1 < q_f,
                    _ => false,
                };
            let boundary = self.last;
            self.n = 0;
            if keep {
                self.add(boundary);
            }
        }
        if next == Trend::Stable {
            // as `Ewma::update`: the first point after a change of state becomes the value
            let w = rule.stable_weight;
            self.stable = if stable_before { w * q_f + (1.0 - w) * self.stable } else { q_f };
        }
        self.add((now, q_f));
        self.state = next;
        self.dq_last = dq;
        debug_assert!(self.n >= 1, "a tracker that observed a point has a fit");
        debug_assert!(next != Trend::Stable || self.n == 1, "while stable only the newest point is kept, not {}", self.n);
        debug_assert!(next != Trend::Stable || (self.stable.is_finite() && self.stable >= 0.0), "stable EWMA {}", self.stable);
    }

    /// The state feedback `(Q_f, dq)` moves to.
    fn next_state(&self, rule: &TrendRule, q_f: f64, dq: i64) -> Trend {
        let d2 = dq.saturating_sub(self.dq_last);
        if q_f <= rule.threshold {
            return Trend::Stable;
        }
        match self.state {
            Trend::Stable if dq > 0 && d2 > 0 => Trend::Increase,
            Trend::Stable if dq < 0 && d2 < 0 => Trend::Decrease,
            Trend::Increase if dq < 0 || d2 < 0 => Trend::Decrease,
            Trend::Decrease if dq > 0 || d2 > 0 => Trend::Increase,
            same => same,
        }
    }

    /// Add a point to the fit (the first one sets the time origin).
    fn add(&mut self, (t, q): (Nanos, f64)) {
        if self.n == 0 {
            (self.origin, self.mean_t, self.mean_q, self.m_tt, self.c_tq) = (t, 0.0, 0.0, 0.0, 0.0);
        }
        // a trend of 4 G feedbacks (a store node up for days in one trend) keeps its count there:
        // each new point then weighs 1 / 2^32, where it would have weighed less
        self.n = self.n.saturating_add(1);
        let n = self.n as f64;
        let x = ms_between(self.origin, t);
        let dx = x - self.mean_t;
        self.mean_t += dx / n;
        self.mean_q += (q - self.mean_q) / n;
        self.m_tt += dx * (x - self.mean_t);
        self.c_tq += dx * (q - self.mean_q);
        self.last = (t, q);
        debug_assert!(self.m_tt >= 0.0, "a sum of squared time deviations is not negative: {}", self.m_tt);
        debug_assert!(self.mean_q.is_finite() && self.mean_q >= 0.0, "mean queue {} of counts", self.mean_q);
    }

    /// The predicted queue length at `now` (never negative), if any feedback was seen: the
    /// stable EWMA, or the least-squares line through the trend's points (flat at their mean
    /// when they are one point or one instant).
    pub fn predict(&self, now: Nanos) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let q = match self.state {
            Trend::Stable => self.stable,
            Trend::Increase | Trend::Decrease => {
                let slope = if self.m_tt > 0.0 { self.c_tq / self.m_tt } else { 0.0 };
                debug_assert!(slope.is_finite(), "a fitted slope is finite: {self:?}");
                self.mean_q + slope * (ms_between(self.origin, now) - self.mean_t)
            }
        };
        debug_assert!(!q.is_nan(), "a predicted queue is a number: {self:?}");
        Some(q.max(0.0))
    }
}

/// What one coordinator keeps about one server.
#[derive(Clone, Debug)]
struct Server {
    feedback: ServerFeedback,
    trend: TrendTracker,
    /// `f_s`: times the server was a candidate but not chosen since its newest feedback.
    not_chosen: u32,
}

/// `tap` selector for one coordinator.
pub struct Tap {
    weight: f64,
    exponent: f64,
    staleness: Nanos,
    /// EWMA weight of the feedback averages.
    ewma: FeedbackWeight,
    rule: TrendRule,
    /// State per server this coordinator has sent to or heard from (a server never dealt with
    /// scores as one without feedback).
    servers: NodeMap<Server>,
    rng: Rng,
}

impl Tap {
    /// Build for one coordinator. Call [`TapConfig::validate`] first to report bad values; here
    /// they are only kept from panicking.
    pub fn new(cfg: &TapConfig, env: &SelectorEnv) -> Self {
        let weight = cfg.concurrency_weight.unwrap_or(env.coordinators as f64);
        debug_assert!(env.coordinators > 0, "a selector runs on one of the coordinators");
        Tap {
            weight: if weight.is_finite() { weight.max(0.0) } else { env.coordinators as f64 },
            exponent: cfg.score_exponent,
            staleness: from_ms(cfg.staleness_ms),
            ewma: FeedbackWeight::new(cfg.ewma_weight),
            rule: TrendRule::new(cfg.trend_queue_threshold, cfg.stable_ewma_weight),
            servers: NodeMap::new(),
            rng: Rng::new(env.seed, 0x7A9 + ((env.coordinator as u64) << 8)),
        }
    }

    #[inline]
    fn server_mut(&mut self, node: NodeId) -> &mut Server {
        self.servers.get_or_insert_with(node, || Server {
            feedback: ServerFeedback::default(),
            trend: TrendTracker::new(),
            not_chosen: 0,
        })
    }

    #[inline]
    fn server(&self, node: NodeId) -> Option<&Server> {
        self.servers.get(node)
    }

    /// The feedback state kept for `node`, if it was ever seen.
    pub fn feedback(&self, node: NodeId) -> Option<&ServerFeedback> {
        self.server(node).map(|s| &s.feedback)
    }

    /// The trend tracker kept for `node`, if it was ever seen.
    pub fn trend(&self, node: NodeId) -> Option<&TrendTracker> {
        self.server(node).map(|s| &s.trend)
    }

    /// `f_s` for `node`: times it was passed over since its newest feedback.
    pub fn not_chosen(&self, node: NodeId) -> u32 {
        self.server(node).map_or(0, |s| s.not_chosen)
    }

    /// TAP's queue estimate for `node` at `now` (Algorithm 1), if it has sent feedback.
    pub fn q_hat(&self, now: Nanos, node: NodeId) -> Option<f64> {
        self.q_hat_of(now, self.server(node)?)
    }

    /// [`Tap::q_hat`] for a server's state already looked up.
    #[inline]
    fn q_hat_of(&self, now: Nanos, s: &Server) -> Option<f64> {
        let received = s.feedback.received_at()?;
        let tau_w = now.saturating_sub(received);
        if tau_w < self.staleness {
            return s.feedback.q_hat(self.weight);
        }
        if s.feedback.outstanding() == 0 && s.not_chosen == 0 {
            return Some(0.0);
        }
        let predicted = s.trend.predict(now)?;
        debug_assert!(predicted >= 0.0, "a predicted queue is never negative: {predicted}");
        let q_hat = s.feedback.q_hat_with(self.weight, predicted);
        debug_assert!(q_hat >= 1.0, "q̂ counts the request itself: {q_hat}");
        Some(q_hat)
    }

    /// TAP's score of `node` at `now` (lower is better; 0 without feedback).
    pub fn score(&self, now: Nanos, node: NodeId) -> f64 {
        let Some(s) = self.server(node) else { return 0.0 };
        self.q_hat_of(now, s).map_or(0.0, |q| s.feedback.score_with(q, self.exponent))
    }
}

impl ReplicaSelector for Tap {
    fn select(&mut self, now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        let mut rng = self.rng.clone();
        let chosen = argmin_random_ties(replicas, &mut rng, |&r| self.score(now, r));
        self.rng = rng;
        let Some(i) = chosen else {
            return Decision::Wait { retry_at: None };
        };
        let pick = replicas[i];
        let pick_not_chosen = self.not_chosen(pick);
        // `f_s` matters only once `s` has sent feedback (which resets it), so a server without
        // state gets none here: most servers a coordinator passes over at scale never answer it
        for &r in replicas {
            if let Some(s) = self.servers.get_mut(r).filter(|_| r != pick) {
                s.not_chosen = s.not_chosen.saturating_add(1);
            }
        }
        debug_assert_eq!(self.not_chosen(pick), pick_not_chosen, "the chosen server is not passed over");
        Decision::to(pick)
    }

    fn footprint(&self, servers: &[NodeId], reach: Reach, out: &mut dyn FnMut(*const u8)) -> bool {
        self.servers.footprint(servers, reach, out);
        true
    }

    fn on_sent(&mut self, _now: Nanos, _req: &RequestView, replica: NodeId) {
        self.server_mut(replica).feedback.sent();
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        let (rule, ewma) = (self.rule, self.ewma);
        let s = self.server_mut(resp.replica);
        if s.feedback.respond(now, resp, ewma) {
            debug_assert_eq!(s.feedback.received_at(), Some(now), "applied feedback is stamped at receipt");
            s.trend.observe(&rule, now, resp.feedback.queue_len as f64, resp.feedback.dq);
            s.not_chosen = 0;
        }
    }
}


/// `tap`: TAP (trend-aware C3).
pub const REGISTRATION: Registration = Registration {
    name: "tap",
    source: "TAP (trend-aware C3)",
    needs: Needs { facts: &[Fact::Dq, Fact::QueueLen, Fact::ServiceTime], ..Needs::NOTHING },
    build: |cfg, env| Box::new(Tap::new(&cfg.tap, env)),
    validate: |cfg| cfg.tap.validate().map_err(|e| tunable("tap", e)),
};

#[cfg(test)]
mod tests {
    use super::super::c3::{C3Config, C3};
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::facts::Feedback;
    use crate::model::SizeHint;

    fn fb(queue_len: u32, service_ms: u64, dq: i64) -> Feedback {
        Feedback { queue_len, service_time: service_ms * MS, dq, ..Feedback::default() }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn with_fresh_feedback_it_scores_like_c3() {
        let env = SelectorEnv { coordinators: 3, ..env(5) };
        let mut tap = Tap::new(&TapConfig::default(), &env);
        let c3_cfg = C3Config { rate_control: false, backpressure: false, ..C3Config::default() };
        let mut c3 = C3::new(&c3_cfg, &env);
        let h = SizeHint::default();
        let events =
            [(10, 1, 0, fb(3, 2, 1)), (12, 2, 4, fb(40, 1, 5)), (15, 3, 1, fb(7, 3, -2)), (20, 2, 13, fb(45, 1, 5))];
        for (now, replica, sent, f) in events {
            let r = response(1, replica, sent * MS, false, f);
            tap.on_response(now * MS, &r);
            c3.on_response(now * MS, &r);
        }
        let a = read(1, 0, h);
        for s in [&mut tap as &mut dyn ReplicaSelector, &mut c3] {
            s.on_sent(21 * MS, &a, 3);
            s.on_sent(21 * MS, &a, 1);
            s.on_sent(22 * MS, &a, 1);
        }
        for node in 1..=3 {
            assert!(tap.score(30 * MS, node) > 0.0);
            assert_eq!(tap.score(30 * MS, node), c3.score(node), "node {node}");
            assert_eq!(tap.q_hat(30 * MS, node), c3.q_hat(node));
        }
        // server 1: delay 8 ms, q̂ = 1 + 2·3 + 3 = 10, score 8 + 1000·2 = 2008 ms
        assert_eq!(tap.score(30 * MS, 1), 2008.0 * MS as f64);
        let t = replica_of(tap.select(30 * MS, &read(2, 30 * MS, h), &[1, 2, 3], &Blind));
        let c = replica_of(c3.select(30 * MS, &read(2, 30 * MS, h), &[1, 2, 3], &Blind));
        assert_eq!(t, c);
    }

    /// Increase → stable drops the old points: the prediction is the new point alone, while
    /// C3's q̄ still remembers the spike. Before 100 ms TAP uses q̄, from 100 ms the prediction.
    #[test]
    fn after_100_ms_without_feedback_it_switches_to_the_prediction() {
        let mut tap = Tap::new(&TapConfig::default(), &env(5));
        // Q_f = 100, dq = 10 (d2 = 10): stable → increase
        tap.on_response(10 * MS, &response(1, 1, 0, false, fb(100, 1, 10)));
        assert_eq!(tap.trend(1).unwrap().state(), Trend::Increase);
        // Q_f = 10 ≤ 30: stable, points = [10]; q̄ = 0.9·10 + 0.1·100 = 19
        tap.on_response(20 * MS, &response(2, 1, 11 * MS, false, fb(10, 1, -20)));
        assert_eq!(tap.trend(1).unwrap().state(), Trend::Stable);
        assert_eq!(tap.trend(1).unwrap().points(), 1);
        assert_eq!(tap.trend(1).unwrap().predict(20 * MS), Some(10.0));
        assert!(close(tap.feedback(1).unwrap().queue().unwrap(), 19.0));
        tap.on_sent(25 * MS, &read(3, 25 * MS, SizeHint::default()), 1);
        // τ_w = 99.999999 ms: fresh, C3's estimate 1 + 1·1 + 19
        assert!(close(tap.q_hat(119_999_999, 1).unwrap(), 21.0));
        // τ_w = 100 ms: prediction 10
        assert!(close(tap.q_hat(120 * MS, 1).unwrap(), 12.0));
        // delay: (20 − 11 − 1) ms weighted with (10 − 0 − 1): 0.9·8 + 0.1·9 = 8.1 ms; service 1 ms
        assert!(close(tap.score(120 * MS, 1), (8.1 + 12f64.powi(3)) * MS as f64));
    }

    /// A rising sequence enters *increase*; the least-squares line through (0, 40), (10, 52),
    /// (20, 58) ms has slope 0.9/ms through the mean (10, 50): at 150 ms it predicts 176.
    #[test]
    fn a_rising_sequence_enters_increase_and_the_fit_extrapolates() {
        let mut tap = Tap::new(&TapConfig::default(), &env(5));
        let seq = [(0, 40, 5), (10, 52, 6), (20, 58, 7)];
        for (i, &(t, q, dq)) in seq.iter().enumerate() {
            tap.on_response((100 + t) * MS, &response(i as u64, 2, 99 * MS, false, fb(q, 1, dq)));
            assert_eq!(tap.trend(2).unwrap().state(), Trend::Increase, "after point {i}");
        }
        assert_eq!(tap.trend(2).unwrap().points(), 3);
        assert!(close(tap.trend(2).unwrap().predict(250 * MS).unwrap(), 176.0));
        assert!(close(tap.trend(2).unwrap().predict(120 * MS).unwrap(), 59.0));
        // stale (τ_w = 130 ms) with one request outstanding: q̂ = 1 + 1 + 176
        tap.on_sent(121 * MS, &read(9, 121 * MS, SizeHint::default()), 2);
        assert!(close(tap.q_hat(250 * MS, 2).unwrap(), 178.0));
    }

    const RULE: TrendRule = TrendRule { threshold: 30.0, stable_weight: 0.9 };

    #[test]
    fn decrease_keeps_a_higher_boundary_point_and_the_prediction_is_clamped_at_zero() {
        let mut t = TrendTracker::new();
        assert_eq!(t.predict(0), None);
        t.observe(&RULE, 0, 40.0, 5); // stable → increase
        t.observe(&RULE, 10 * MS, 60.0, 8);
        // dq < 0: increase → decrease; the boundary 60 > 50 starts the new trend
        t.observe(&RULE, 20 * MS, 50.0, -3);
        assert_eq!((t.state(), t.points()), (Trend::Decrease, 2));
        // the line through (10, 60) and (20, 50): slope −1/ms, 0 at 70 ms, clamped after
        assert!(close(t.predict(40 * MS).unwrap(), 30.0));
        assert_eq!(t.predict(500 * MS), Some(0.0));
        // dq > 0: decrease → increase; the boundary 50 is not below 45: dropped
        t.observe(&RULE, 30 * MS, 45.0, 1);
        assert_eq!((t.state(), t.points()), (Trend::Increase, 1));
        // a single point: flat line
        assert_eq!(t.predict(90 * MS), Some(45.0));
        // increase → decrease with a boundary below the new feedback: dropped
        t.observe(&RULE, 40 * MS, 47.0, -1);
        assert_eq!((t.state(), t.points()), (Trend::Decrease, 1));
        assert_eq!(t.predict(90 * MS), Some(47.0));
        // decrease → increase with a boundary below the new feedback: kept, slope 0.5/ms
        t.observe(&RULE, 50 * MS, 52.0, 3);
        assert_eq!((t.state(), t.points()), (Trend::Increase, 2));
        assert!(close(t.predict(60 * MS).unwrap(), 57.0));
        // back under the threshold: stable, old points dropped, EWMA of the stable ones
        t.observe(&RULE, 60 * MS, 20.0, -10);
        t.observe(&RULE, 70 * MS, 10.0, -2);
        assert_eq!((t.state(), t.points()), (Trend::Stable, 1));
        assert!(close(t.predict(900 * MS).unwrap(), 0.9 * 10.0 + 0.1 * 20.0));
        // stable → decrease needs dq < 0 and d2 < 0 (here d2 = −3 − (−2) = −1)
        t.observe(&RULE, 80 * MS, 35.0, -3);
        assert_eq!((t.state(), t.points()), (Trend::Decrease, 1));
        // the stable EWMA starts again from the first stable point after a trend
        t.observe(&RULE, 90 * MS, 12.0, -4);
        assert_eq!(t.predict(90 * MS), Some(12.0));
    }

    #[test]
    fn stable_to_increase_needs_both_signs_and_keeps_the_boundary() {
        let mut t = TrendTracker::new();
        t.observe(&RULE, 0, 20.0, 5);
        // dq > 0 but d2 = 4 − 5 < 0: stays stable
        t.observe(&RULE, MS, 35.0, 4);
        assert_eq!(t.state(), Trend::Stable);
        t.observe(&RULE, 2 * MS, 40.0, 6);
        // the boundary (1 ms, 35) starts the trend: the line through it and (2 ms, 40)
        assert_eq!((t.state(), t.points()), (Trend::Increase, 2));
        assert!(close(t.predict(4 * MS).unwrap(), 50.0));
    }

    /// The running moments give the two-pass least-squares line through every point of a long
    /// noisy trend (far more points than any kept list held).
    #[test]
    fn the_running_fit_matches_a_two_pass_fit_over_a_long_trend() {
        let mut t = TrendTracker::new();
        let mut rng = Rng::new(7, 1);
        let mut points = Vec::new();
        for i in 0..20_000u64 {
            let at = 5 * MS + i * 250_000 + (rng.next_u64() % 100_000);
            let q = 40.0 + 0.02 * i as f64 + (rng.next_u64() % 9) as f64;
            t.observe(&RULE, at, q, 5);
            points.push((at, q));
        }
        assert_eq!((t.state(), t.points()), (Trend::Increase, 20_000));
        let ms = |at: Nanos| at as f64 / MS as f64;
        let n = points.len() as f64;
        let mean_t = points.iter().map(|&(at, _)| ms(at)).sum::<f64>() / n;
        let mean_q = points.iter().map(|&(_, q)| q).sum::<f64>() / n;
        let sxy: f64 = points.iter().map(|&(at, q)| (ms(at) - mean_t) * (q - mean_q)).sum();
        let sxx: f64 = points.iter().map(|&(at, _)| (ms(at) - mean_t).powi(2)).sum();
        let at = 6_000 * MS;
        let two_pass = mean_q + sxy / sxx * (ms(at) - mean_t);
        let running = t.predict(at).unwrap();
        assert!((running - two_pass).abs() < 1e-9 * two_pass, "{running} against {two_pass}");
    }

    /// `os_s == 0 && f_s == 0` with stale feedback: q̂ = 0, the server is probed; once passed
    /// over (f_s = 1) the prediction is used again.
    #[test]
    fn probe_rule_for_a_stale_unneeded_server() {
        let mut tap = Tap::new(&TapConfig::default(), &env(5));
        let h = SizeHint::default();
        // server 1: slow and stale; server 2: fresh and fast
        tap.on_response(10 * MS, &response(1, 1, 0, false, fb(20, 4, 0)));
        assert_eq!(tap.q_hat(50 * MS, 1), Some(21.0));
        assert_eq!(tap.q_hat(110 * MS, 1), Some(0.0));
        // delay 6 ms only
        assert_eq!(tap.score(110 * MS, 1), 6.0 * MS as f64);
        tap.on_response(105 * MS, &response(2, 2, 100 * MS, false, fb(2, 1, 0)));
        // server 2: delay 4 + 3³·1 = 31 ms > 6 ms: server 1 is probed
        assert_eq!(replica_of(tap.select(110 * MS, &read(3, 110 * MS, h), &[1, 2], &Blind)), 1);
        assert_eq!(tap.not_chosen(2), 1);
        // make server 1 lose once: with os_s = 0 and f_s = 0 it probes, so send to it first ...
        tap.on_sent(110 * MS, &read(3, 110 * MS, h), 1);
        // ... now os_s = 1: q̂ = 1 + 1 + prediction (stable EWMA 20) = 22
        assert_eq!(tap.q_hat(120 * MS, 1), Some(22.0));
        assert_eq!(replica_of(tap.select(120 * MS, &read(4, 120 * MS, h), &[1, 2], &Blind)), 2);
        assert_eq!(tap.not_chosen(1), 1);
        // the probe answered stale feedback: counted (os_s = 0) but f_s stays 1, so no probe
        let mut stale = response(3, 1, 110 * MS, false, fb(20, 4, 0));
        stale.fresh = false;
        tap.on_response(130 * MS, &stale);
        assert_eq!(tap.feedback(1).unwrap().outstanding(), 0);
        assert_eq!(tap.q_hat(130 * MS, 1), Some(21.0));
        // fresh feedback resets f_s and τ_w
        tap.on_response(131 * MS, &response(4, 1, 110 * MS, false, fb(20, 4, 0)));
        assert_eq!(tap.not_chosen(1), 0);
        assert_eq!(tap.q_hat(231 * MS, 1), Some(0.0));
    }

    #[test]
    fn config_defaults_and_validation() {
        let c = TapConfig::default();
        assert!(c.validate().is_ok());
        assert_eq!(serde_json::from_str::<TapConfig>("{}").unwrap(), c);
        let bad = TapConfig { stable_ewma_weight: 1.5, ..TapConfig::default() };
        assert_eq!(bad.validate().unwrap_err().field, "stable_ewma_weight");
        assert!(serde_json::from_str::<TapConfig>(r#"{"max_points": 1000}"#).is_err(), "no longer a field");
    }
}
