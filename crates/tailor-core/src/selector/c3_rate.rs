//! C3's per-(coordinator, server) cubic rate limiter (C3 §4, Algorithm 2; absim constants).
//!
//! A token bucket whose rate `srate` (tokens per interval `δ`) adapts to the receive rate
//! `rrate` (responses per `δ`) with a CUBIC-like law. Tokens are refilled lazily from `now`, so
//! the limiter needs no timer.
//!
//! Choices (absim's behaviour unless noted):
//! - The bucket is empty at the engine's time origin and fills continuously at `srate / δ`, capped
//!   at `max_tokens`; in the simulator the first token appears `δ / initial_rate` = 4 ms after
//!   t = 0, in the store (monotonic clock far from 0) the bucket starts full.
//! - Accrued tokens are settled at the old rate before `srate` changes (absim recomputed them from
//!   the last send at the new rate, which credits or debits tokens retroactively).
//! - A forced send (no token, backpressure off) still takes a token, so the bucket goes into debt
//!   (absim's `forceUpdates`).
//! - `rrate` slots are absim's: a slot closes at the first response more than `δ` after it opened,
//!   its count is folded into the EWMA and a new slot opens then; idle gaps are not counted as
//!   empty slots.
//! - Cubic time `ΔT` is in milliseconds, as absim's `C = 4e-6` assumes; the increase sets
//!   `srate ← min(srate + s_max, R)` even when `R < srate` (absim does the same).
//! - The decrease fires when at least `hysteresis` has passed since the last increase (the project's
//!   rule, docs/strategies.md, says "at least"; absim used a strict `>`).

use crate::time::{to_ms, Nanos, MS};

/// Constants of the cubic rate limiter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateParams {
    /// Rate interval `δ`: `srate` and `rrate` count requests per this long.
    pub interval: Nanos,
    /// `srate` before any adaptation, in tokens per interval.
    pub initial_rate: f64,
    /// Bucket capacity in tokens.
    pub max_tokens: f64,
    /// Saturation rate `R0` before any decrease.
    pub initial_r0: f64,
    /// `rrate` before any slot closed.
    pub initial_rrate: f64,
    /// EWMA weight of a closed slot's count in `rrate`.
    pub rrate_weight: f64,
    /// Cubic scaling `γ` (absim's `C`), with `ΔT` in milliseconds.
    pub gamma: f64,
    /// Cap `s_max` on one increase step, in tokens per interval.
    pub s_max: f64,
    /// Multiplicative decrease factor `β`.
    pub beta: f64,
    /// Time after an increase before a decrease may happen.
    pub hysteresis: Nanos,
    /// `srate` never goes below this.
    pub rate_floor: f64,
}

impl Default for RateParams {
    fn default() -> Self {
        RateParams {
            interval: 20 * MS,
            initial_rate: 5.0,
            max_tokens: 50.0,
            initial_r0: 10.0,
            initial_rrate: 10.0,
            rrate_weight: 0.9,
            gamma: 4e-6,
            s_max: 10.0,
            beta: 0.2,
            hysteresis: 40 * MS,
            rate_floor: 1e-4,
        }
    }
}

/// What a response did to `srate`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RateChange {
    /// `srate` was left alone.
    Unchanged,
    /// `srate < rrate`: the cubic law set a new rate.
    Increased {
        /// `srate` before.
        from: f64,
        /// `srate` after.
        to: f64,
    },
    /// `srate > rrate` after the hysteresis: multiplied by `β`.
    Decreased {
        /// `srate` before (the new `R0`).
        from: f64,
        /// `srate` after.
        to: f64,
    },
}

