//! Per-server feedback state shared by C3 and TAP (and usable by Héron): the EWMAs of the
//! piggybacked facts, this coordinator's outstanding count, and C3's cubic score.
//!
//! Everything here is kept in nanoseconds as `f64`; the score is a time, so its unit only has
//! to be consistent across servers.

use crate::facts::Response;
use crate::model::NodeId;
use crate::time::Nanos;

/// The EWMA weight C3's simulator (absim) gives each new sample.
pub const ABSIM_EWMA_WEIGHT: f64 = 0.9;

/// An EWMA weight a strategy can run with: clamped into `[0, 1]`, absim's when not a number,
/// so a bad config cannot panic where state is built (configs validate it earlier).
pub(crate) fn usable_ewma_weight(weight: f64) -> f64 {
    if weight.is_finite() {
        weight.clamp(0.0, 1.0)
    } else {
        ABSIM_EWMA_WEIGHT
    }
}

/// The EWMA weight on each new sample with which a coordinator's [`ServerFeedback`]s update:
/// held once per coordinator and passed in, not kept in every server's entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FeedbackWeight(f64);

impl FeedbackWeight {
    /// `weight_new` made usable (see `usable_ewma_weight`).
    pub fn new(weight_new: f64) -> Self {
        FeedbackWeight(usable_ewma_weight(weight_new))
    }
}

/// What one coordinator has learnt about one server from its responses.
///
/// The three averages are always updated together, by fresh feedback, so one receipt time says
/// whether they hold a value and one weight, the coordinator's [`FeedbackWeight`], serves them
/// all: 40 bytes instead of three [`crate::facts::Ewma`]s (96), which matters because a
/// coordinator keeps one per server and scores several of them for every read. Each update
/// computes what [`crate::facts::Ewma::update`] does, bit for bit. `default()`: a server
/// nothing is known about yet.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerFeedback {
    /// EWMA of (response time seen by the coordinator − service time), i.e. C3's `R̄ − 1/µ̄`,
    /// which includes the server's queueing wait and the network round trip.
    delay: f64,
    /// EWMA of the piggybacked queue length (`q̄`).
    queue: f64,
    /// EWMA of the piggybacked service time (`1/µ̄`).
    service: f64,
    /// Coordinator clock when the newest applied feedback arrived (meaningful when `fed`).
    received_at: Nanos,
    /// Requests this coordinator has sent to the server and not yet seen answered (`os_s`).
    outstanding: u32,
    /// Whether fresh feedback was applied: until then the averages hold no value.
    fed: bool,
}

const _: () = assert!(size_of::<ServerFeedback>() == 40, "one per server and coordinator: kept small");

impl ServerFeedback {
    /// The coordinator sent a request to this server.
    pub fn sent(&mut self) {
        debug_assert!(self.outstanding < u32::MAX, "outstanding count saturated: a response is never counted");
        self.outstanding = self.outstanding.saturating_add(1);
    }

    /// Count a response and, only if its feedback is fresh, fold its facts into the EWMAs with
    /// `weight`. Returns whether the facts were applied.
    pub fn respond(&mut self, now: Nanos, resp: &Response, weight: FeedbackWeight) -> bool {
        // Responses the selector never saw sent (writes, shadow reads) must not drive it negative.
        self.outstanding = self.outstanding.saturating_sub(1);
        if !resp.fresh {
            return false;
        }
        let response_time = now.saturating_sub(resp.sent_at) as f64;
        let service = resp.feedback.service_time as f64;
        let (w, fed) = (weight.0, self.fed);
        // the first sample becomes the value, as `Ewma::update` does
        let ewma = |old: f64, sample: f64| if fed { w * sample + (1.0 - w) * old } else { sample };
        // A service time longer than the round trip can only come from clock skew in the store;
        // clamping keeps the delay term from rewarding such a server.
        self.delay = ewma(self.delay, (response_time - service).max(0.0));
        self.queue = ewma(self.queue, resp.feedback.queue_len as f64);
        self.service = ewma(self.service, service);
        debug_assert!(
            [self.delay, self.queue, self.service].iter().all(|v| v.is_finite() && *v >= 0.0),
            "C3's averages are finite and not negative: {self:?}"
        );
        self.received_at = now;
        self.fed = true;
        true
    }

