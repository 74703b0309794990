//! Speculative retry (Cassandra's `speculative_retry`; Dean and Barroso's hedged requests): a
//! read at ONE whose replica has not answered within a threshold is also sent to one other
//! replica, and the first answer goes to the client. A frozen or stalled replica then costs a
//! read the threshold plus one more replica's latency instead of the whole timeout.
//!
//! Choices (written down here because the sources differ):
//! - The threshold is either fixed or a percentile of this coordinator's recent read latencies
//!   (the last [`WINDOW`] answered reads, all replicas together, as Cassandra uses the table's
//!   coordinator read latency). It is recomputed every [`REFRESH`] answers, and no read is
//!   hedged before [`MIN_SAMPLES`] answers were seen: a percentile of a handful of reads says
//!   nothing.
//! - A budget bounds the extra load (a hedge under overload makes the overload worse): every
//!   first attempt earns `budget` tokens, up to [`BURST`], and a hedge spends one. With a
//!   percentile rule only the slowest reads are hedged anyway; the budget matters for a low fixed
//!   threshold, or when many replicas stall at once.
//! - The bucket holds at least what the largest fan-out seen earns: the engine says how many keys
//!   the multi-get of each first attempt has (`Fanout::keys`, in both engines alike: the store's
//!   MGET submits its keys microseconds apart), and a cap of [`BURST`] would give a 1,000-key multi-get 20
//!   hedges (2 % of its keys) whatever the budget, spent on the first reads in id order rather
//!   than on those stuck behind a stalled replica (Dean and Barroso hedge each key's read).
//! - The hedge's replica is the selector's choice among the others; when it says wait (C3's rate
//!   limiter), the hedge is offered again at its `retry_at` or one threshold later.
//! - A read is hedged at most once, and never when it already has read-repair shadows out (a
//!   second copy to a replica that has one would make answers ambiguous).

use super::pending::Ticket;
use crate::time::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Answers kept for the percentile.
pub const WINDOW: usize = 1024;
/// Answers between two recomputations of a percentile threshold.
pub const REFRESH: usize = 64;
/// Answers seen before a percentile threshold exists.
pub const MIN_SAMPLES: usize = 100;
/// Most hedge tokens saved up.
pub const BURST: u64 = 20;
/// Fractions of a token are counted in millionths (whole numbers: no drift from adding 0.1).
const MICRO: u64 = 1_000_000;

/// When a read is hedged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SpeculativeRetry {
    /// After this long without an answer.
    After(Nanos),
    /// After this percentile (0 < p < 100) of recent read latencies.
    Percentile(f64),
}

impl SpeculativeRetry {
    /// Parse Cassandra's spelling: `99p` / `99PERCENTILE`, `50ms`, or `none` (`Ok(None)`).
    pub fn parse(s: &str) -> Result<Option<SpeculativeRetry>, String> {
        let lower = s.trim().to_ascii_lowercase();
        let number = |digits: &str| digits.trim().parse::<f64>().ok().filter(|v| v.is_finite());
        if lower == "none" {
            return Ok(None);
        }
        if let Some(ms) = lower.strip_suffix("ms").and_then(number) {
            if ms > 0.0 && ms <= 3_600_000.0 {
                return Ok(Some(SpeculativeRetry::After((ms * 1e6) as Nanos)));
            }
        }
        let pct = lower.strip_suffix("percentile").or_else(|| lower.strip_suffix('p'));
        if let Some(p) = pct.and_then(number) {
            if p > 0.0 && p < 100.0 {
                return Ok(Some(SpeculativeRetry::Percentile(p)));
            }
        }
        Err(format!("`{s}` is not `none`, a percentile like `99p` (0 < p < 100) or a delay like `50ms`"))
    }
}

/// How a coordinator hedges reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpeculationConfig {
    /// When.
    pub rule: SpeculativeRetry,
    /// Hedges allowed per first attempt, on average (0..=1).
    pub budget: f64,
}

/// A read's hedge deadline: when, and which attempt it is for (the attempt's send time tells a
/// retried read's new attempt from the old one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Deadline {
    at: Nanos,
    sent_at: Nanos,
    slot: u32,
    id: u64,
}