/// One coordinator's token bucket and rate adaptation for one server.
#[derive(Clone, Debug, PartialEq)]
pub struct CubicRateLimiter {
    /// Sending rate, tokens per interval.
    srate: f64,
    /// Tokens at `tokens_at` (may be negative after forced sends).
    tokens: f64,
    /// When `tokens` was last settled.
    tokens_at: Nanos,
    /// `srate` at the last decrease.
    r0: f64,
    /// Time of the last decrease.
    last_decrease: Nanos,
    /// Time of the last increase.
    last_increase: Nanos,
    /// EWMA of responses per closed slot.
    rrate: f64,
    /// Responses in the open slot.
    slot_count: u64,
    /// When the open slot opened.
    slot_start: Nanos,
}

impl CubicRateLimiter {
    /// A limiter in its initial state (empty bucket at time 0).
    pub fn new(p: &RateParams) -> Self {
        CubicRateLimiter {
            srate: p.initial_rate.max(p.rate_floor),
            tokens: 0.0,
            tokens_at: 0,
            r0: p.initial_r0,
            last_decrease: 0,
            last_increase: 0,
            rrate: p.initial_rrate,
            slot_count: 0,
            slot_start: 0,
        }
    }

    /// Current sending rate, tokens per interval.
    pub fn srate(&self) -> f64 {
        self.srate
    }

    /// Saturation rate `R0` recorded at the last decrease.
    pub fn r0(&self) -> f64 {
        self.r0
    }

    /// Receive rate as of the last closed slot.
    pub fn rrate(&self) -> f64 {
        self.rrate
    }

    /// Tokens available at `now`.
    pub fn tokens(&self, p: &RateParams, now: Nanos) -> f64 {
        let elapsed = now.saturating_sub(self.tokens_at) as f64;
        let accrued = self.srate * elapsed / p.interval.max(1) as f64;
        debug_assert!(accrued >= 0.0, "a positive rate accrues no negative tokens: {accrued}");
        (self.tokens + accrued).min(p.max_tokens)
    }

    /// Whether a request may be sent at `now`. A hair of tolerance so that the instant returned
    /// by [`CubicRateLimiter::token_time`] always qualifies despite rounding.
    pub fn has_token(&self, p: &RateParams, now: Nanos) -> bool {
        self.tokens(p, now) >= 1.0 - 1e-9
    }

    /// The earliest time `>= now` at which a token is available.
    pub fn token_time(&self, p: &RateParams, now: Nanos) -> Nanos {
        if self.has_token(p, now) {
            return now;
        }
        // Measured from the last settlement rather than from `now`, so every caller before the
        // refill gets the same instant whatever rounding `now` brings. Below one token the cap
        // cannot bind (it is at least 1), so the linear refill is exact.
        let wait = ((1.0 - self.tokens) * p.interval as f64 / self.srate).ceil();
        // With the floor rate the wait is ~200 s per token, far from overflowing; saturate anyway.
        let at = if wait >= (Nanos::MAX - self.tokens_at) as f64 { Nanos::MAX } else { self.tokens_at + wait as Nanos };
        debug_assert!(wait > 0.0, "below one token the wait is positive: {wait}");
        at.max(now)
    }

    /// Take a token for a send at `now` (into debt if none is there).
    pub fn consume(&mut self, p: &RateParams, now: Nanos) {
        self.settle(p, now);
        self.tokens -= 1.0;
        // at most the cap, less one; a debt of a token per send in flight at most
        debug_assert!(self.tokens.is_finite() && self.tokens <= p.max_tokens - 1.0 + 1e-9, "tokens {}", self.tokens);
    }

