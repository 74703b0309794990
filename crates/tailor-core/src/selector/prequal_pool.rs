//! Prequal's probe pool: at most one answer per replica, with the answers' requests-in-flight
//! also kept sorted and the replicas' ids in a compact array beside the probes, so what every
//! query reads (the hot-cold threshold, a quantile of the pool's RIFs, and the probes of its own
//! replicas) costs a lookup and a short scan instead of passes over the pool.

use crate::model::NodeId;
use crate::time::Nanos;

/// One probe answer in the pool.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probe {
    /// The replica that answered.
    pub replica: NodeId,
    /// Its requests in flight, plus the queries this coordinator sent it since.
    pub rif: u32,
    /// Its latency estimate at that RIF, ns.
    pub latency: Nanos,
    /// When the answer arrived.
    pub at: Nanos,
    /// Queries it routed.
    pub uses: u32,
}

/// The pool, in arrival order (swap-removes aside): the order candidates are offered in.
#[derive(Clone, Debug, Default)]
pub struct Pool {
    probes: Vec<Probe>,
    /// The probes' `rif`s, ascending.
    rifs: Vec<u32>,
    /// `probes[i].replica` at `i`: the few lines [`Pool::find`] scans. An index by replica cost
    /// an entry for every server a coordinator ever probed (thousands at scale), and a cache
    /// miss to reach it.
    replicas: Vec<NodeId>,
    /// At most the oldest probe's arrival time: while it is fresh, so is every probe, and the
    /// pass over the pool that ageing needs is skipped (most queries find nothing aged out).
    oldest: Nanos,
}

impl Pool {
    /// Probes held.
    pub fn len(&self) -> usize {
        self.probes.len()
    }

    /// Whether no probe is held.
    pub fn is_empty(&self) -> bool {
        self.probes.is_empty()
    }

    /// The probes, in pool order.
    pub fn probes(&self) -> &[Probe] {
        &self.probes
    }

    /// The position of `replica`'s probe, if the pool holds one.
    #[inline]
    pub fn find(&self, replica: NodeId) -> Option<usize> {
        self.replicas.iter().position(|&r| r == replica)
    }

    /// The pool's structure: the three arrays in step, the RIFs sorted, `oldest` a lower bound.
    fn consistent(&self) -> bool {
        self.rifs.len() == self.probes.len()
            && self.replicas.len() == self.probes.len()
            && self.rifs.windows(2).all(|w| w[0] <= w[1])
            && self.probes.iter().zip(&self.replicas).all(|(p, &r)| p.replica == r && p.at >= self.oldest)
    }

    fn add_rif(&mut self, rif: u32) {
        let at = self.rifs.partition_point(|&r| r <= rif);
        self.rifs.insert(at, rif);
    }

    /// Change one of the sorted `rifs` from `old` to `new` in place, shifting only the values
    /// between them (a probe's RIF mostly moves by one, a use: no shift at all).
    fn change_rif(&mut self, old: u32, new: u32) {
        let rifs = &mut self.rifs;
        let mut i;
        if new >= old {
            // the last `old`, moved up past the values below `new`
            i = rifs.partition_point(|&r| r <= old) - 1;
            while i + 1 < rifs.len() && rifs[i + 1] < new {
                rifs[i] = rifs[i + 1];
                i += 1;
            }
        } else {
            // the first `old`, moved down past the values above `new`
            i = rifs.partition_point(|&r| r < old);
            while i > 0 && rifs[i - 1] > new {
                rifs[i] = rifs[i - 1];
                i -= 1;
            }
        }
        debug_assert!(i < rifs.len(), "a held probe's rif is in the sorted list");
        rifs[i] = new;
    }

    fn remove_rif(rifs: &mut Vec<u32>, rif: u32) {
        let at = rifs.binary_search(&rif).expect("a held probe's rif is in the sorted list");
        rifs.remove(at);
    }

    /// Add `probe` at the end.
    pub fn push(&mut self, probe: Probe) {
        assert!(self.find(probe.replica).is_none(), "one probe per replica");
        self.add_rif(probe.rif);
        self.replicas.push(probe.replica);
        self.oldest = self.oldest.min(probe.at);
        self.probes.push(probe);
        debug_assert!(self.consistent(), "pool after a push: {self:?}");
    }

    /// Put `probe` in place of the `i`-th, a probe of the same replica.
    pub fn replace(&mut self, i: usize, probe: Probe) {
        assert_eq!(self.probes[i].replica, probe.replica, "a probe replaces its replica's");
        self.change_rif(self.probes[i].rif, probe.rif);
        self.oldest = self.oldest.min(probe.at);
        self.probes[i] = probe;
        debug_assert!(self.consistent(), "pool after a replace: {self:?}");
    }

