//! The one facts accountant: what each fact a replica piggybacks means ([`Feedback`]) and how it
//! is measured (docs/strategies.md, Facts). A new fact is a field here, its measurement in
//! [`Accountant::facts`], and its entry in the store's internode codec.
//!
//! Both engines feed it the same three events (a job waits, a job starts, a job finishes), so a
//! fact means the same thing in the simulator and in the store:
//! - `queue_len` is the number of requests *waiting* (not running) when the facts leave, as
//!   absim (the source of C3's constants) reports it; TAP's `Q_f > 30` reads the same number.
//! - `dq` is `queue_len` now minus `queue_len` at `now - 20 ms` (a sliding window over a step
//!   history that starts with an empty replica at time 0), not a value reset every 20 ms. The
//!   simulator measures it only for a selector that reads it ([`Accountant::without_dq`]).
//! - `pending_work` is the estimated work waiting plus the estimated *remaining* work of each
//!   running request (its estimate minus the time it has run, at least 0).
//! - `busy` is true while at least one request for a large value runs (Héron; large writes
//!   count too: they occupy the device the same way).
//! - `completed` counts every request a worker finished, failed ones included.
//! - `utilization` is the busy worker-time over workers × elapsed time since the start of the
//!   previous [`UTILIZATION_SLOT`] (slots are aligned at multiples of it on the replica's clock,
//!   so the window spans one to two slots; from time 0 until the first slot ends, since 0). It
//!   is ORCA's utilization for gRPC's weighted round robin; receivers derive the rate from
//!   `completed`, as nothing else needs it carried.
//!
//! Cost per event and per `facts` call: counters (`utilization`: a multiply-add per start and
//! finish and a compare with the next slot's start), except `pending_work`'s sum and `finishes`'
//! lookup over the running requests (at most the worker count, and a running request's
//! remaining estimate saturates at 0, so no running sum can replace that sum), and `dq`'s walk
//! to the window's baseline, which `record` keeps within a step or two of the front. Nothing
//! rescans the history; a test checks these values against a rescan on random event sequences.

use crate::model::NodeId;
use crate::time::{round_nonneg, Nanos, MS};
use std::collections::VecDeque;

/// The facts a replica piggybacks on a response or acknowledgement, stamped with its clock.
///
/// A fixed struct rather than a dynamic map: every strategy reads the fields it needs, and the
/// simulator's hot path never allocates (an empty `bloom_bits` does not allocate).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Feedback {
    /// The replica that measured these facts.
    pub from: NodeId,
    /// The sender's clock when the facts were measured.
    pub timestamp: Nanos,
    /// Requests waiting (not running) at the replica when the response left.
    pub queue_len: u32,
    /// Service time of the request this response answers (0 for a broadcast).
    pub service_time: Nanos,
    /// Requests the replica has completed so far (a counter; receivers derive a rate).
    pub completed: u64,
    /// True while the replica executes a request for a large value (Héron).
    pub busy: bool,
    /// Change of the queue length over the last 20 ms window (TAP; 0 from a replica that does
    /// not measure it, [`Accountant::without_dq`]).
    pub dq: i64,
    /// Estimated work queued or running at the replica, in nanoseconds (EFT in the store).
    pub pending_work: Nanos,
    /// Bloom filter bits newly set at the replica since its last message to this receiver (Héron).
    pub bloom_bits: Vec<u32>,
    /// Generation of the replica's Bloom filter (filters are rebuilt periodically).
    pub bloom_generation: u32,
    /// Busy worker-time over workers × time, from the start of the previous
    /// [`UTILIZATION_SLOT`] until the facts leave (gRPC WRR's ORCA utilization; 0 to 1).
    pub utilization: f64,
}

/// A replica's answer to a probe (Prequal): how loaded it is now, answered at once, unqueued.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProbeReply {
    /// Requests in flight (waiting or running) at the replica when the probe arrived.
    pub rif: u32,
    /// Its latency estimate for a request arriving at that many requests in flight, in ns (0:
    /// nothing measured yet).
    pub latency: Nanos,
}

/// Requests-in-flight levels [`RifLatency`] keeps apart; higher counts share the last level.
pub const RIF_LEVELS: usize = 64;