    /// Count a response at `now` and adapt `srate` (C3 Algorithm 2).
    pub fn on_response(&mut self, p: &RateParams, now: Nanos) -> RateChange {
        self.roll_slot(p, now);
        self.slot_count += 1;
        let from = self.srate;
        debug_assert!(from.is_finite() && from >= p.rate_floor, "srate {from} below the floor {}", p.rate_floor);
        debug_assert!(self.rrate.is_finite() && self.rrate >= 0.0, "rrate {} is a count per interval", self.rrate);
        if self.srate < self.rrate {
            let dt_ms = to_ms(now.saturating_sub(self.last_decrease));
            let k = (p.beta * self.r0 / p.gamma).cbrt();
            let cubic = p.gamma * (dt_ms - k).powi(3) + self.r0;
            let to = (self.srate + p.s_max).min(cubic).max(p.rate_floor);
            debug_assert!(to <= from + p.s_max, "one increase is at most s_max: {from} -> {to}");
            self.last_increase = now;
            self.set_rate(p, now, to);
            RateChange::Increased { from, to }
        } else if self.srate > self.rrate && now.saturating_sub(self.last_increase) >= p.hysteresis {
            self.r0 = self.srate;
            let to = (self.srate * p.beta).max(p.rate_floor);
            debug_assert!(to <= from, "a decrease never raises the rate: {from} -> {to}");
            debug_assert!(self.r0 > 0.0, "R0 is a rate that was in use: {}", self.r0);
            self.last_decrease = now;
            self.set_rate(p, now, to);
            RateChange::Decreased { from, to }
        } else {
            RateChange::Unchanged
        }
    }

    /// Close the open `rrate` slot if it has lasted more than an interval.
    fn roll_slot(&mut self, p: &RateParams, now: Nanos) {
        if now.saturating_sub(self.slot_start) > p.interval {
            debug_assert!((0.0..=1.0).contains(&p.rrate_weight), "rrate weight {} is a fraction", p.rrate_weight);
            self.rrate = p.rrate_weight * self.slot_count as f64 + (1.0 - p.rrate_weight) * self.rrate;
            debug_assert!(self.rrate.is_finite() && self.rrate >= 0.0, "rrate {} is a count per interval", self.rrate);
            self.slot_count = 0;
            self.slot_start = now;
        }
    }

    /// Bank the tokens accrued so far at the current rate.
    fn settle(&mut self, p: &RateParams, now: Nanos) {
        if now > self.tokens_at {
            self.tokens = self.tokens(p, now);
            self.tokens_at = now;
        }
        debug_assert!(self.tokens <= p.max_tokens, "tokens {} above the cap {}", self.tokens, p.max_tokens);
    }