/// The threshold, the budget, and the deadlines of reads that may be hedged.
#[derive(Debug)]
pub struct Speculation {
    cfg: SpeculationConfig,
    latencies: Vec<Nanos>,
    next: usize,
    seen: usize,
    threshold: Option<Nanos>,
    /// Hedge tokens, in millionths.
    tokens: u64,
    /// Millionths of a token each first attempt earns.
    earn: u64,
    /// Most tokens saved up, in millionths: [`BURST`], or the largest fan-out's earnings.
    cap: u64,
    deadlines: BinaryHeap<Reverse<Deadline>>,
    scratch: Vec<Nanos>,
    /// Whether the losing attempt is cancelled once the first answer replies.
    pub cancel: bool,
}

impl Speculation {
    /// Hedging by `cfg`.
    pub fn new(cfg: SpeculationConfig) -> Self {
        assert!((0.0..=1.0).contains(&cfg.budget), "the hedge budget is a fraction of reads");
        let threshold = match cfg.rule {
            SpeculativeRetry::After(t) => Some(t),
            SpeculativeRetry::Percentile(p) => {
                assert!(p > 0.0 && p < 100.0, "a percentile is in (0, 100)");
                None
            }
        };
        Speculation {
            cfg,
            latencies: Vec::with_capacity(WINDOW),
            next: 0,
            seen: 0,
            threshold,
            tokens: BURST * MICRO,
            earn: (cfg.budget * MICRO as f64).round() as u64,
            cap: BURST * MICRO,
            deadlines: BinaryHeap::new(),
            scratch: Vec::new(),
            cancel: false,
        }
    }

    /// The current threshold, once there is one.
    pub fn threshold(&self) -> Option<Nanos> {
        self.threshold
    }

    /// A read was answered `latency` after its attempt was sent.
    pub fn record(&mut self, latency: Nanos) {
        let SpeculativeRetry::Percentile(p) = self.cfg.rule else { return };
        if self.latencies.len() < WINDOW {
            self.latencies.push(latency);
        } else {
            self.latencies[self.next] = latency;
        }
        self.next = (self.next + 1) % WINDOW;
        self.seen += 1;
        if self.seen >= MIN_SAMPLES && self.seen.is_multiple_of(REFRESH) {
            self.threshold = Some(self.percentile(p));
        }
        debug_assert!(self.latencies.len() <= WINDOW && self.latencies.len() <= self.seen, "the window is bounded");
        debug_assert!(
            self.threshold.is_none() || self.seen >= MIN_SAMPLES,
            "no threshold before {MIN_SAMPLES} answers"
        );
    }

