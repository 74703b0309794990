//! `max-stretch` (Euro-Par 2021, §5): when a worker frees at time `t`, run the queued request
//! whose stretch if started now, `(t + p_i - r_i) / p_i`, is the highest.
//!
//! Since `(t + p_i - r_i) / p_i = 1 + (t - r_i) / p_i`, the queue maximises `(t - r_i) / p_i`.
//! Each job's key is a line in `t` with its own slope `1 / p_i`, so the order between two jobs
//! can flip as `t` grows and no order fixed at push time stays right: `pop` scans the queue,
//! `O(N)` as in the paper's Table 1. Keys are compared exactly by cross-multiplying in `i128`
//! (no floating point), so ties are real ties, and ties go to the job pushed first.

use super::LocalQueue;
use crate::model::JobMeta;
use crate::time::Nanos;

/// A queued job with its push order, for tie-breaking.
struct Slot<T> {
    seq: u64,
    meta: JobMeta,
    payload: T,
}

/// An unordered pool of jobs from which `pop_max` takes the one with the largest ratio
/// `num / den` for the current time; shared by the time-dependent policies.
pub(super) struct RatioQueue<T> {
    slots: Vec<Slot<T>>,
    next_seq: u64,
}

impl<T> RatioQueue<T> {
    /// An empty pool.
    pub(super) fn new() -> Self {
        RatioQueue { slots: Vec::new(), next_seq: 0 }
    }

    /// Add a job; its push order breaks ties later.
    pub(super) fn push(&mut self, meta: JobMeta, payload: T) {
        debug_assert!(self.slots.last().is_none_or(|s| s.seq < self.next_seq), "push order is kept in seqs");
        self.slots.push(Slot { seq: self.next_seq, meta, payload });
        self.next_seq += 1;
        debug_assert!(self.slots.len() as u64 <= self.next_seq, "at most one slot per push");
    }

    /// Remove and return the job with the largest `num / den`, where `ratio(meta)` gives
    /// `(num, den)` with `den > 0` and both within `i64` so cross products cannot overflow.
    /// Equal ratios go to the job pushed first.
    pub(super) fn pop_max(&mut self, ratio: impl Fn(&JobMeta) -> (i128, i128)) -> Option<(JobMeta, T)> {
        let mut best: Option<(usize, i128, i128, u64)> = None;
        for (i, slot) in self.slots.iter().enumerate() {
            let (num, den) = ratio(&slot.meta);
            let better = match best {
                None => true,
                // num/den > bn/bd  <=>  num*bd > bn*den, since both denominators are positive.
                Some((_, bn, bd, bseq)) => {
                    let (lhs, rhs) = (num * bd, bn * den);
                    lhs > rhs || (lhs == rhs && slot.seq < bseq)
                }
            };
            if better {
                best = Some((i, num, den, slot.seq));
            }
        }
        let (index, num, den, _) = best?;
        debug_assert!(den > 0, "a ratio's denominator is positive");
        let slot = self.slots.swap_remove(index);
        // nothing left waiting has a larger ratio
        debug_assert!(
            self.slots.iter().all(|s| {
                let (n, d) = ratio(&s.meta);
                n * den <= num * d
            }),
            "a job with a larger ratio was left waiting"
        );
        Some((slot.meta, slot.payload))
    }

    /// Jobs waiting.
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }
}

/// `now - since` as a signed value clamped to `i64`, so a release stamped by a coordinator clock
/// slightly ahead of the replica's gives a negative wait rather than an overflow.
pub(super) fn signed_wait(now: Nanos, since: Nanos) -> i128 {
    (now as i128 - since as i128).clamp(i64::MIN as i128, i64::MAX as i128)
}

/// A positive denominator within `i64`: zero counts as one.
pub(super) fn positive(den: u64) -> i128 {
    let den = den.clamp(1, i64::MAX as u64) as i128;
    // the ratios are compared by cross-multiplying two of these with a wait: no i128 overflow
    debug_assert!(den >= 1 && den <= i64::MAX as i128, "a denominator in 1..=i64::MAX: {den}");
    den
}

/// Max-stretch queue: pops the job with the highest stretch `(t + p_i - r_i) / p_i` at pop time
/// `t`, with `p_i = meta.service` (0 counts as 1 ns) and `r_i = meta.release`; ties go to the
/// job enqueued first.
pub struct MaxStretch<T> {
    pool: RatioQueue<T>,
}

