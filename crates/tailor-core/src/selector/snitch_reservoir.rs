//! The dynamic snitch's sample of a peer's latencies: Cassandra's (Codahale's) exponentially
//! decaying reservoir, priority sampling with forward decay, and its weighted median.
//!
//! Layout, and why. The snitch recomputes the median of every peer with new samples every
//! 100 ms, and a coordinator of a large cluster keeps thousands of reservoirs, seldom in the
//! cache: the median and the adds are most of the strategy's cost. The samples stay where they
//! were added (their *slot*, which a lowest-priority replacement reuses), as Codahale's code
//! keeps them, and `order` lists the slots sorted by latency, ties by slot: the order a stable
//! sort by latency gives, so the median is one pass over the weights in that order. A
//! replacement writes its sample in place and moves only 4-byte slots in `order`; moving the
//! 24-byte samples themselves, to keep them sorted, was a third of the update's instructions.
//!
//! The four fields are parallel arrays in one allocation of 64-bit words, each `cap` long:
//! `[weights | priorities | latencies | order]`, the last two `u32`s two to a word. A peer
//! heard from once (most peers of a coordinator of a large cluster) costs one small block, a
//! full reservoir its size and no more, and the lowest-priority search on every add reads the
//! priorities alone.

use crate::time::{Nanos, SEC};

/// Largest `alpha * age` before the reservoir moves its landmark: keeps weights far from overflow.
const MAX_DECAY_EXPONENT: f64 = 40.0;

/// Words a reservoir of `cap` samples takes: two `f64` arrays and two `u32` arrays.
fn words(cap: usize) -> usize {
    2 * cap + 2 * cap.div_ceil(2)
}

/// A peer's decaying sample of latencies (whole µs).
#[derive(Clone, Debug, Default)]
pub(crate) struct Reservoir {
    /// `[weights | priorities | latencies | order]` ([`words`] of the capacity).
    data: Box<[u64]>,
    /// Samples held.
    len: u32,
    /// Samples it has room for (kept: computing it from `data` divides).
    cap: u32,
    /// Time the weights are relative to.
    landmark: Nanos,
}

/// The arrays of a [`Reservoir`], each its capacity long.
struct Parts<'a> {
    weights: &'a mut [f64],
    priorities: &'a mut [f64],
    latencies: &'a mut [u32],
    order: &'a mut [u32],
}

