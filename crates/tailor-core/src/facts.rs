//! Facts: the aggregators a coordinator applies to what replicas piggyback on responses
//! (docs/strategies.md, Facts); the facts themselves ([`Feedback`]) are defined and measured in
//! `replica/accountant.rs`.

use crate::model::NodeId;
use crate::node_map::NodeTable;
use crate::time::Nanos;

/// The facts themselves are defined where they are measured, in the one accountant.
pub use crate::replica::accountant::{Feedback, ProbeReply};

/// A response as the coordinator's selector sees it. Its facts are borrowed: a [`Feedback`] is
/// 80 bytes, and copying it into every response (the simulator makes one per request) cost
/// more than the selectors' reading it.
#[derive(Clone, Debug, PartialEq)]
pub struct Response<'a> {
    /// The request answered.
    pub request: crate::model::RequestId,
    /// The replica that served it.
    pub replica: NodeId,
    /// Coordinator clock when the request was sent to the replica.
    pub sent_at: Nanos,
    /// Whether the request was for a large value according to the coordinator's oracle when sent.
    pub large: bool,
    /// Piggybacked facts.
    pub feedback: &'a Feedback,
    /// False if the feedback is older than the newest already applied from this replica; the
    /// selector still counts the response but must not apply its facts.
    pub fresh: bool,
}

/// Exponentially weighted moving average with a fixed weight on the newest sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ewma {
    weight_new: f64,
    value: Option<f64>,
}

impl Ewma {
    /// An empty average giving `weight_new` (0..=1) to each new sample.
    pub fn new(weight_new: f64) -> Self {
        assert!((0.0..=1.0).contains(&weight_new), "EWMA weight must be in [0, 1]");
        Ewma { weight_new, value: None }
    }

    /// An average that starts at `initial` instead of taking the first sample as is.
    pub fn with_initial(weight_new: f64, initial: f64) -> Self {
        Ewma { value: Some(initial), ..Ewma::new(weight_new) }
    }

    /// Fold in a sample; the first sample becomes the value.
    pub fn update(&mut self, sample: f64) -> f64 {
        let v = match self.value {
            None => sample,
            Some(old) => self.weight_new * sample + (1.0 - self.weight_new) * old,
        };
        self.value = Some(v);
        v
    }

    /// The current average, if any sample was seen.
    pub fn get(&self) -> Option<f64> {
        self.value
    }

    /// The current average or `default`.
    pub fn get_or(&self, default: f64) -> f64 {
        self.value.unwrap_or(default)
    }
}

/// Keeps the newest value.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Last<T: Copy> {
    value: Option<(Nanos, T)>,
}

impl<T: Copy> Last<T> {
    /// Record `value` measured at `at`.
    pub fn update(&mut self, at: Nanos, value: T) {
        self.value = Some((at, value));
    }

    /// The newest value and when it was measured.
    pub fn get(&self) -> Option<(Nanos, T)> {
        self.value
    }
}

/// Turns a monotonically increasing counter into a rate (events per second).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CounterRate {
    last: Option<(Nanos, u64)>,
    rate: Option<f64>,
}

impl CounterRate {
    /// Fold in the counter's value `count` measured at `at`; returns the rate since the previous one.
    pub fn update(&mut self, at: Nanos, count: u64) -> Option<f64> {
        if let Some((t0, c0)) = self.last {
            if at > t0 && count >= c0 {
                self.rate = Some((count - c0) as f64 * 1e9 / (at - t0) as f64);
            }
        }
        self.last = Some((at, count));
        self.rate
    }

    /// The latest rate, if two samples were seen.
    pub fn get(&self) -> Option<f64> {
        self.rate
    }
}

/// ORs bit indices into a bitset (how Bloom-filter deltas are merged).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BitOr {
    words: Vec<u64>,
}

impl BitOr {
    /// An empty bitset of `bits` bits.
    pub fn new(bits: usize) -> Self {
        BitOr { words: vec![0; bits.div_ceil(64)] }
    }

    /// Set every bit in `indices` (out-of-range indices are ignored: they come from peers).
    pub fn merge(&mut self, indices: &[u32]) {
        for &i in indices {
            if let Some(w) = self.words.get_mut(i as usize / 64) {
                *w |= 1 << (i % 64);
            }
        }
    }

