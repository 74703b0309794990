//! `rein-sbf`: Rein's Shortest-Bottleneck-First (Reda et al., "Rein: Taming Tail Latency in
//! Key-Value Stores via Multiget Scheduling", EuroSys 2017). A multi-get is as slow as its
//! slowest *opgroup* (Rein's name for its keys bound to one server, served one after another
//! there), so a replica serves first the reads whose multi-get has the smallest bottleneck: its
//! coordinator tags every sub-read with the largest summed processing time it estimates over
//! the multi-get's opgroups ([`multiget_tags`]), and a single read's bottleneck is its own
//! processing time. Rein groups after replica selection; the tag is set before it here, so an
//! opgroup is the keys whose replica sets share their primary (Tailor's approximation).
//!
//! Like Rein, the order is approximated by a few FIFO levels rather than a sorted queue: level
//! 0 holds bottlenecks up to the replica's running mean processing time, level `l` those up to
//! `2^l` times it, the last level the rest; the lowest non-empty level is served first. The
//! starvation guard: a level's oldest job that has waited more than [`STARVATION_MEANS`] mean
//! processing times is served before any level (the oldest such job first), so a multi-get
//! with a large bottleneck is delayed, never starved. The levels' spacing and the guard's bound
//! are Tailor's choices (docs/strategies.md).

use super::LocalQueue;
use crate::model::{JobMeta, Tags};
use crate::time::Nanos;
use std::collections::VecDeque;

/// FIFO levels.
pub const LEVELS: usize = 8;
/// Waiting longer than this many mean processing times lifts a job over every level.
pub const STARVATION_MEANS: f64 = 32.0;

/// The tags a coordinator gives each sub-read of a multi-get whose keys it estimates at
/// `estimates` (each key's opgroup, here its primary replica, and its processing time, `None`
/// where it has no estimate): the largest opgroup's summed estimate, in µs (0 when any is
/// unknown: the replica then ranks the read by its own processing time, as a single read's).
pub fn multiget_tags(estimates: impl IntoIterator<Item = (crate::model::NodeId, Option<Nanos>)>) -> Tags {
    let mut groups: Vec<(crate::model::NodeId, Nanos)> = Vec::new();
    for (group, e) in estimates {
        let Some(e) = e else { return Tags::default() };
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, sum)) => *sum = sum.saturating_add(e),
            None => groups.push((group, e)),
        }
    }
    let largest = groups.iter().map(|&(_, sum)| sum).max().unwrap_or(0);
    let us = largest.div_ceil(1_000).clamp(1, u16::MAX as u64);
    Tags { bottleneck_us: us as u16, ..Tags::default() }
}

/// Multi-level Shortest-Bottleneck-First queue.
pub struct ReinSbf<T> {
    levels: [VecDeque<(JobMeta, T)>; LEVELS],
    /// Sum and count of the processing times pushed: the levels' unit.
    service_sum: f64,
    pushed: u64,
}

impl<T> ReinSbf<T> {
    /// An empty queue.
    pub fn new() -> Self {
        ReinSbf { levels: std::array::from_fn(|_| VecDeque::new()), service_sum: 0.0, pushed: 0 }
    }

    fn mean_service(&self) -> f64 {
        self.service_sum / self.pushed.max(1) as f64
    }

    /// The job's bottleneck in ns: its multi-get's tag; without one (a single read, or no
    /// estimate at the coordinator), its own processing time.
    fn bottleneck(meta: &JobMeta) -> f64 {
        match meta.tags.bottleneck_us {
            0 => meta.service as f64,
            us => f64::from(us) * 1e3,
        }
    }

    /// Level 0 up to one mean processing time, level `l` up to `2^l` of them.
    fn level(&self, meta: &JobMeta) -> usize {
        let ratio = Self::bottleneck(meta) / self.mean_service().max(1.0);
        if ratio <= 1.0 {
            0
        } else {
            (ratio.log2().ceil() as usize).min(LEVELS - 1)
        }
    }

    /// The level whose head has waited longest beyond the starvation bound, if any.
    fn starved(&self, now: Nanos) -> Option<usize> {
        let bound = STARVATION_MEANS * self.mean_service();
        (0..LEVELS)
            .filter_map(|l| self.levels[l].front().map(|(m, _)| (m.enqueued, l)))
            .filter(|&(enqueued, _)| now.saturating_sub(enqueued) as f64 > bound)
            .min()
            .map(|(_, l)| l)
    }
}