/// Weight of the newest sample in each level's moving average.
pub const RIF_EWMA_WEIGHT: f64 = 0.2;

/// Prequal's latency per requests-in-flight level: for every request, the time from its arrival
/// at the replica to its completion, averaged (EWMA, [`RIF_EWMA_WEIGHT`]) over recent requests
/// that arrived at the same number of requests in flight. A probe's estimate is the level of
/// the current count, or the nearest level measured (a lower one first) while that one is
/// empty. Kept only by replicas that answer probes ([`crate::replica::ReplicaCore::with_probe_estimates`]):
/// it costs a map entry per request.
#[derive(Clone, Debug, Default)]
pub struct RifLatency {
    /// Requests here: arrival time and requests in flight found on arrival.
    arrived: rustc_hash::FxHashMap<u64, (Nanos, u32)>,
    /// Average latency per level, ns (`None`: never measured).
    levels: Vec<Option<f64>>,
}

impl RifLatency {
    /// Request `id` arrived at `now` and found `rif` requests in flight.
    pub fn arrives(&mut self, now: Nanos, id: u64, rif: u32) {
        let earlier = self.arrived.insert(id, (now, rif));
        debug_assert!(earlier.is_none(), "request {id} arrived twice while in flight");
    }

    /// Request `id` completed at `now`.
    pub fn finishes(&mut self, now: Nanos, id: u64) {
        let Some((at, rif)) = self.arrived.remove(&id) else { return };
        if self.levels.is_empty() {
            self.levels = vec![None; RIF_LEVELS];
        }
        let sample = now.saturating_sub(at) as f64;
        let level = &mut self.levels[(rif as usize).min(RIF_LEVELS - 1)];
        *level = Some(level.map_or(sample, |avg| avg + RIF_EWMA_WEIGHT * (sample - avg)));
        // an average of non-negative samples
        debug_assert!(level.is_some_and(|avg| avg.is_finite() && avg >= 0.0), "level {rif}: {level:?}");
    }

    /// Request `id` was cancelled before it ran: no sample.
    pub fn forgets(&mut self, id: u64) {
        self.arrived.remove(&id);
    }

    /// The latency estimate for a request arriving at `rif` requests in flight, in ns.
    pub fn estimate(&self, rif: u32) -> Nanos {
        let at = (rif as usize).min(RIF_LEVELS - 1);
        // every probe asks: the level itself is almost always measured, so try it first
        let nearest = self.levels.get(at).copied().flatten().or_else(|| {
            (1..RIF_LEVELS).find_map(|d| {
                let below = at.checked_sub(d).and_then(|i| self.levels.get(i).copied().flatten());
                below.or_else(|| self.levels.get(at + d).copied().flatten())
            })
        });
        // averages of non-negative samples: `round_nonneg` is `round` here, without libm's call
        nearest.map_or(0, |ns| round_nonneg(ns) as Nanos)
    }
}

/// Window of TAP's `dq`.
pub const DQ_WINDOW: Nanos = 20 * MS;

/// Most samples the `dq` history keeps: a replica changing its queue more than this often in
/// 20 ms measures `dq` against a slightly younger baseline instead of growing without bound.
const MAX_HISTORY: usize = 4096;

/// Slot of [`Feedback::utilization`]: its window starts at the previous slot's start, so it
/// spans 100 to 200 ms (short beside gRPC's 1 s weight updates, because simulated runs last
/// seconds and C3's service rates change every 10 to 500 ms).
pub const UTILIZATION_SLOT: Nanos = 100 * MS;

/// The integral of the running count over time, kept at the last event and at the starts of
/// the current and previous [`UTILIZATION_SLOT`]: O(1) per event, exact at any later time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct BusyTime {
    /// Time of the last start or finish.
    last: Nanos,
    /// Busy worker-ns from 0 to `last`.
    at_last: u64,
    /// Start of the slot holding `last`.
    slot: Nanos,
    /// Busy worker-ns from 0 to `slot`, and to `slot - UTILIZATION_SLOT` (0 before 0).
    at_slot: u64,
    at_previous_slot: u64,
    /// Workers of the replica (the denominator).
    workers: u32,
}