    /// Whether bit `i` is set.
    pub fn get(&self, i: u32) -> bool {
        self.words.get(i as usize / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// The raw words.
    pub fn words(&self) -> &[u64] {
        &self.words
    }
}

/// Discards stale feedback: per sender, only timestamps newer than the newest applied pass.
#[derive(Clone, Debug)]
pub enum Freshness {
    /// Newest timestamp per sender heard from: facts can arrive out of order (threads finish
    /// jobs in any order, connections race).
    /// Boxed: the gate sits in the hot bytes of every coordinator, and the simulator's in-order
    /// gate needs 8 of them, not the table's 32.
    PerSender(Box<NodeTable<Nanos>>),
    /// The engine delivers every sender's facts in timestamp order (the simulator: one fixed
    /// network delay through a FIFO, facts stamped when sent), so every fact would pass; only
    /// the newest timestamp of all is kept, to assert that order. At thousands of servers the
    /// per-sender table was most of a coordinator's memory and a cache miss per answer.
    InOrder(Nanos),
}

impl Default for Freshness {
    fn default() -> Self {
        Freshness::PerSender(Box::default())
    }
}

impl Freshness {
    /// A gate for an engine that delivers all facts in timestamp order ([`Freshness::InOrder`]).
    pub fn in_order() -> Self {
        Freshness::InOrder(0)
    }

    /// True (and remembered) if `timestamp` from `from` is newer than anything applied from it.
    /// Equal timestamps pass: one sender can emit several facts in the same instant.
    #[inline]
    pub fn accept(&mut self, from: NodeId, timestamp: Nanos) -> bool {
        match self {
            Freshness::PerSender(newest) => {
                let newest = newest.entry(from);
                if timestamp >= *newest {
                    *newest = timestamp;
                    true
                } else {
                    false
                }
            }
            Freshness::InOrder(newest) => {
                assert!(
                    timestamp >= *newest,
                    "facts from {from} stamped {timestamp} arrived after facts stamped {newest}: \
                     the engine promised timestamp order"
                );
                *newest = timestamp;
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ewma_weights_new_sample() {
        let mut e = Ewma::new(0.9);
        assert_eq!(e.get(), None);
        assert_eq!(e.update(10.0), 10.0);
        assert!((e.update(20.0) - 19.0).abs() < 1e-9);
        let mut i = Ewma::with_initial(0.5, 0.0);
        assert_eq!(i.update(4.0), 2.0);
    }

    #[test]
    fn counter_rate_per_second() {
        let mut r = CounterRate::default();
        assert_eq!(r.update(0, 0), None);
        assert_eq!(r.update(500_000_000, 50), Some(100.0));
        // a counter going backwards (restart) keeps the previous rate
        assert_eq!(r.update(600_000_000, 10), Some(100.0));
    }

    #[test]
    fn bitor_merges_and_ignores_out_of_range() {
        let mut b = BitOr::new(100);
        b.merge(&[3, 99, 1000]);
        assert!(b.get(3) && b.get(99) && !b.get(4) && !b.get(1000));
    }

    #[test]
    fn freshness_discards_older_feedback() {
        let mut f = Freshness::default();
        assert!(f.accept(1, 100));
        assert!(!f.accept(1, 99));
        assert!(f.accept(1, 100));
        assert!(f.accept(2, 5));
        assert!(f.accept(1, 200));
    }

    #[test]
    fn an_in_order_gate_passes_facts_in_timestamp_order_across_senders() {
        let mut f = Freshness::in_order();
        assert!(f.accept(1, 100));
        assert!(f.accept(2, 100));
        assert!(f.accept(1, 150));
    }

    #[test]
    #[should_panic(expected = "the engine promised timestamp order")]
    fn an_in_order_gate_refuses_a_fact_older_than_one_applied() {
        let mut f = Freshness::in_order();
        f.accept(2, 100);
        f.accept(1, 99);
    }

    #[test]
    fn last_keeps_newest() {
        let mut l = Last::default();
        l.update(5, 3u32);
        l.update(7, 4u32);
        assert_eq!(l.get(), Some((7, 4)));
    }
}
