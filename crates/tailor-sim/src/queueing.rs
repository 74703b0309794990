//! Time-averaged queue figures per server (number waiting, number in system, busy workers) and
//! the counts and sojourns Little's law relates them to, over the measured window: from the
//! warm-up's end to the workload's last arrival.
//!
//! The engine reports each server's occupancy after every change (an admission, a start, a
//! completion, a crash); the areas under the occupancy curves are integrated exactly, in
//! integer nanosecond-jobs, so the figures are a pure function of the run.

use tailor_core::results::{Queueing, ServerQueueing};
use tailor_core::time::{Nanos, MS};

/// One server's running integrals.
#[derive(Clone, Copy, Debug, Default)]
struct Track {
    /// Time of the last occupancy change.
    since: Nanos,
    waiting: u32,
    running: u32,
    /// Integrals over the window of jobs waiting, jobs running, and units of capacity busy
    /// (jobs running, at most the capacity), in ns × jobs.
    waiting_area: u128,
    running_area: u128,
    busy_area: u128,
    arrivals: u64,
    completions: u64,
    /// Sojourns (admission to completion) of the jobs admitted in the window, in ns.
    sojourn_sum: u128,
    sojourns: u64,
}

/// The integrals of every server.
pub struct QueueTracker {
    /// Start of the window (the warm-up's end).
    from: Nanos,
    /// End of the window, once the workload issued its last request.
    until: Option<Nanos>,
    /// Jobs a server runs at full speed at once (its workers, or its shared capacity).
    capacity: usize,
    tracks: Vec<Track>,
}

impl QueueTracker {
    /// Tracks for `servers` servers of `capacity` each (workers, or shared units), measured
    /// from `from`.
    pub fn new(servers: usize, capacity: usize, from: Nanos) -> Self {
        QueueTracker { from, until: None, capacity, tracks: vec![Track::default(); servers] }
    }

    fn in_window(&self, t: Nanos) -> bool {
        t >= self.from && self.until.is_none_or(|u| t < u)
    }

    /// The part of `[a, b)` inside the window, in ns.
    fn overlap(&self, a: Nanos, b: Nanos) -> u128 {
        let end = self.until.map_or(b, |u| b.min(u));
        end.saturating_sub(a.max(self.from)) as u128
    }

    /// `server` holds `waiting` queued and `running` executing jobs from `now` on.
    #[inline]
    pub fn occupancy(&mut self, server: usize, now: Nanos, waiting: usize, running: usize) {
        let t = self.tracks[server];
        let span = self.overlap(t.since, now);
        let capacity = self.capacity as u32;
        let t = &mut self.tracks[server];
        t.waiting_area += span * t.waiting as u128;
        t.running_area += span * t.running as u128;
        t.busy_area += span * t.running.min(capacity) as u128;
        (t.since, t.waiting, t.running) = (now, waiting as u32, running as u32);
    }

    /// A job was admitted at `server` at `now`.
    #[inline]
    pub fn arrived(&mut self, server: usize, now: Nanos) {
        if self.in_window(now) {
            self.tracks[server].arrivals += 1;
        }
    }

    /// A job admitted at `enqueued` started at `server` and will complete at `done`.
    #[inline]
    pub fn started(&mut self, server: usize, enqueued: Nanos, done: Nanos) {
        if self.in_window(enqueued) {
            let t = &mut self.tracks[server];
            t.sojourn_sum += (done - enqueued) as u128;
            t.sojourns += 1;
        }
    }

    /// A job completed at `server` at `now`.
    #[inline]
    pub fn completed(&mut self, server: usize, now: Nanos) {
        if self.in_window(now) {
            self.tracks[server].completions += 1;
        }
    }

    /// The workload issued its last request at `now`: the window ends there.
    pub fn close(&mut self, now: Nanos) {
        self.until = Some(now);
    }

    /// The figures, with the window ended at `end` if the workload never closed it.
    pub fn finish(mut self, end: Nanos) -> Queueing {
        let until = self.until.unwrap_or(end);
        for s in 0..self.tracks.len() {
            let (w, r) = (self.tracks[s].waiting as usize, self.tracks[s].running as usize);
            self.occupancy(s, until.max(self.tracks[s].since), w, r);
        }
        let window = until.saturating_sub(self.from);
        let per_time = |area: u128| if window > 0 { area as f64 / window as f64 } else { 0.0 };
        let servers = self
            .tracks
            .iter()
            .map(|t| ServerQueueing {
                mean_waiting: per_time(t.waiting_area),
                mean_in_system: per_time(t.waiting_area + t.running_area),
                utilisation: per_time(t.busy_area) / self.capacity.max(1) as f64,
                arrivals: t.arrivals,
                completions: t.completions,
                mean_sojourn_ms: if t.sojourns > 0 {
                    t.sojourn_sum as f64 / t.sojourns as f64 / MS as f64
                } else {
                    0.0
                },
            })
            .collect();
        Queueing { window_ms: window as f64 / MS as f64, servers }
    }
}

#[cfg(test)]
mod tests {
    use super::QueueTracker;
    use tailor_core::time::MS;

    #[test]
    fn areas_count_only_the_window() {
        // window [10, 30) ms; one server, one worker
        let mut q = QueueTracker::new(1, 1, 10 * MS);
        q.occupancy(0, 0, 0, 1); // busy from 0
        q.occupancy(0, 20 * MS, 1, 1); // one waits from 20
        q.close(30 * MS);
        q.occupancy(0, 40 * MS, 0, 0);
        let r = q.finish(50 * MS);
        assert_eq!(r.window_ms, 20.0);
        let s = r.servers[0];
        assert_eq!(s.utilisation, 1.0);
        assert_eq!(s.mean_waiting, 0.5);
        assert_eq!(s.mean_in_system, 1.5);
    }

    #[test]
    fn sojourns_and_counts_belong_to_the_window() {
        let mut q = QueueTracker::new(1, 2, 10 * MS);
        q.arrived(0, 5 * MS);
        q.started(0, 5 * MS, 12 * MS);
        q.completed(0, 12 * MS);
        q.arrived(0, 11 * MS);
        q.started(0, 11 * MS, 14 * MS);
        q.completed(0, 14 * MS);
        let s = q.finish(20 * MS).servers[0];
        assert_eq!((s.arrivals, s.completions), (1, 2));
        assert_eq!(s.mean_sojourn_ms, 3.0);
    }
}
