//! Failover figures of a run with faults, shared by every engine: where reads were sent and
//! how long they took around each fault, turned at the end into the time the faulty server took
//! to shed its reads, the time the tail took to recover, and a per-window timeline for the plot.

use crate::{FailoverSpec, Fault, Spec};
use tailor_core::results::{Failover, FaultOutcome, TimelineWindow};
use tailor_core::time::{from_ms, Nanos};

/// Steps a sliding window moves per window length.
const STEPS_PER_WINDOW: u64 = 10;

/// What happened to reads during a run, in virtual time.
pub struct FailoverLog {
    /// Read copies (first attempts and retries) as (time sent, replica), in time order.
    sends: Vec<(Nanos, u32)>,
    /// Reads as (release, latency); a failed read's latency is its time to failing.
    reads: Vec<(Nanos, Nanos)>,
    /// Copies that timed out, as (time sent, replica).
    timeouts: Vec<(Nanos, u32)>,
    /// Release times of reads that failed.
    failed: Vec<Nanos>,
    /// Reads as (release, coordinator): a slow coordinator's share of them (kept only when a
    /// fault strikes a coordinator).
    coordinated: Vec<(Nanos, u32)>,
    /// Whether a fault strikes a coordinator.
    on_coordinators: bool,
    /// How many coordinators the reads are spread over.
    coordinators: usize,
}

impl FailoverLog {
    /// An empty log for a run of `spec`.
    pub fn new(spec: &Spec) -> FailoverLog {
        let reads = spec.workload.requests as usize;
        let on_coordinators = spec.cluster.faults.iter().any(Fault::on_coordinator);
        FailoverLog {
            sends: Vec::with_capacity(reads),
            reads: Vec::with_capacity(reads),
            timeouts: Vec::new(),
            failed: Vec::new(),
            coordinated: Vec::with_capacity(if on_coordinators { reads } else { 0 }),
            on_coordinators,
            coordinators: spec.cluster.coordinators(),
        }
    }

    /// The reads are coordinated by `n` nodes (a live cluster's, whatever `cluster.clients` says).
    pub fn coordinated_by(mut self, n: usize) -> FailoverLog {
        self.coordinators = n;
        self
    }

    /// A read released at `release` went to `coordinator` (kept only when a fault strikes a
    /// coordinator: its figures are about the reads the faulty coordinator takes).
    #[inline]
    pub fn coordinated(&mut self, release: Nanos, coordinator: u32) {
        if self.on_coordinators {
            self.coordinated.push((release, coordinator));
        }
    }

    /// A read copy went to `replica` at `now`.
    pub fn sent(&mut self, now: Nanos, replica: u32) {
        self.sends.push((now, replica));
    }

    /// A read released at `release` completed (or failed) at `now`.
    pub fn read_done(&mut self, release: Nanos, now: Nanos) {
        self.reads.push((release, now - release));
    }

    /// A read released at `release` failed at `now`.
    pub fn read_failed(&mut self, release: Nanos, now: Nanos) {
        self.read_done(release, now);
        self.failed.push(release);
    }

    /// A live engine's read released at `release`, over after `latency`, failed or answered.
    pub fn read(&mut self, release: Nanos, latency: Nanos, failed: bool) {
        if failed {
            self.read_failed(release, release + latency);
        } else {
            self.read_done(release, release + latency);
        }
    }

    /// A copy sent to `replica` at `sent` timed out.
    pub fn timed_out(&mut self, sent: Nanos, replica: u32) {
        self.timeouts.push((sent, replica));
    }

    /// The figures of every fault of `spec` on `servers` servers, with the timeline when
    /// `timeline` (the first seed of a combination).
    pub fn finish(mut self, spec: &Spec, servers: usize, timeline: bool) -> Failover {
        self.reads.sort_unstable();
        self.coordinated.sort_unstable();
        let m = &spec.cluster.failover;
        let faults = &spec.cluster.faults;
        let outcomes = faults.iter().map(|f| self.outcome(f, faults, m, servers, from_ms(spec.workload.warmup_ms)));
        Failover {
            window_ms: m.window_ms,
            faults: outcomes.collect(),
            timeline: if timeline { self.timeline(from_ms(m.window_ms), servers) } else { Vec::new() },
        }
    }

    fn outcome(&self, f: &Fault, all: &[Fault], m: &FailoverSpec, servers: usize, warmup: Nanos) -> FaultOutcome {
        let (start, end, server) = (from_ms(f.start_ms), from_ms(f.end_ms), f.server as u32);
        let window = from_ms(m.window_ms).max(1);
        let step = (window / STEPS_PER_WINDOW).max(1);
        let before = p99_ms(&mut self.latencies(warmup, start));
        // the tail is judged until the next fault starts, or the last release
        let horizon = all
            .iter()
            .map(|o| from_ms(o.start_ms))
            .filter(|&s| s > start)
            .chain(self.reads.last().map(|r| r.0 + 1))
            .min()
            .unwrap_or(end);
        // a slow coordinator sheds the reads clients send it; a faulty replica the copies
        // coordinators send it
        let (taken, fair) = if f.on_coordinator() {
            (&self.coordinated, 1.0 / self.coordinators as f64)
        } else {
            (&self.sends, 1.0 / servers as f64)
        };
        let share = |from: Nanos, to: Nanos| share_of(taken, server, from, to);
        let share_above = |t: Nanos| share(t, t + window) >= m.share * fair;
        let tail_above = |t: Nanos| p99_ms(&mut self.latencies(t, t + window)) > m.p99_factor * before;
        FaultOutcome {
            kind: f.kind.name().into(),
            server,
            start_ms: f.start_ms,
            end_ms: f.end_ms,
            shed_ms: settles(start, end.saturating_sub(window), step, share_above),
            recover_ms: settles(start, horizon.saturating_sub(window), step, tail_above),
            p99_before_ms: before,
            p99_during_ms: p99_ms(&mut self.latencies(start, end)),
            share_during: share(start, end),
            timeouts: self.timeouts.iter().filter(|&&(t, s)| s == server && (start..end).contains(&t)).count() as u64,
            failed: self.failed.iter().filter(|&&t| (start..end).contains(&t)).count() as u64,
        }
    }