impl BusyTime {
    /// Busy worker-ns from 0 to `t` (`t` at or after `last`), `running` jobs running since `last`.
    fn at(&self, t: Nanos, running: usize) -> u64 {
        self.at_last + running as u64 * t.saturating_sub(self.last)
    }

    /// The running count changes at `now`; `running` jobs ran since the last change.
    #[inline]
    fn advance(&mut self, now: Nanos, running: usize) {
        if now >= self.slot + UTILIZATION_SLOT {
            let slot = now - now % UTILIZATION_SLOT;
            let previous = slot - UTILIZATION_SLOT;
            self.at_previous_slot = if previous == self.slot { self.at_slot } else { self.at(previous, running) };
            self.at_slot = self.at(slot, running);
            self.slot = slot;
        }
        self.at_last = self.at(now, running);
        self.last = self.last.max(now);
    }

    /// Busy worker-time over workers × time since the start of the slot before `now`'s.
    fn utilization(&self, now: Nanos, running: usize) -> f64 {
        let start = (now - now % UTILIZATION_SLOT).saturating_sub(UTILIZATION_SLOT);
        let base = if start >= self.last {
            self.at(start, running)
        } else if start == self.slot {
            self.at_slot
        } else {
            self.at_previous_slot
        };
        let span = now.saturating_sub(start);
        if span == 0 {
            return 0.0;
        }
        self.at(now, running).saturating_sub(base) as f64 / (f64::from(self.workers) * span as f64)
    }
}

/// A request a worker runs, as the accountant tracks it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Running {
    id: u64,
    /// When its estimated processing time runs out.
    estimated_end: Nanos,
    large: bool,
}

/// Measures one replica's facts from its queue events.
#[derive(Clone, Debug)]
pub struct Accountant {
    id: NodeId,
    waiting: u32,
    waiting_work: Nanos,
    waiting_large: u32,
    running: Vec<Running>,
    /// Large requests among `running`, so `busy` is a counter read, not a scan.
    running_large: u32,
    completed: u64,
    /// Whether `dq` is measured (see [`Accountant::without_dq`]).
    measures_dq: bool,
    /// Requests the replica's queue cap refused (u32 beside the flag: it fills their padding).
    refused: u32,
    /// (time, waiting count) steps covering at least the last [`DQ_WINDOW`].
    history: VecDeque<(Nanos, u32)>,
    /// Busy worker-time behind `utilization` (boxed: a simulated server keeps three cache
    /// lines; `None` when not measured, [`Accountant::without_utilization`]).
    busy_time: Option<Box<BusyTime>>,
}

impl Accountant {
    /// The accountant of an empty replica `id`.
    pub fn new(id: NodeId) -> Self {
        Accountant {
            id,
            waiting: 0,
            waiting_work: 0,
            waiting_large: 0,
            running: Vec::new(),
            running_large: 0,
            completed: 0,
            measures_dq: true,
            refused: 0,
            history: VecDeque::from([(0, 0)]),
            busy_time: Some(Box::new(BusyTime { workers: 1, ..BusyTime::default() })),
        }
    }

    /// The replica runs `workers` jobs at once from now on (`utilization`'s denominator).
    pub fn set_workers(&mut self, workers: u32) {
        assert!(workers > 0, "a replica needs at least one worker");
        if let Some(b) = &mut self.busy_time {
            b.workers = workers;
        }
    }

    /// The same, not measuring `utilization` (its facts say 0): for an engine whose selectors
    /// do not read it (every one but gRPC WRR, [`crate::selector::reads`]); it saves a step
    /// per job start and finish in memory of its own.
    pub fn without_utilization(mut self) -> Self {
        self.busy_time = None;
        self
    }

    /// The queue cap refused a request ([`super::ReplicaCore::admits`]).
    pub fn refuses(&mut self) {
        let before = self.refused;
        self.refused = self.refused.saturating_add(1);
        debug_assert!(self.refused > before || before == u32::MAX, "a refusal is counted");
    }

    /// Requests the queue cap refused.
    pub fn refused(&self) -> u64 {
        u64::from(self.refused)
    }

    /// The same, not measuring `dq` (its facts say 0): for an engine whose selectors do not
    /// read it (every one but TAP, [`crate::selector::reads_dq`]). The queue-length history
    /// behind `dq` is a step per job arrival and start, 9 % of a simulated request's time.
    pub fn without_dq(mut self) -> Self {
        self.measures_dq = false;
        // nothing reads the steps again: no allocation per replica for them
        self.history = VecDeque::new();
        self
    }