    fn set_rate(&mut self, p: &RateParams, now: Nanos, rate: f64) {
        debug_assert!(rate.is_finite() && rate >= p.rate_floor, "new srate {rate} below the floor {}", p.rate_floor);
        self.settle(p, now);
        self.srate = rate;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn bucket_fills_at_srate_per_interval_and_caps() {
        let p = RateParams::default();
        let l = CubicRateLimiter::new(&p);
        // 5 tokens per 20 ms: one every 4 ms
        assert!(!l.has_token(&p, 3 * MS));
        assert_eq!(l.token_time(&p, 0), 4 * MS);
        assert_eq!(l.token_time(&p, MS), 4 * MS);
        assert!(l.has_token(&p, 4 * MS));
        assert!(close(l.tokens(&p, 10 * MS), 2.5));
        assert_eq!(l.tokens(&p, 10_000 * MS), 50.0);
    }

    #[test]
    fn consume_goes_into_debt_and_delays_the_next_token() {
        let p = RateParams::default();
        let mut l = CubicRateLimiter::new(&p);
        l.consume(&p, 4 * MS);
        assert!(close(l.tokens(&p, 4 * MS), 0.0));
        l.consume(&p, 4 * MS);
        assert!(close(l.tokens(&p, 4 * MS), -1.0));
        // two tokens short: 8 ms at 4 ms per token
        assert_eq!(l.token_time(&p, 4 * MS), 12 * MS);
    }

    /// A cubic increase (srate < rrate), then a decrease once 2·δ have passed since it.
    #[test]
    fn cubic_increase_then_decrease_after_hysteresis() {
        let p = RateParams::default();
        let mut l = CubicRateLimiter::new(&p);
        // t = 1 ms: rrate 10 > srate 5; ΔT = 1 ms since the (initial) decrease at 0, R0 = 10:
        // k = cbrt(0.2·10/4e-6) = cbrt(500000) = 79.37005259840998
        // R = 4e-6·(1 − k)³ + 10 = 4e-6·(−78.37005259840998)³ + 10 = 8.07464682
        let k: f64 = 500_000f64.cbrt();
        assert!(close(k, 79.370_052_598_41));
        let r = 4e-6 * (1.0 - k).powi(3) + 10.0;
        assert!(close(r, 8.074_646_82), "{r}");
        match l.on_response(&p, MS) {
            RateChange::Increased { from, to } => {
                assert_eq!(from, 5.0);
                assert!(close(to, r));
            }
            other => panic!("{other:?}"),
        }
        // tokens accrued before the change stay at the old rate: 1 ms at 5/20 = 0.25
        assert!(close(l.tokens(&p, MS), 0.25));
        // t = 25 ms: the first slot closes with 1 response: rrate = 0.9·1 + 0.1·10 = 1.9 < srate,
        // but only 24 ms since the increase (< 40 ms): no change.
        assert_eq!(l.on_response(&p, 25 * MS), RateChange::Unchanged);
        assert!(close(l.rrate(), 1.9));
        // t = 40.999 ms: still inside the hysteresis
        assert_eq!(l.on_response(&p, 40_999_999), RateChange::Unchanged);
        // t = 41 ms: exactly 2·δ after the increase: srate ← 0.2·srate, R0 ← old srate
        match l.on_response(&p, 41 * MS) {
            RateChange::Decreased { from, to } => {
                assert!(close(from, r));
                assert!(close(to, 0.2 * r));
            }
            other => panic!("{other:?}"),
        }
        assert!(close(l.r0(), r));
        assert!(close(l.srate(), 0.2 * r));
    }

    /// After a decrease the cubic law climbs back: steeply first (capped by `s_max`), then
    /// flattening towards `R0` (the saddle).
    #[test]
    fn cubic_increase_after_decrease_is_capped_by_s_max_then_follows_the_curve() {
        let p = RateParams::default();
        // As if a decrease at 100 ms took srate from 40 to 8, and 30 responses per slot are
        // measured; the open slot started at 110 ms so it does not close during the test.
        let mut l = CubicRateLimiter {
            srate: 8.0,
            r0: 40.0,
            last_decrease: 100 * MS,
            last_increase: 60 * MS,
            rrate: 30.0,
            slot_start: 110 * MS,
            ..CubicRateLimiter::new(&p)
        };
        // k = cbrt(0.2·40/4e-6) = cbrt(2e6) = 125.992104989487
        // R(ΔT) = 4e-6·(ΔT − k)³ + 40: R(21) = 35.37054443, R(22) = 35.50156863, R(23) = 35.63009702
        let r = |dt: f64| 4e-6 * (dt - 2e6f64.cbrt()).powi(3) + 40.0;
        assert!(close(r(21.0), 35.370_544_43));
        assert!(close(r(23.0), 35.630_097_02));
        // steep region: the step is capped at s_max = 10
        assert_eq!(l.on_response(&p, 121 * MS), RateChange::Increased { from: 8.0, to: 18.0 });
        assert_eq!(l.on_response(&p, 122 * MS), RateChange::Increased { from: 18.0, to: 28.0 });
        // near R0 the cubic value is below srate + s_max: it is taken as is
        match l.on_response(&p, 123 * MS) {
            RateChange::Increased { from, to } => {
                assert_eq!(from, 28.0);
                assert!(close(to, r(23.0)), "{to}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(l.r0(), 40.0);
    }

    #[test]
    fn decrease_respects_the_rate_floor() {
        let p = RateParams::default();
        let mut l = CubicRateLimiter { srate: 2e-4, rrate: 0.0, ..CubicRateLimiter::new(&p) };
        assert_eq!(l.on_response(&p, 50 * crate::time::SEC), RateChange::Decreased { from: 2e-4, to: 1e-4 });
    }
}