impl Reservoir {
    /// Samples it has room for.
    pub(crate) fn cap(&self) -> usize {
        self.cap as usize
    }

    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// The arrays, whole.
    fn parts(&mut self) -> Parts<'_> {
        let cap = self.cap();
        let half = cap.div_ceil(2);
        let (reals, ints) = self.data.split_at_mut(2 * cap);
        let (weights, priorities) = reals.split_at_mut(cap);
        let (latencies, order) = ints.split_at_mut(half);
        Parts {
            weights: bytemuck::cast_slice_mut(weights),
            priorities: bytemuck::cast_slice_mut(priorities),
            latencies: &mut bytemuck::cast_slice_mut(latencies)[..cap],
            order: &mut bytemuck::cast_slice_mut(order)[..cap],
        }
    }

    /// The weights of the samples held, by slot.
    pub(crate) fn weights(&self) -> &[f64] {
        bytemuck::cast_slice(&self.data[..self.len()])
    }

    /// Their priorities, by slot.
    pub(crate) fn priorities(&self) -> &[f64] {
        let cap = self.cap();
        bytemuck::cast_slice(&self.data[cap..cap + self.len()])
    }

    /// Their latencies, by slot.
    pub(crate) fn latencies(&self) -> &[u32] {
        let at = 2 * self.cap();
        &bytemuck::cast_slice(&self.data[at..at + self.cap().div_ceil(2)])[..self.len()]
    }

    /// Their slots, sorted by latency, ties by slot.
    pub(crate) fn order(&self) -> &[u32] {
        let at = 2 * self.cap() + self.cap().div_ceil(2);
        &bytemuck::cast_slice(&self.data[at..at + self.cap().div_ceil(2)])[..self.len()]
    }

    /// A word of each cache line of the samples held that the next [`Reservoir::add`] (at
    /// most `size` samples) and median read: reading them asks for all those lines at once.
    /// The priorities only once the reservoir is full: until then an add appends and nothing
    /// reads them.
    pub(crate) fn fetch_lines(&self, size: usize) -> u64 {
        let (cap, len) = (self.cap(), self.len());
        let (half, used) = (cap.div_ceil(2), len.div_ceil(2));
        let priorities = if len >= size { cap..cap + len } else { cap..cap };
        let regions = [0..len, priorities, 2 * cap..2 * cap + used, 2 * cap + half..2 * cap + half + used];
        regions.into_iter().fold(0, |x, r| self.data[r].iter().step_by(8).fold(x, |x, w| x ^ w))
    }

    /// Forget every sample, keeping the memory (a reset refills it).
    /// The samples' structure: within the capacity, `order` a permutation of the slots that
    /// lists their latencies in ascending order.
    fn ordered(&self) -> bool {
        let (order, latencies) = (self.order(), self.latencies());
        let mut seen = vec![false; order.len()];
        self.len <= self.cap
            && order.iter().all(|&s| (s as usize) < order.len() && !std::mem::replace(&mut seen[s as usize], true))
            && order.windows(2).all(|w| latencies[w[0] as usize] <= latencies[w[1] as usize])
    }

    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// Room for one more sample, at most `size` in all: the capacity doubles from 2.
    fn grow(&mut self, size: usize) {
        let len = self.len();
        let new_cap = (2 * self.cap()).max(2).min(size.max(1));
        debug_assert!(new_cap > len, "grown only when full and below the size: {len} -> {new_cap}");
        let data = vec![0; words(new_cap)].into_boxed_slice();
        let mut bigger = Reservoir { data, len: self.len, cap: new_cap as u32, landmark: 0 };
        let to = bigger.parts();
        to.weights[..len].copy_from_slice(self.weights());
        to.priorities[..len].copy_from_slice(self.priorities());
        to.latencies[..len].copy_from_slice(self.latencies());
        to.order[..len].copy_from_slice(self.order());
        (self.data, self.cap) = (bigger.data, bigger.cap);
        debug_assert!(self.ordered(), "a grown reservoir keeps its order");
    }

    /// Add a sample of `latency_us` at `now`; `u` is uniform in `[0, 1)`.
    pub(crate) fn add(&mut self, now: Nanos, latency_us: u32, alpha: f64, size: usize, u: f64) {
        if self.len == 0 {
            self.landmark = now;
        }
        let mut age = now.saturating_sub(self.landmark) as f64 / SEC as f64;
        if alpha * age > MAX_DECAY_EXPONENT {
            // Moving the landmark scales every weight and priority alike: the sample is unchanged.
            let scale = (-alpha * age).exp();
            let len = self.len();
            let p = self.parts();
            p.weights[..len].iter_mut().chain(&mut p.priorities[..len]).for_each(|x| *x *= scale);
            self.landmark = now;
            age = 0.0;
            debug_assert!((0.0..1.0).contains(&scale), "moving the landmark forward scales down: {scale}");
        }
        debug_assert!((0.0..1.0).contains(&u), "a uniform draw in [0, 1): {u}");
        let weight = (alpha * age).exp();
        // weight <= e^40 and 1 - u in (0, 1]: finite and positive (or 0 once scaled far down),
        // so `<` and `==` order priorities as `total_cmp` does
        let priority = weight / (1.0 - u);
        debug_assert!(priority.is_finite() && priority >= 0.0, "priority {priority}");
        let len = self.len();
        if len < size.max(1) {
            if len == self.cap() {
                self.grow(size);
            }
            let at = self.rank(latency_us, len);
            self.len += 1;
            self.put(len, len, at, [weight, priority], latency_us);
        } else {
            let lowest = self.lowest();
            if self.priorities()[lowest] < priority {
                // where the replaced sample is in the order, and how many sort before the new one
                let from = self.rank(self.latencies()[lowest], lowest);
                let rank = self.rank(latency_us, lowest);
                // where it goes once the replaced sample is out
                let at = if from < rank { rank - 1 } else { rank };
                self.put(lowest, from, at, [weight, priority], latency_us);
            }
        }
        debug_assert!(self.len() <= size.max(1), "the reservoir holds at most {size}, not {}", self.len());
        debug_assert!(self.ordered(), "samples stay in latency order");
    }

    /// How many samples held sort before a sample of `latency_us` in slot `slot`: those in a
    /// lower slot with a latency at most its, and the others with a lower one (a sample in
    /// `slot` itself does not sort before a sample there).
    ///
    /// Counted rather than bisected: the reservoir is seldom in the cache when a reply comes,
    /// and a bisection waits for each line it probes in turn, where a count asks for them all at
    /// once (in 32-bit lanes, several at a time).
    fn rank(&self, latency_us: u32, slot: usize) -> usize {
        let (lower, others) = self.latencies().split_at(slot);
        let at_most = lower.iter().map(|&l| u32::from(l <= latency_us)).sum::<u32>();
        let less = others.iter().map(|&l| u32::from(l < latency_us)).sum::<u32>();
        debug_assert!((at_most + less) as usize <= self.len(), "a rank among the held samples");
        (at_most + less) as usize
    }

    /// Write the sample of `slot` (`[weight, priority]` and its latency), and move its place in
    /// the order from `from` (`from == len - 1` after a push: the free place) to `at`, shifting
    /// those between.
    fn put(&mut self, slot: usize, from: usize, at: usize, [weight, priority]: [f64; 2], latency_us: u32) {
        debug_assert!(
            slot < self.len() && from < self.len() && at < self.len(),
            "{slot}, {from}, {at} within {}",
            self.len()
        );
        let p = self.parts();
        (p.weights[slot], p.priorities[slot], p.latencies[slot]) = (weight, priority, latency_us);
        if from < at {
            p.order.copy_within(from + 1..at + 1, from);
        } else if at < from {
            p.order.copy_within(at..from, at + 1);
        }
        p.order[at] = slot as u32;
    }

    /// Slot of the lowest priority, the lowest slot among equal ones (as a scan in slot order
    /// finds it); the reservoir is not empty.
    fn lowest(&self) -> usize {
        let priorities = self.priorities();
        // four running minima: independent chains of comparisons
        let mut m = [f64::INFINITY; 4];
        let mut chunks = priorities.chunks_exact(4);
        for c in &mut chunks {
            for j in 0..4 {
                m[j] = if c[j] < m[j] { c[j] } else { m[j] };
            }
        }
        let min = chunks.remainder().iter().chain(&m).fold(f64::INFINITY, |m, &p| if p < m { p } else { m });
        // eight at a time without a branch per sample, then within the eight
        let block = priorities.chunks(8).position(|c| c.iter().fold(false, |hit, &p| hit | (p == min)));
        let block = block.expect("a sample has the lowest priority");
        let lowest = 8 * block + priorities[8 * block..].iter().position(|&p| p == min).expect("in this block");
        debug_assert!(priorities.iter().all(|&p| p >= priorities[lowest]), "slot {lowest} has the lowest priority");
        lowest
    }

    /// Weighted median: the largest value whose preceding cumulative weight share is at most 1/2.
    #[cfg(test)]
    pub(crate) fn median(&self) -> Option<f64> {
        self.median_with(&mut Vec::new())
    }

    /// [`Reservoir::median`] with room for the running sums.
    ///
    /// Cassandra's loop adds the weights in latency order for the total, then again until the
    /// share before a sample exceeds 1/2. The sums here are the same additions in the same order
    /// (bit for bit), kept from one pass: the share before a sample only grows along it (the
    /// weights are >= 0 and rounding is monotonic), so where it first exceeds 1/2 is found by
    /// bisection instead of a second pass.
    pub(crate) fn median_with(&self, sums: &mut Vec<f64>) -> Option<f64> {
        let (order, weights, latencies) = (self.order(), self.weights(), self.latencies());
        if order.is_empty() {
            return None;
        }
        let latency_at = |k: usize| f64::from(latencies[order[k] as usize]);
        let first = latency_at(0);
        // sums[k]: the weight before the k-th sample in order, as the loop sums it
        sums.resize(order.len(), 0.0);
        let sums = &mut sums[..order.len()];
        // from 0 as the loop's `before` (the first addition gives the first weight exactly, so
        // the total is also `Sum`'s, whichever zero that starts from)
        let mut before = 0.0;
        for (sum, &slot) in sums.iter_mut().zip(order) {
            *sum = before;
            before += weights[slot as usize];
        }
        let total = before;
        // the loop stops at the first k with sums[k] / total > 0.5 (never at k = 0: the share
        // is 0 there, or NaN if every weight decayed to 0), and the median is sample k - 1's.
        // Bisected without dividing: a share above 1/2 needs a sum above half the total (exact
        // while that half is a normal number), so the first k past half the total is where to
        // start, and the division, which rounds such shares above 1/2, only confirms it there.
        debug_assert!(total >= 0.0, "a sum of weights {total} is not negative");
        let passes = |k: usize| sums[k] / total > 0.5;
        let half = 0.5 * total;
        let mut k = if half >= f64::MIN_POSITIVE { sums.partition_point(|&b| b <= half) } else { 0 };
        while k < sums.len() && !passes(k) {
            k += 1;
        }
        Some(if k == 0 { first } else { latency_at(k - 1) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::Rng;
    use crate::time::MS;

    #[test]
    fn reservoir_survives_long_runs_without_overflow() {
        let mut r = Reservoir::default();
        let mut rng = Rng::new(1, 2);
        for i in 0..10_000u64 {
            r.add(i * 50 * MS, (i % 7) as u32, 0.75, 100, rng.unit());
        }
        assert!(r.priorities().iter().chain(r.weights()).all(|x| x.is_finite()));
        let m = r.median().expect("samples");
        assert!((0.0..7.0).contains(&m));
    }

    /// The reservoir as Cassandra's code has it: samples in slot order, the lowest priority found
    /// by a scan, the median over a stable sort by latency.
    #[derive(Default)]
    struct Model {
        /// (priority, latency, weight) by slot.
        samples: Vec<(f64, f64, f64)>,
        landmark: Nanos,
    }

    impl Model {
        fn add(&mut self, now: Nanos, value: f64, alpha: f64, size: usize, u: f64) {
            if self.samples.is_empty() {
                self.landmark = now;
            }
            let mut age = now.saturating_sub(self.landmark) as f64 / SEC as f64;
            if alpha * age > MAX_DECAY_EXPONENT {
                let scale = (-alpha * age).exp();
                for s in &mut self.samples {
                    s.0 *= scale;
                    s.2 *= scale;
                }
                self.landmark = now;
                age = 0.0;
            }
            let weight = (alpha * age).exp();
            let priority = weight / (1.0 - u);
            if self.samples.len() < size.max(1) {
                self.samples.push((priority, value, weight));
            } else if let Some(lowest) =
                (0..self.samples.len()).min_by(|&a, &b| self.samples[a].0.total_cmp(&self.samples[b].0))
            {
                if self.samples[lowest].0 < priority {
                    self.samples[lowest] = (priority, value, weight);
                }
            }
        }

        fn median(&self) -> Option<f64> {
            let mut v: Vec<(f64, f64)> = self.samples.iter().map(|s| (s.1, s.2)).collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            let total: f64 = v.iter().map(|s| s.1).sum();
            let (mut before, mut median) = (0.0, v.first()?.0);
            for &(value, weight) in &v {
                if before / total > 0.5 {
                    break;
                }
                median = value;
                before += weight;
            }
            Some(median)
        }
    }

    /// The reservoir holds the samples the model holds, slot for slot, its order is sorted, and
    /// its median is the model's bit for bit: many equal latencies (whole microseconds), equal
    /// priorities (a coarse `u`), replacements, landmark moves, clears, and sizes from 1 (odd
    /// ones too: the `u32` arrays share words).
    #[test]
    fn the_reservoir_is_the_slot_order_reservoir() {
        let mut rng = Rng::new(5, 6);
        for (size, step, values, coarse) in [
            (60, 7 * MS, 40, false),
            (100, 3 * MS, 3000, false),
            (1, MS, 5, false),
            (7, 900 * MS, 4, true),
            (100, 20 * MS, 10, true),
            (9, 0, 6, true),
        ] {
            let (mut r, mut model) = (Reservoir::default(), Model::default());
            assert_eq!(r.median(), None);
            for i in 0..20_000u64 {
                if i % 7_000 == 6_999 {
                    r.clear();
                    model = Model::default();
                }
                let value = rng.below(values) as u32;
                let u = if coarse { rng.below(4) as f64 / 4.0 } else { rng.unit() };
                r.add(i * step, value, 0.75, size, u);
                model.add(i * step, f64::from(value), 0.75, size, u);
                assert_eq!(r.median().map(f64::to_bits), model.median().map(f64::to_bits), "size {size}, after {i}");
                let held: Vec<_> = (0..r.len())
                    .map(|j| [r.priorities()[j], f64::from(r.latencies()[j]), r.weights()[j]].map(f64::to_bits))
                    .collect();
                let expected: Vec<_> = model.samples.iter().map(|s| [s.0, s.1, s.2].map(f64::to_bits)).collect();
                assert_eq!(held, expected, "size {size}, after {i}");
                // every slot once, sorted by latency, ties by slot
                let key = |&s: &u32| (r.latencies()[s as usize], s);
                assert!(r.order().windows(2).all(|w| key(&w[0]) < key(&w[1])), "size {size}, after {i}");
                assert_eq!(r.order().len(), r.len());
                assert!(r.cap() <= size.max(2));
            }
        }
    }
}