    /// Where the next start, finish or queue change touches memory beyond the accountant
    /// itself (the running jobs, and both ends of the queue-length steps while `dq` is
    /// measured), as addresses never read through: see [`crate::local::LocalQueue::footprint`].
    pub fn footprint(&self) -> [*const u8; 3] {
        // without `dq` the steps are empty (`without_dq`): nothing to name
        let step = |s: Option<&(Nanos, u32)>| s.map_or(std::ptr::null(), |s| (s as *const (Nanos, u32)).cast());
        [self.running.as_ptr().cast(), step(self.history.get(1)), step(self.history.back())]
    }

    /// A request with estimate `service` started waiting at `now`.
    #[inline]
    pub fn waits(&mut self, now: Nanos, service: Nanos, large: bool) {
        debug_assert!(service > 0, "a waiting request has some work");
        self.waiting += 1;
        self.waiting_work += service;
        self.waiting_large += large as u32;
        self.record(now);
        self.check_invariants();
    }

    /// Waiting request `id` (estimate `service`) started running at `now`.
    #[inline]
    pub fn starts(&mut self, now: Nanos, id: u64, service: Nanos, large: bool) {
        assert!(self.waiting > 0, "a request starts only after it waited");
        debug_assert!(self.waiting_work >= service, "request {id} took out more work than waited: {service}");
        debug_assert!(self.waiting_large >= large as u32, "request {id} is a large one that never waited");
        debug_assert!(self.running.iter().all(|r| r.id != id), "request {id} started twice");
        self.waiting -= 1;
        self.waiting_work -= service;
        self.waiting_large -= large as u32;
        self.advance_busy_time(now);
        self.running.push(Running { id, estimated_end: now + service, large });
        self.running_large += large as u32;
        self.record(now);
        self.check_invariants();
    }

    /// A waiting request with estimate `service` was cancelled: it leaves the counts as if it
    /// had never waited (no queue-length step: cancelling reads no clock).
    pub fn withdraws(&mut self, service: Nanos, large: bool) {
        assert!(self.waiting > 0, "only a waiting request is withdrawn");
        self.waiting -= 1;
        self.waiting_work -= service;
        self.waiting_large -= large as u32;
        self.check_invariants();
    }

    /// Running request `id` finished at `now`.
    #[inline]
    pub fn finishes(&mut self, now: Nanos, id: u64) {
        let at = self.running.iter().position(|r| r.id == id).expect("only a running request finishes");
        self.advance_busy_time(now);
        let done = self.running.swap_remove(at);
        debug_assert!(self.running_large >= done.large as u32, "request {id}: more large ones finished than ran");
        self.running_large -= done.large as u32;
        self.completed += 1;
        self.check_invariants();
    }

    /// The sums match what they count and never went below zero (debug builds): no waiting
    /// work without waiting requests, no more large requests than requests, the large running
    /// count is the running list's, and the queue-length steps are in time order.
    #[inline]
    fn check_invariants(&self) {
        debug_assert!(
            self.waiting > 0 || self.waiting_work == 0,
            "{} ns of work wait in no request",
            self.waiting_work
        );
        debug_assert!(self.waiting_large <= self.waiting, "{} large of {} waiting", self.waiting_large, self.waiting);
        debug_assert!(
            self.waiting_work >= self.waiting as Nanos,
            "each waiting request has work: {} ns for {}",
            self.waiting_work,
            self.waiting
        );
        debug_assert_eq!(
            self.running_large as usize,
            self.running.iter().filter(|r| r.large).count(),
            "the large count is the running list's"
        );
        debug_assert!(self.history.len() <= MAX_HISTORY, "the dq history is bounded");
        debug_assert!(
            self.history.iter().zip(self.history.iter().skip(1)).all(|(a, b)| a.0 <= b.0),
            "queue-length steps in time order"
        );
    }

    /// The running count is about to change at `now`.
    #[inline]
    fn advance_busy_time(&mut self, now: Nanos) {
        if let Some(b) = &mut self.busy_time {
            b.advance(now, self.running.len());
        }
    }