    /// Requests in flight from this coordinator (`os_s`).
    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }

    /// EWMA of response time minus service time, in ns.
    #[inline]
    pub fn delay(&self) -> Option<f64> {
        self.fed.then_some(self.delay)
    }

    /// EWMA of the piggybacked queue length.
    #[inline]
    pub fn queue(&self) -> Option<f64> {
        self.fed.then_some(self.queue)
    }

    /// EWMA of the piggybacked service time, in ns.
    #[inline]
    pub fn service(&self) -> Option<f64> {
        self.fed.then_some(self.service)
    }

    /// Coordinator clock at receipt of the newest applied feedback.
    #[inline]
    pub fn received_at(&self) -> Option<Nanos> {
        self.fed.then_some(self.received_at)
    }

    /// Whether any fresh feedback was applied.
    #[inline]
    pub fn has_feedback(&self) -> bool {
        self.fed
    }

    /// C3's queue estimate `q̂ = 1 + os_s·w + q̄`, if any feedback was applied.
    pub fn q_hat(&self, w: f64) -> Option<f64> {
        self.queue().map(|q| self.q_hat_with(w, q))
    }

    /// `1 + os_s·w + q` for a queue term `q` supplied by the caller (TAP's prediction).
    pub fn q_hat_with(&self, w: f64, q: f64) -> f64 {
        debug_assert!(w >= 0.0 && w.is_finite(), "concurrency weight {w} is a finite non-negative number");
        1.0 + self.outstanding as f64 * w + q
    }

    /// `(R̄ − 1/µ̄) + q̂^b · (1/µ̄)` for a given `q̂`; 0 without feedback (C3 tries unknown servers first).
    pub fn score_with(&self, q_hat: f64, b: f64) -> f64 {
        if self.fed {
            let score = self.delay + pow(q_hat.max(0.0), b) * self.service;
            debug_assert!(!score.is_nan(), "a score orders replicas, never NaN: {self:?} q̂ {q_hat} b {b}");
            score
        } else {
            0.0
        }
    }

    /// C3's score `Ψ_s` with concurrency weight `w` and exponent `b`; 0 without feedback.
    pub fn c3_score(&self, w: f64, b: f64) -> f64 {
        match self.q_hat(w) {
            Some(q) => self.score_with(q, b),
            None => 0.0,
        }
    }
}

/// `x^b` exactly as [`f64::powf`] returns it, without the libm call in the common case of C3's
/// and TAP's published exponent `b = 3` (the call was the largest cost of scoring a replica).
#[inline]
pub fn pow(x: f64, b: f64) -> f64 {
    if b == 3.0 {
        if let Some(cube) = cube(x) {
            return cube;
        }
    }
    x.powf(b)
}

/// `x³` correctly rounded, when `powf(x, 3)` is certain to return the same; `None` otherwise.
///
/// libm's `pow` (glibc, from ARM's optimized routines) is within 0.54 ulp of the exact value, so
/// it returns the correctly rounded result whenever the exact value lies more than 0.04 ulp away
/// from a rounding boundary (the midpoint between two doubles). Here `x³` is computed as
/// `p + tail` with an error near 2^-100 relative (exact products, [`two_product`]), rounded
/// once, and accepted only if it lies within 0.45 ulp of the result (at least 0.05 ulp from a
/// boundary); the rest (about a tenth) and every `x` outside a range where no product can
/// overflow or lose bits to underflow fall back to `powf`.
#[inline]
fn cube(x: f64) -> Option<f64> {
    const LOW: f64 = 1.0 / (1u128 << 100) as f64;
    const HIGH: f64 = (1u128 << 100) as f64;
    // also rejects NaN
    if !(LOW..=HIGH).contains(&x) {
        return None;
    }
    let xs = split(x);
    let (x2, e2) = two_product(x, xs, x, xs); // x² = x2 + e2 exactly
    let (p, ep) = two_product(x2, split(x2), x, xs); // x2·x = p + ep exactly
    let tail = ep + e2 * x; // x³ = p + tail, up to ~2^-100 relative
    let r = p + tail;
    let err = (p - r) + tail; // exact (|p| ≥ |tail|): p + tail = r + err
                              // the spacing below `r`: the smaller of its two spacings at a power of two
    let spacing = r - f64::from_bits(r.to_bits() - 1);
    debug_assert!(spacing > 0.0, "a positive cube has a positive spacing below it: {r}");
    (err.abs() <= 0.45 * spacing).then_some(r)
}

/// `(a·b rounded, its rounding error)`: `a·b` exactly as a sum of two doubles (Dekker), given
/// `a` and `b` with their [`split`]s. The same pair a fused multiply-add gives, but inline: without
/// the `fma` target feature `mul_add` is a library call, which cost more than this.
/// Exact while no product overflows or underflows (as for what [`cube`] admits).
#[inline]
fn two_product(a: f64, (ah, al): (f64, f64), b: f64, (bh, bl): (f64, f64)) -> (f64, f64) {
    let p = a * b;
    (p, ((ah * bh - p) + ah * bl + al * bh) + al * bl)
}

/// `a` as `hi + lo` exactly, each half with at most 26 significant bits (Veltkamp), so that the
/// halves multiply without rounding.
#[inline]
fn split(a: f64) -> (f64, f64) {
    let c = 134_217_729.0 * a; // 2^27 + 1
    let hi = c - (c - a);
    (hi, a - hi)
}