    /// Latencies of reads released in `[from, to)`.
    fn latencies(&self, from: Nanos, to: Nanos) -> Vec<Nanos> {
        between(&self.reads, from, to).iter().map(|r| r.1).collect()
    }

    /// Read copies sent in `[from, to)`, per server.
    fn sends_in(&self, from: Nanos, to: Nanos, servers: usize) -> Vec<u64> {
        let mut counts = vec![0; servers];
        between(&self.sends, from, to).iter().for_each(|s| counts[s.1 as usize] += 1);
        counts
    }

    /// One window of `window` after another from t = 0 to the last release.
    fn timeline(&self, window: Nanos, servers: usize) -> Vec<TimelineWindow> {
        let last = self.reads.last().map_or(0, |r| r.0);
        (0..=last / window)
            .map(|i| {
                let (from, to) = (i * window, (i + 1) * window);
                let mut lat = self.latencies(from, to);
                let counts = self.sends_in(from, to, servers);
                let total = counts.iter().sum::<u64>().max(1) as f64;
                TimelineWindow {
                    start_ms: from as f64 / 1e6,
                    reads: lat.len() as u64,
                    p99_ms: p99_ms(&mut lat),
                    share: counts.iter().map(|&n| round4(n as f64 / total)).collect(),
                }
            })
            .collect()
    }
}

/// `node`'s share of the entries of `v` (sorted by time) in `[from, to)` (0 with none).
fn share_of(v: &[(Nanos, u32)], node: u32, from: Nanos, to: Nanos) -> f64 {
    let all = between(v, from, to);
    let mine = all.iter().filter(|s| s.1 == node).count();
    mine as f64 / all.len().max(1) as f64
}

/// The entries of `v` (sorted by time) whose time is in `[from, to)`.
fn between<T>(v: &[(Nanos, T)], from: Nanos, to: Nanos) -> &[(Nanos, T)] {
    let a = v.partition_point(|e| e.0 < from);
    let b = v.partition_point(|e| e.0 < to).max(a);
    &v[a..b]
}

/// From `start`, the time after which `above(t)` stays false for every window start `t` in
/// steps of `step` up to `last`: 0 if it never holds, `None` if it holds at `last` (never
/// settled) or no window fits.
fn settles(start: Nanos, last: Nanos, step: Nanos, above: impl Fn(Nanos) -> bool) -> Option<f64> {
    if last < start {
        return None;
    }
    let steps = (last - start) / step;
    if above(start + steps * step) {
        return None;
    }
    let settled = (0..steps).rev().find(|&i| above(start + i * step)).map_or(0, |i| (i + 1) * step);
    Some(settled as f64 / 1e6)
}

/// The 99th percentile of `lat` in ms (0 when empty): the smallest value at least 99 % of the
/// values do not exceed.
fn p99_ms(lat: &mut [Nanos]) -> f64 {
    if lat.is_empty() {
        return 0.0;
    }
    let k = (lat.len() * 99).div_ceil(100) - 1;
    *lat.select_nth_unstable(k).1 as f64 / 1e6
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settles_at_the_step_after_the_last_window_above() {
        let above = |t: Nanos| t < 35;
        assert_eq!(settles(0, 100, 10, above), Some(40.0 / 1e6));
        assert_eq!(settles(0, 100, 10, |_| false), Some(0.0));
        assert_eq!(settles(0, 100, 10, |t| t > 50), None);
        assert_eq!(settles(50, 40, 10, |_| false), None);
    }

    #[test]
    fn a_slow_coordinator_is_judged_on_the_reads_it_takes_not_the_copies_it_serves() {
        let f = "cluster.faults=[{kind=\"slow-coordinator\",server=1,start_ms=1000,end_ms=2000}]";
        let spec = Spec::default().with_overrides(&["cluster.servers=3", "workload.warmup_ms=100", f]).unwrap();
        let mut log = FailoverLog::new(&spec);
        const MS: Nanos = 1_000_000;
        for i in 0..3000u64 {
            let t = i * MS;
            // clients stop sending to coordinator 1 200 ms into the fault; its replica keeps
            // its fair share of copies throughout
            let coordinator = if (1200..2000).contains(&i) { [0, 2][i as usize % 2] } else { (i % 3) as u32 };
            log.coordinated(t, coordinator);
            log.sent(t, (i % 3) as u32);
            log.read(t, MS, false);
        }
        let out = log.finish(&spec, 3, false);
        let o = &out.faults[0];
        assert_eq!(o.kind, "slow-coordinator");
        // a window is above half the fair share (1/6) while it holds 50 of coordinator 1's
        // last reads: until its start passes 1150 ms
        assert!(o.shed_ms.is_some_and(|s| (150.0..=170.0).contains(&s)), "{o:?}");
        assert!((o.share_during - 0.2 / 3.0).abs() < 0.01, "{o:?}");
    }

    #[test]
    fn p99_is_the_value_ninety_nine_percent_do_not_exceed() {
        let mut lat: Vec<Nanos> = (1..=200).map(|i| i * 1_000_000).collect();
        assert_eq!(p99_ms(&mut lat), 198.0);
        assert_eq!(p99_ms(&mut []), 0.0);
        assert_eq!(p99_ms(&mut [5_000_000]), 5.0);
    }
}