impl<T> Default for ReinSbf<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send> LocalQueue<T> for ReinSbf<T> {
    fn push(&mut self, _now: Nanos, meta: JobMeta, payload: T) {
        self.service_sum += meta.service as f64;
        self.pushed += 1;
        let level = self.level(&meta);
        self.levels[level].push_back((meta, payload));
    }

    fn pop(&mut self, now: Nanos) -> Option<(JobMeta, T)> {
        let level = self.starved(now).or_else(|| self.levels.iter().position(|q| !q.is_empty()))?;
        self.levels[level].pop_front()
    }

    fn len(&self) -> usize {
        self.levels.iter().map(VecDeque::len).sum()
    }
}

/// `rein-sbf`: Rein's Shortest-Bottleneck-First.
pub const REGISTRATION: super::LocalRegistration = super::LocalRegistration {
    name: "rein-sbf",
    source: "Rein (Reda et al., EuroSys 2017), Shortest-Bottleneck-First over multi-level queues",
};

/// Build a `rein-sbf` queue.
pub fn build<T: Send + 'static>(_cfg: &super::LocalConfig, _seed: u64) -> Box<dyn LocalQueue<T>> {
    Box::new(ReinSbf::new())
}

#[cfg(test)]
mod tests {
    use super::super::testkit::job;
    use super::*;

    fn sub_read(id: u64, at: Nanos, service: Nanos, bottleneck_us: u16) -> JobMeta {
        JobMeta { tags: Tags { bottleneck_us, ..Tags::default() }, ..job(id, at, service) }
    }

    #[test]
    fn tags_carry_the_largest_opgroups_estimate() {
        let t = multiget_tags([(0, Some(2_000)), (1, Some(9_500)), (2, Some(100))]);
        assert_eq!((t.bottleneck_us, t.priority, t.size_class), (10, 0, 0));
        assert_eq!(multiget_tags([(0, Some(2_000)), (1, None)]).bottleneck_us, 0, "unknown cost: no bottleneck");
        assert_eq!(multiget_tags([(0, Some(u64::MAX))]).bottleneck_us, u16::MAX, "saturates");
        // three keys on one primary outweigh a larger key alone: the opgroup is the bottleneck
        let grouped = multiget_tags([(4, Some(3_000)), (4, Some(3_000)), (4, Some(3_000)), (5, Some(8_000))]);
        assert_eq!(grouped.bottleneck_us, 9);
    }

    #[test]
    fn smallest_bottleneck_first_fifo_within_a_level() {
        let mut q = ReinSbf::new();
        // every job costs 1 ms here: the unit is 1 ms
        q.push(0, sub_read(1, 0, 1_000_000, 50_000), 'a'); // bottleneck 50 ms: level 6
        q.push(1, sub_read(2, 1, 1_000_000, 3_000), 'b'); // 3 ms: level 2
        q.push(2, sub_read(3, 2, 1_000_000, 900), 'c'); // 0.9 ms: level 0
        q.push(3, job(4, 3, 1_000_000), 'd'); // a single read: its own 1 ms, level 0
        q.push(4, sub_read(5, 4, 1_000_000, 4_000), 'e'); // 4 ms: level 2, after b
        let order: Vec<char> = std::iter::from_fn(|| q.pop(5).map(|j| j.1)).collect();
        assert_eq!(order, vec!['c', 'd', 'b', 'e', 'a']);
    }

    #[test]
    fn a_job_waiting_past_the_bound_is_served_first() {
        let mut q = ReinSbf::new();
        q.push(0, sub_read(1, 0, 1_000, 60), 'a'); // 60 µs against a 1 µs mean: last level
        q.push(10, sub_read(2, 10, 1_000, 1), 'b');
        assert_eq!(q.pop(20).map(|j| j.1), Some('b'), "within the bound the smaller bottleneck goes first");
        q.push(20, sub_read(3, 20, 1_000, 1), 'c');
        let bound = (STARVATION_MEANS * 1_000.0) as Nanos;
        assert_eq!(q.pop(bound + 1).map(|j| j.1), Some('a'), "past the bound the old job goes first");
        assert_eq!(q.pop(bound + 1).map(|j| j.1), Some('c'));
    }
}