/// Shuffle `items` in place with the selector's seeded stream (Fisher–Yates).
pub fn shuffle<T>(items: &mut [T], rng: &mut super::Rng) {
    for i in (1..items.len()).rev() {
        let j = rng.below(i + 1);
        items.swap(i, j);
    }
}

/// Order `(score, node)` pairs by ascending score, ties in random order (shuffle, then a stable
/// sort), so equal scores (e.g. every server still unknown) do not all herd onto the primary.
pub fn rank_by_score(items: &mut [(f64, NodeId)], rng: &mut super::Rng) {
    shuffle(items, rng);
    items.sort_by(|a, b| a.0.total_cmp(&b.0));
}

#[cfg(test)]
mod tests {
    use super::super::testkit::response;
    use super::*;
    use crate::facts::Feedback;
    use crate::time::MS;

    fn fb(queue_len: u32, service_ms: u64) -> Feedback {
        Feedback { queue_len, service_time: service_ms * MS, ..Feedback::default() }
    }

    #[test]
    fn ewmas_weight_new_sample_and_score_is_cubic() {
        let mut s = ServerFeedback::default();
        assert_eq!(s.c3_score(1.0, 3.0), 0.0);
        s.sent();
        // response time 10 ms, service 2 ms -> delay 8 ms; q = 3
        assert!(s.respond(10 * MS, &response(1, 4, 0, false, fb(3, 2)), FeedbackWeight::new(0.9)));
        assert_eq!(s.outstanding(), 0);
        assert_eq!(s.delay(), Some(8e6));
        assert_eq!(s.q_hat(1.0), Some(4.0));
        assert_eq!(s.c3_score(1.0, 3.0), 8e6 + 64.0 * 2e6);
        // second sample: 0.9 new + 0.1 old
        s.respond(20 * MS, &response(2, 4, 16 * MS, false, fb(13, 1)), FeedbackWeight::new(0.9));
        assert!((s.queue().unwrap() - 12.0).abs() < 1e-9);
        assert!((s.service().unwrap() - 1.1e6).abs() < 1e-3);
        assert!((s.delay().unwrap() - (0.9 * 3e6 + 0.1 * 8e6)).abs() < 1e-3);
        assert_eq!(s.received_at(), Some(20 * MS));
    }

    #[test]
    fn stale_response_counts_but_does_not_apply() {
        let mut s = ServerFeedback::default();
        s.sent();
        s.sent();
        let mut r = response(1, 4, 0, false, fb(3, 2));
        r.fresh = false;
        assert!(!s.respond(10 * MS, &r, FeedbackWeight::new(0.9)));
        assert_eq!(s.outstanding(), 1);
        assert!(!s.has_feedback());
        assert_eq!(s.queue(), None);
    }

    /// The fast cube agrees with `powf` bit for bit: on random values over the range scores
    /// take, on integers, on values whose cube sits on or near a rounding boundary, and on the
    /// edges where it falls back.
    #[test]
    fn pow_is_powf_bit_for_bit() {
        let mut rng = crate::selector::Rng::new(3, 4);
        let mut fast = 0;
        for i in 0..2_000_000u64 {
            let x = match i % 4 {
                0 => rng.unit() * 2_000.0,
                1 => (i / 4) as f64,
                2 => f64::from_bits(rng.next_u64() >> 2),
                _ => 1.0 + (rng.below(1 << 20) as f64) / (1u64 << 20) as f64,
            };
            assert_eq!(pow(x, 3.0).to_bits(), x.powf(3.0).to_bits(), "x = {x:e}");
            fast += (i % 4 == 0 && cube(x).is_some()) as u32;
        }
        assert!(fast > 400_000, "the fast path is the common one ({fast} of 500 000)");
        for x in [0.0, -0.0, 1e-300, 1e300, f64::INFINITY, f64::NAN, f64::MIN_POSITIVE, 2f64.powi(100)] {
            assert_eq!(pow(x, 3.0).to_bits(), x.powf(3.0).to_bits(), "x = {x:e}");
        }
        assert_eq!(pow(2.5, 2.0), 6.25, "other exponents go to powf");
    }

    /// Dekker's product gives a fused multiply-add's error term, over the magnitudes `cube` uses.
    #[test]
    fn two_product_matches_mul_add() {
        let mut rng = crate::selector::Rng::new(5, 6);
        let mut draw = |max_exp: usize| (rng.unit() + 0.5) * 2f64.powi(rng.below(2 * max_exp) as i32 - max_exp as i32);
        for _ in 0..500_000 {
            let (a, b) = (draw(200), draw(100));
            let (p, e) = two_product(a, split(a), b, split(b));
            assert_eq!(
                (p.to_bits(), e.to_bits()),
                ((a * b).to_bits(), a.mul_add(b, -(a * b)).to_bits()),
                "{a:e} {b:e}"
            );
        }
    }
}