    /// Remove the `i`-th; the last takes its place.
    pub fn swap_remove(&mut self, i: usize) -> Probe {
        Self::remove_rif(&mut self.rifs, self.probes[i].rif);
        self.replicas.swap_remove(i);
        let gone = self.probes.swap_remove(i);
        debug_assert!(self.consistent(), "pool after a removal: {self:?}");
        debug_assert!(self.find(gone.replica).is_none(), "a removed replica's probe is gone: one per replica");
        gone
    }

    /// Drop the probes older than `max_age` at `now`, keeping the others' order.
    pub fn retain_fresh(&mut self, now: Nanos, max_age: Nanos) {
        let fresh = |at: Nanos| now.saturating_sub(at) <= max_age;
        if fresh(self.oldest) {
            return;
        }
        // compacted in place: only the probes after the first aged one move
        let (mut kept, mut oldest) = (0, now);
        for i in 0..self.probes.len() {
            let p = self.probes[i];
            if !fresh(p.at) {
                Self::remove_rif(&mut self.rifs, p.rif);
                continue;
            }
            self.probes[kept] = p;
            self.replicas[kept] = p.replica;
            oldest = oldest.min(p.at);
            kept += 1;
        }
        self.probes.truncate(kept);
        self.replicas.truncate(kept);
        self.oldest = oldest;
        debug_assert!(self.consistent(), "pool after ageing: {self:?}");
        debug_assert!(self.probes.iter().all(|p| fresh(p.at)), "no aged probe is left");
    }

    /// The `i`-th routed one more query: one more use, one more request in flight.
    pub fn used(&mut self, i: usize) -> Probe {
        let old = self.probes[i];
        let p = Probe { uses: old.uses + 1, rif: old.rif + 1, ..old };
        self.change_rif(old.rif, p.rif);
        self.probes[i] = p;
        debug_assert!(self.consistent(), "pool after a use: {self:?}");
        p
    }

    /// The RIF at quantile `q` (in (0, 1]) of the pool: the `ceil(q * len)`-th smallest, at
    /// least the smallest. The pool must not be empty.
    pub fn rif_quantile(&self, q: f64) -> u32 {
        debug_assert!(q > 0.0 && q <= 1.0, "a quantile in (0, 1], got {q}");
        debug_assert!(!self.rifs.is_empty(), "a quantile of an empty pool");
        let rank = (q * self.rifs.len() as f64).ceil() as usize;
        self.rifs[rank.clamp(1, self.rifs.len()) - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(replica: NodeId, rif: u32, at: Nanos) -> Probe {
        Probe { replica, rif, latency: 0, at, uses: 0 }
    }

    /// The quantile read from a fresh selection over the probes, as the pool once computed it.
    fn selected(pool: &Pool, q: f64) -> u32 {
        let mut rifs: Vec<u32> = pool.probes().iter().map(|p| p.rif).collect();
        let rank = (q * rifs.len() as f64).ceil() as usize;
        let i = rank.clamp(1, rifs.len()) - 1;
        *rifs.select_nth_unstable(i).1
    }

    #[test]
    fn the_sorted_rifs_follow_every_change_to_the_pool() {
        let mut pool = Pool::default();
        let mut x: u64 = 7;
        for step in 0..2_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = (x >> 33) as u32;
            match r % 5 {
                0 | 1 if pool.find(r % 40).is_none() => pool.push(probe(r % 40, r % 13, step)),
                2 if !pool.is_empty() => {
                    let i = r as usize % pool.len();
                    pool.replace(i, probe(pool.probes()[i].replica, r % 7, step));
                }
                3 if !pool.is_empty() => {
                    pool.used(r as usize % pool.len());
                }
                4 if !pool.is_empty() => {
                    pool.swap_remove(r as usize % pool.len());
                }
                _ => pool.retain_fresh(step, 30),
            }
            for (i, p) in pool.probes().iter().enumerate() {
                assert_eq!(pool.find(p.replica), Some(i), "step {step}");
            }
            if !pool.is_empty() {
                for q in [0.01, 0.5, 0.75, 1.0] {
                    assert_eq!(pool.rif_quantile(q), selected(&pool, q), "step {step}, q {q}");
                }
            }
        }
    }

    #[test]
    fn used_counts_a_use_and_a_request_in_flight() {
        let mut pool = Pool::default();
        pool.push(probe(3, 2, 0));
        assert_eq!(pool.used(0), Probe { uses: 1, rif: 3, ..probe(3, 2, 0) });
        assert_eq!(pool.rif_quantile(1.0), 3);
        pool.retain_fresh(100, 10);
        assert!(pool.is_empty());
    }
}
