//! Multi-gets in flight (`workload.multiget`): which sub-reads make up each, and the figures of
//! the whole requests (latency from release to the last key's answer, straggler gap). A
//! sub-read is an ordinary read to the cores, carrying its multi-get's bottleneck
//! (`ClientRequest::fanout`); only the engine knows which reads make up a multi-get.

use std::collections::HashMap;
use tailor_core::results::{KeyCounts, MultigetResult};
use tailor_core::stats::Hist;
use tailor_core::time::{from_ms, Nanos};
use tailor_core::RequestId;
use tailor_spec::Spec;

/// One multi-get in flight.
struct Group {
    release: Nanos,
    client: u32,
    /// Sub-reads not over yet.
    left: u32,
    failed: bool,
    /// The answered sub-reads' latencies.
    latencies: Vec<Nanos>,
}

impl Group {
    /// A free slot's placeholder.
    fn empty() -> Self {
        Group { release: 0, client: 0, left: 0, failed: false, latencies: Vec::new() }
    }
}

/// The median of sorted `v` (the mean of the middle two for an even count).
fn median(v: &[Nanos]) -> Nanos {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

/// What the end of a read means for its multi-get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SubOver {
    /// The read was a single read.
    Single,
    /// Its multi-get still waits for other keys.
    Pending,
    /// It was its multi-get's last key: the multi-get is over at `client`.
    Finished { client: u32 },
}

/// The multi-gets of one run.
pub(crate) struct Multigets {
    /// The fewest and the most keys of a multi-get opened so far.
    keys: KeyCounts,
    warmup: Nanos,
    groups: Vec<Group>,
    free: Vec<u32>,
    /// Each sub-read in flight's multi-get (its slot in `groups`).
    of_sub: HashMap<RequestId, u32>,
    latency: Hist,
    gap: Hist,
    measured: u64,
    failed: u64,
}

impl Multigets {
    /// The tracker for `spec`, or none when the workload has no multi-gets.
    pub(crate) fn new(spec: &Spec) -> Option<Self> {
        let m = &spec.workload.multiget;
        m.enabled().then(|| Multigets {
            keys: KeyCounts::default(),
            warmup: from_ms(spec.workload.warmup_ms),
            groups: Vec::new(),
            free: Vec::new(),
            of_sub: HashMap::new(),
            latency: Hist::latency(),
            gap: Hist::latency(),
            measured: 0,
            failed: 0,
        })
    }

    /// A multi-get of `keys` sub-reads released at `release` by `client`: its slot.
    pub(crate) fn open(&mut self, release: Nanos, client: u32, keys: usize) -> u32 {
        self.keys.saw(keys as u32);
        let group = Group { release, client, left: keys as u32, failed: false, latencies: Vec::with_capacity(keys) };
        match self.free.pop() {
            Some(slot) => {
                self.groups[slot as usize] = group;
                slot
            }
            None => {
                self.groups.push(group);
                self.groups.len() as u32 - 1
            }
        }
    }

    /// Read `sub` belongs to the multi-get in `slot`.
    pub(crate) fn add(&mut self, slot: u32, sub: RequestId) {
        self.of_sub.insert(sub, slot);
    }

    /// Whether read `sub` is part of a multi-get still in flight.
    #[cfg(test)]
    fn holds(&self, sub: RequestId) -> bool {
        self.of_sub.contains_key(&sub)
    }

    /// Read `sub` is over at `now`, answered (`ok`) or failed.
    pub(crate) fn sub_over(&mut self, sub: RequestId, now: Nanos, ok: bool) -> SubOver {
        let Some(slot) = self.of_sub.remove(&sub) else { return SubOver::Single };
        let g = &mut self.groups[slot as usize];
        g.left -= 1;
        g.failed |= !ok;
        if ok {
            g.latencies.push(now - g.release);
        }
        if g.left > 0 {
            return SubOver::Pending;
        }
        let g = std::mem::replace(&mut self.groups[slot as usize], Group::empty());
        let client = g.client;
        self.free.push(slot);
        self.record(g);
        SubOver::Finished { client }
    }

    /// Record a finished multi-get released after the warm-up.
    fn record(&mut self, mut g: Group) {
        if g.release < self.warmup {
            return;
        }
        if g.failed {
            self.failed += 1;
            return;
        }
        self.measured += 1;
        g.latencies.sort_unstable();
        let last = *g.latencies.last().expect("a multi-get has keys");
        self.latency.record_units(last);
        self.gap.record_units(last - median(&g.latencies));
    }

    /// The run's multi-get figures.
    pub(crate) fn finish(&self) -> MultigetResult {
        let (keys, keys_max) = self.keys.fields();
        MultigetResult {
            keys,
            keys_max,
            requests: self.measured,
            failed: self.failed,
            latency_ms: self.latency.summary(),
            straggler_gap_ms: self.gap.summary(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker() -> Multigets {
        let spec = Spec::default().with_overrides(&["workload.multiget.keys=3"]).unwrap();
        Multigets::new(&spec).unwrap()
    }

    #[test]
    fn a_multiget_ends_with_its_last_key_and_its_gap_is_last_minus_median() {
        let mut m = tracker();
        let slot = m.open(100, 7, 3);
        (1..=3).for_each(|sub| m.add(slot, sub));
        assert!(m.holds(2));
        assert_eq!(m.sub_over(9, 150, true), SubOver::Single);
        assert_eq!(m.sub_over(2, 1_100, true), SubOver::Pending);
        assert_eq!(m.sub_over(1, 2_100, true), SubOver::Pending);
        assert_eq!(m.sub_over(3, 10_100, true), SubOver::Finished { client: 7 });
        let r = m.finish();
        assert_eq!((r.requests, r.failed), (1, 0));
        // latencies 1 000, 2 000 and 10 000 ns: last 10 µs, gap 10 − 2 = 8 µs
        assert!((r.latency_ms.max - 0.010).abs() < 1e-5, "{:?}", r.latency_ms);
        assert!((r.straggler_gap_ms.max - 0.008).abs() < 1e-5, "{:?}", r.straggler_gap_ms);
        assert!(!m.holds(2), "over: forgotten");
    }

    #[test]
    fn a_failed_key_fails_the_multiget_and_its_slot_is_reused() {
        let mut m = tracker();
        let slot = m.open(0, 1, 2);
        m.add(slot, 1);
        m.add(slot, 2);
        m.sub_over(1, 10, false);
        assert_eq!(m.sub_over(2, 20, true), SubOver::Finished { client: 1 });
        assert_eq!(m.open(30, 2, 1), slot);
        let r = m.finish();
        assert_eq!((r.requests, r.failed), (0, 1));
        assert_eq!(median(&[1, 2, 3, 10]), 2);
    }
}