    #[inline]
    fn record(&mut self, now: Nanos) {
        if !self.measures_dq {
            return;
        }
        self.history.push_back((now, self.waiting));
        // keep one sample at or before `now - DQ_WINDOW` as the window's baseline
        while self.history.len() > 2 && self.history[1].0 + DQ_WINDOW <= now {
            self.history.pop_front();
        }
        if self.history.len() > MAX_HISTORY {
            self.history.pop_front();
        }
    }

    /// Requests waiting.
    #[inline]
    pub fn waiting(&self) -> u32 {
        self.waiting
    }

    /// Requests running.
    #[inline]
    pub fn running(&self) -> usize {
        self.running.len()
    }

    /// Large-value requests waiting or running.
    #[inline]
    pub fn large_present(&self) -> bool {
        self.waiting_large > 0 || self.running_large > 0
    }

    /// Estimated work waiting or still to run at `now`.
    #[inline]
    pub fn pending_work(&self, now: Nanos) -> Nanos {
        self.waiting_work + self.running.iter().map(|r| r.estimated_end.saturating_sub(now)).sum::<Nanos>()
    }

    /// Change of the waiting count over the last [`DQ_WINDOW`].
    #[inline]
    fn dq(&self, now: Nanos) -> i64 {
        // samples are in time order and trimmed to about one window: scanning from the front
        // for the last one at or before `now - DQ_WINDOW` takes a step or two
        let mut base = self.history.front().map_or(0, |s| s.1);
        for &(t, len) in self.history.iter().skip(1) {
            if t + DQ_WINDOW > now {
                break;
            }
            base = len;
        }
        self.waiting as i64 - base as i64
    }