    fn percentile(&mut self, p: f64) -> Nanos {
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.latencies);
        let rank = ((p / 100.0) * self.scratch.len() as f64).ceil() as usize;
        let i = rank.clamp(1, self.scratch.len()) - 1;
        *self.scratch.select_nth_unstable(i).1
    }

    /// A read's first attempt `t` left at `now`: it earns budget, and may be hedged at the
    /// threshold.
    pub fn arm(&mut self, now: Nanos, t: Ticket) {
        self.tokens = (self.tokens + self.earn).min(self.cap);
        debug_assert!(self.earn <= MICRO && self.tokens <= self.cap, "the budget is bounded: {}", self.tokens);
        if let Some(after) = self.threshold {
            let d = Deadline { at: now.saturating_add(after), sent_at: now, slot: t.slot, id: t.id };
            self.deadlines.push(Reverse(d));
        }
    }

    /// A read of a multi-get of `keys` keys arrived: they earn together what its hedges may
    /// spend, so the bucket grows to hold that much.
    pub fn widen(&mut self, keys: u16) {
        self.cap = self.cap.max(u64::from(keys.max(1)) * self.earn);
    }

    /// Hedge read `t`'s attempt sent at `sent_at` at `at` instead (its selector said wait).
    pub fn rearm(&mut self, at: Nanos, t: Ticket, sent_at: Nanos) {
        debug_assert!(at > sent_at, "request {}: a hedge deadline comes after its attempt", t.id);
        self.deadlines.push(Reverse(Deadline { at, sent_at, slot: t.slot, id: t.id }));
    }

    /// The earliest deadline, if any.
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.deadlines.peek().map(|d| d.0.at)
    }

    /// The next deadline due at `now`: the ticket and the send time of the attempt it was for.
    pub fn pop_due(&mut self, now: Nanos) -> Option<(Ticket, Nanos)> {
        let d = self.deadlines.peek().filter(|d| d.0.at <= now)?.0;
        self.deadlines.pop();
        debug_assert!(self.next_deadline().is_none_or(|next| next >= d.at), "deadlines come due in order");
        Some((Ticket { slot: d.slot, id: d.id }, d.sent_at))
    }

    /// Drop leading deadlines of reads `live` says can no longer be hedged (answered, failed
    /// over), so the engine is not woken for them.
    pub fn prune(&mut self, mut live: impl FnMut(Ticket, Nanos) -> bool) {
        while let Some(d) = self.deadlines.peek().map(|d| d.0) {
            if live(Ticket { slot: d.slot, id: d.id }, d.sent_at) {
                return;
            }
            self.deadlines.pop();
        }
    }

    /// Spend one hedge token if there is one.
    pub fn take_token(&mut self) -> bool {
        let ok = self.tokens >= MICRO;
        if ok {
            self.tokens -= MICRO;
        }
        debug_assert!(self.tokens <= self.cap, "the budget is bounded: {}", self.tokens);
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    fn ticket(id: u64) -> Ticket {
        Ticket::of(id)
    }

    #[test]
    fn parses_cassandras_spellings() {
        assert_eq!(SpeculativeRetry::parse("99p"), Ok(Some(SpeculativeRetry::Percentile(99.0))));
        assert_eq!(SpeculativeRetry::parse("95PERCENTILE"), Ok(Some(SpeculativeRetry::Percentile(95.0))));
        assert_eq!(SpeculativeRetry::parse("50ms"), Ok(Some(SpeculativeRetry::After(50 * MS))));
        assert_eq!(SpeculativeRetry::parse("NONE"), Ok(None));
        for bad in ["100p", "0p", "-3ms", "fast", "nanp", "1e300ms", ""] {
            let err = SpeculativeRetry::parse(bad).unwrap_err();
            assert!(err.contains(&format!("`{bad}`")), "{err}");
        }
    }

    #[test]
    fn percentile_threshold_appears_after_enough_answers() {
        let cfg = SpeculationConfig { rule: SpeculativeRetry::Percentile(99.0), budget: 1.0 };
        let mut s = Speculation::new(cfg);
        for i in 0..(MIN_SAMPLES as u64 - 1) {
            s.record(i * MS);
        }
        assert_eq!(s.threshold(), None);
        for i in 0..(2 * REFRESH as u64) {
            s.record((i % 100) * MS);
        }
        let t = s.threshold().expect("a threshold after enough answers");
        assert!((97 * MS..=99 * MS).contains(&t), "p99 of 0..99 ms is about 98 ms, got {t}");
    }

    #[test]
    fn deadlines_come_due_in_order_and_prune_skips_dead_ones() {
        let cfg = SpeculationConfig { rule: SpeculativeRetry::After(10 * MS), budget: 1.0 };
        let mut s = Speculation::new(cfg);
        s.arm(5 * MS, ticket(2));
        s.arm(MS, ticket(1));
        assert_eq!(s.next_deadline(), Some(11 * MS));
        assert_eq!(s.pop_due(10 * MS), None);
        s.prune(|t, _| t.id != 1);
        assert_eq!(s.next_deadline(), Some(15 * MS));
        assert_eq!(s.pop_due(20 * MS), Some((ticket(2), 5 * MS)));
        assert_eq!(s.pop_due(20 * MS), None);
    }

    #[test]
    fn budget_bounds_hedges() {
        let cfg = SpeculationConfig { rule: SpeculativeRetry::After(MS), budget: 0.1 };
        let mut s = Speculation::new(cfg);
        let burst = (0..100).take_while(|_| s.take_token()).count();
        assert_eq!(burst, BURST as usize);
        for i in 0..100 {
            s.arm(0, ticket(i));
        }
        assert_eq!((0..100).take_while(|_| s.take_token()).count(), 10, "0.1 hedge per read");
    }

    #[test]
    fn a_fanout_earns_its_whole_budget() {
        let cfg = SpeculationConfig { rule: SpeculativeRetry::After(MS), budget: 0.05 };
        let mut s = Speculation::new(cfg);
        assert_eq!((0..100).take_while(|_| s.take_token()).count(), BURST as usize);
        for i in 0..1000 {
            s.widen(1000);
            s.arm(7 * MS, ticket(i));
        }
        assert_eq!((0..100).take_while(|_| s.take_token()).count(), 50, "5 % of a 1,000-key multi-get");
        for i in 0..1000 {
            s.arm(8 * MS + i, ticket(i));
        }
        assert_eq!((0..100).take_while(|_| s.take_token()).count(), 50, "single reads save up to the same cap");
    }
}