impl<T> MaxStretch<T> {
    /// An empty queue.
    pub fn new() -> Self {
        MaxStretch { pool: RatioQueue::new() }
    }
}

impl<T> Default for MaxStretch<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send> LocalQueue<T> for MaxStretch<T> {
    fn push(&mut self, _now: Nanos, meta: JobMeta, payload: T) {
        self.pool.push(meta, payload);
    }

    fn pop(&mut self, now: Nanos) -> Option<(JobMeta, T)> {
        self.pool.pop_max(|m| (signed_wait(now, m.release), positive(m.service)))
    }

    fn len(&self) -> usize {
        self.pool.len()
    }
}


/// `max-stretch`: largest stretch first (Euro-Par 2021).
pub const REGISTRATION: super::LocalRegistration = super::LocalRegistration { name: "max-stretch", source: "largest stretch first (Euro-Par 2021)" };

/// Build a `max-stretch` queue.
pub fn build<T: Send + 'static>(_cfg: &super::LocalConfig, _seed: u64) -> Box<dyn LocalQueue<T>> {
    Box::new(MaxStretch::new())
}

#[cfg(test)]
mod tests {
    use super::super::testkit::job;
    use super::*;

    /// A queue holding a long job released early and a short job released later.
    fn long_and_short() -> MaxStretch<char> {
        let mut q = MaxStretch::new();
        q.push(0, job(1, 0, 100), 'L');
        q.push(95, job(2, 95, 10), 'S');
        q
    }

    #[test]
    fn pick_changes_as_time_grows() {
        // Stretch of L at t: 1 + t/100; of S: 1 + (t-95)/10. They cross at t = 105.55...
        for (t, expected) in [(95, 'L'), (100, 'L'), (105, 'L'), (106, 'S'), (200, 'S'), (10_000, 'S')] {
            let mut q = long_and_short();
            assert_eq!(q.pop(t).map(|j| j.1), Some(expected), "t = {t}");
            assert_eq!(q.len(), 1);
        }
    }

    #[test]
    fn scripted_sequence_of_pops() {
        let mut q = MaxStretch::new();
        q.push(0, job(1, 0, 50), 'a'); // stretch at t: 1 + t/50
        q.push(10, job(2, 10, 5), 'b'); // 1 + (t-10)/5
        q.push(20, job(3, 20, 1), 'c'); // 1 + (t-20)/1
        q.push(20, job(4, 5, 100), 'd'); // 1 + (t-5)/100
                                         // t = 20: a 0.4, b 2, c 0, d 0.15 -> b.
        assert_eq!(q.pop(20).map(|j| j.0.id), Some(2));
        // t = 25: a 0.5, c 5, d 0.2 -> c.
        assert_eq!(q.pop(25).map(|j| j.0.id), Some(3));
        // t = 26: a 0.52, d 0.21 -> a.
        assert_eq!(q.pop(26).map(|j| j.0.id), Some(1));
        assert_eq!(q.pop(76).map(|j| j.0.id), Some(4));
        assert!(q.pop(100).is_none() && q.is_empty());
    }

    #[test]
    fn ties_go_to_the_earliest_enqueued() {
        let mut q = MaxStretch::new();
        // At t = 100 both have stretch 2; later pushes with equal keys wait.
        q.push(0, job(7, 0, 100), 'x');
        q.push(50, job(8, 50, 50), 'y');
        q.push(60, job(9, 0, 100), 'z');
        assert_eq!(q.pop(100).map(|j| j.1), Some('x'));
        assert_eq!(q.pop(100).map(|j| j.1), Some('y'));
        assert_eq!(q.pop(100).map(|j| j.1), Some('z'));
    }

    #[test]
    fn release_after_now_and_zero_service_do_not_panic() {
        let mut q = MaxStretch::new();
        q.push(0, job(1, 1_000, 0), 'f'); // released "in the future" by a skewed clock, p = 0
        q.push(0, job(2, 0, 10), 'g');
        assert_eq!(q.pop(10).map(|j| j.1), Some('g'));
        assert_eq!(q.pop(10).map(|j| j.1), Some('f'));
        q.push(0, job(3, u64::MAX, u64::MAX), 'h');
        q.push(0, job(4, 0, 1), 'i');
        assert_eq!(q.pop(u64::MAX).map(|j| j.1), Some('i'));
    }
}