    /// The facts at `now`, for a reply to a request whose service took `service` (0 for a
    /// message that answers no request, like a heartbeat).
    #[inline]
    pub fn facts(&self, now: Nanos, service: Nanos) -> Feedback {
        Feedback {
            from: self.id,
            timestamp: now,
            queue_len: self.waiting,
            service_time: service,
            completed: self.completed,
            busy: self.running_large > 0,
            dq: if self.measures_dq { self.dq(now) } else { 0 },
            pending_work: self.pending_work(now),
            bloom_bits: Vec::new(),
            bloom_generation: 0,
            utilization: self.busy_time.as_ref().map_or(0.0, |b| b.utilization(now, self.running.len())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_len_counts_waiting_only_and_pending_work_counts_what_remains() {
        let mut a = Accountant::new(2);
        assert_eq!(a.facts(0, 0), Feedback { from: 2, ..Feedback::default() });
        a.waits(MS, 300, false);
        a.waits(MS, 5_000, true);
        a.waits(MS, 40, false);
        let f = a.facts(MS, 0);
        assert_eq!((f.queue_len, f.pending_work, f.busy, f.completed), (3, 5_340, false, 0));
        a.starts(MS, 1, 300, false);
        a.starts(MS, 2, 5_000, true);
        let f = a.facts(MS + 100, 0);
        assert_eq!((f.queue_len, f.pending_work, f.busy), (1, 40 + 200 + 4_900, true));
        // an overrun contributes nothing, never a negative amount
        let f = a.facts(MS + 10_000, 0);
        assert_eq!(f.pending_work, 40);
        a.finishes(2 * MS, 1);
        a.finishes(2 * MS, 2);
        let f = a.facts(2 * MS, 77);
        assert_eq!((f.queue_len, f.busy, f.completed, f.service_time), (1, false, 2, 77));
        assert!(!a.large_present() && a.waiting() == 1 && a.running() == 0);
    }

    /// Without `dq`, every other fact is the same and `dq` is 0.
    #[test]
    fn without_dq_only_dq_is_zero() {
        let (mut a, mut b) = (Accountant::new(1), Accountant::new(1).without_dq());
        for x in [&mut a, &mut b] {
            x.waits(MS, 300, false);
            x.waits(2 * MS, 500, true);
            x.starts(3 * MS, 7, 300, false);
        }
        let (fa, fb) = (a.facts(4 * MS, 9), b.facts(4 * MS, 9));
        assert_eq!(fa.dq, 1);
        assert_eq!(Feedback { dq: 0, ..fa }, fb);
    }

    /// Without `utilization`, every other fact is the same and `utilization` is 0.
    #[test]
    fn without_utilization_only_utilization_is_zero() {
        let (mut a, mut b) = (Accountant::new(1), Accountant::new(1).without_utilization());
        for x in [&mut a, &mut b] {
            x.waits(MS, 300, false);
            x.starts(MS, 7, 300, false);
        }
        let (fa, fb) = (a.facts(4 * MS, 9), b.facts(4 * MS, 9));
        assert_eq!(fa.utilization, 0.75);
        assert_eq!(Feedback { utilization: 0.0, ..fa }, fb);
    }

    #[test]
    fn dq_is_the_change_over_the_last_20ms() {
        let mut a = Accountant::new(0);
        for t in 1..=4 {
            a.waits(t * MS, 1, false);
        }
        // within the first window the baseline is the empty replica at time 0
        assert_eq!(a.facts(5 * MS, 0).dq, 4);
        a.waits(10 * MS, 1, false);
        // at 25 ms the baseline is the count at 5 ms (4)
        assert_eq!(a.facts(25 * MS, 0).dq, 1);
        for (i, t) in [31, 32, 33].into_iter().enumerate() {
            a.starts(t * MS, i as u64, 1, false);
        }
        // at 40 ms the baseline is the count at 20 ms (5)
        assert_eq!(a.facts(40 * MS, 0).dq, -3);
        // long idle: nothing changed in the last 20 ms
        assert_eq!(a.facts(500 * MS, 0).dq, 0);
    }

    /// The incrementally kept facts equal a recomputation from the whole event log, on random
    /// event sequences (waits, starts, finishes, facts at random later times).
    #[test]
    fn incremental_facts_equal_a_rescan_of_the_events() {
        use rand::{Rng, SeedableRng};
        for seed in 0..50u64 {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
            let mut a = Accountant::new(1);
            // the log a rescan reads: every (time, waiting count) step, and the jobs
            let mut steps: Vec<(Nanos, u32)> = vec![(0, 0)];
            let mut waiting: Vec<(Nanos, bool)> = Vec::new();
            let mut running: Vec<(u64, Nanos, Nanos, bool)> = Vec::new();
            // (start, end) of every finished job, for `utilization`
            let mut ran: Vec<(Nanos, Nanos)> = Vec::new();
            let (mut now, mut next_id, mut completed) = (0, 0u64, 0u64);
            for _ in 0..2_000 {
                now += rng.random_range(0..3 * MS);
                match rng.random_range(0..3) {
                    0 => {
                        let (service, large) = (rng.random_range(1..5 * MS), rng.random_bool(0.2));
                        a.waits(now, service, large);
                        waiting.push((service, large));
                        steps.push((now, waiting.len() as u32));
                    }
                    1 if !waiting.is_empty() => {
                        let (service, large) = waiting.remove(rng.random_range(0..waiting.len()));
                        next_id += 1;
                        a.starts(now, next_id, service, large);
                        running.push((next_id, now, service, large));
                        steps.push((now, waiting.len() as u32));
                    }
                    2 if !running.is_empty() => {
                        let (id, start, ..) = running.remove(rng.random_range(0..running.len()));
                        a.finishes(now, id);
                        ran.push((start, now));
                        completed += 1;
                    }
                    _ => {}
                }
                let at = now + rng.random_range(0..2 * DQ_WINDOW);
                let base = steps.iter().rev().find(|s| s.0 + DQ_WINDOW <= at).map_or(0, |s| s.1);
                let want = Feedback {
                    from: 1,
                    timestamp: at,
                    queue_len: waiting.len() as u32,
                    service_time: 7,
                    completed,
                    busy: running.iter().any(|r| r.3),
                    dq: waiting.len() as i64 - base as i64,
                    pending_work: waiting.iter().map(|w| w.0).sum::<Nanos>()
                        + running.iter().map(|r| (r.1 + r.2).saturating_sub(at)).sum::<Nanos>(),
                    utilization: rescanned_utilization(&ran, &running, at),
                    ..Feedback::default()
                };
                assert_eq!(a.facts(at, 7), want, "seed {seed}");
                assert_eq!(a.large_present(), waiting.iter().any(|w| w.1) || want.busy);
            }
        }
    }

    /// `utilization` from every job's run interval: overlap with the window over its span
    /// (one worker).
    fn rescanned_utilization(ran: &[(Nanos, Nanos)], running: &[(u64, Nanos, Nanos, bool)], at: Nanos) -> f64 {
        let start = (at - at % UTILIZATION_SLOT).saturating_sub(UTILIZATION_SLOT);
        let intervals = ran.iter().copied().chain(running.iter().map(|r| (r.1, at)));
        let busy: u64 = intervals.map(|(s, e)| e.min(at).saturating_sub(s.max(start))).sum();
        if at == start {
            0.0
        } else {
            busy as f64 / (at - start) as f64
        }
    }

    #[test]
    fn utilization_is_busy_worker_time_since_the_previous_slot() {
        let mut a = Accountant::new(0);
        a.set_workers(2);
        a.waits(0, 10, false);
        a.starts(0, 1, 10, false);
        // one of two workers busy from 0 to 50 ms: half busy
        assert_eq!(a.facts(50 * MS, 0).utilization, 0.5);
        a.finishes(50 * MS, 1);
        // at 150 ms the window is [0, 150 ms]: 50 ms of 300 worker-ms
        assert_eq!(a.facts(150 * MS, 0).utilization, 50.0 / 300.0);
        // at 250 ms it is [100, 250 ms]: idle
        assert_eq!(a.facts(250 * MS, 0).utilization, 0.0);
        a.waits(250 * MS, 10, false);
        a.starts(250 * MS, 2, 10, false);
        a.waits(250 * MS, 10, false);
        a.starts(250 * MS, 3, 10, false);
        // both workers from 250 ms; at 300 ms the window is [200, 300 ms]: 100 of 200 worker-ms
        assert_eq!(a.facts(300 * MS, 0).utilization, 0.5);
        // long after, with both still running, in a later window: fully busy
        assert_eq!(a.facts(10_000 * MS, 0).utilization, 1.0);
    }

    #[test]
    fn rif_latency_averages_per_level_and_falls_back_to_the_nearest() {
        let mut r = RifLatency::default();
        assert_eq!(r.estimate(3), 0, "nothing measured");
        r.arrives(0, 1, 2);
        r.finishes(10 * MS, 1);
        assert_eq!(r.estimate(2), 10 * MS);
        assert_eq!(r.estimate(5), 10 * MS, "nearest level measured, below first");
        assert_eq!(r.estimate(0), 10 * MS, "else above");
        r.arrives(10 * MS, 2, 2);
        r.finishes(30 * MS, 2);
        assert_eq!(r.estimate(2), 12 * MS, "EWMA 0.2: 10 + 0.2 * (20 - 10)");
        r.arrives(0, 3, 1_000);
        r.finishes(MS, 3);
        assert_eq!(r.estimate(500), MS, "high counts share the last level");
        r.finishes(MS, 99);
        assert_eq!(r.estimate(2), 12 * MS, "an unknown request is ignored");
    }

    /// The estimate is the level a walk outwards from `rif` finds (below first on a tie), rounded.
    #[test]
    fn rif_latency_nearest_level_equals_a_walk_outwards() {
        use rand::{Rng, SeedableRng};
        let walk = |r: &RifLatency, rif: u32| -> Nanos {
            let at = (rif as usize).min(RIF_LEVELS - 1);
            let nearest = (0..RIF_LEVELS).find_map(|d| {
                let below = at.checked_sub(d).and_then(|i| r.levels.get(i).copied().flatten());
                below.or_else(|| r.levels.get(at + d).copied().flatten())
            });
            nearest.map_or(0, |ns| ns.round() as Nanos)
        };
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        for _ in 0..20 {
            let mut r = RifLatency::default();
            for id in 0..rng.random_range(0..40u64) {
                r.arrives(0, id, rng.random_range(0..80));
                r.finishes(rng.random_range(0..10 * MS), id);
                for rif in [0, 1, 31, 62, 63, 64, 100, rng.random_range(0..70)] {
                    assert_eq!(r.estimate(rif), walk(&r, rif), "rif {rif}");
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "only a running request finishes")]
    fn finishing_an_unknown_request_is_a_bug() {
        Accountant::new(0).finishes(0, 9);
    }
}
