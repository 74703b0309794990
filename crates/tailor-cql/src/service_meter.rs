//! A Cassandra node's mean read service time, by Little's law over its ReadStage samples.
//!
//! Why not Cassandra's latency histogram: `system_views.local_read_latency.p50th_ms` read 0 on
//! Cassandra 5.0.2 here (its decaying reservoir empties between reads, and sub-millisecond
//! medians round away), so C3 ran with no service time. ReadStage's `active_tasks` (reads
//! executing) and `completed_tasks` (a counter) are exact; over a window, the mean number of
//! reads executing divided by the rate they complete at is their mean service time (Little's
//! law applied to the stage's threads, queueing excluded as Tailor's service time excludes it).
//! Both are averaged over polls with the same weight, so the ratio is a weighted Little's law.
//!
//! Precision follows load: a poll sees a read executing with probability about the node's
//! utilisation, so at a few percent (a few hundred reads/s) the estimate rests on a few polls and
//! is rough, and under the load where replica selection matters it is close.

use tailor_core::facts::Ewma;
use tailor_core::time::Nanos;

/// Weight of each poll in the averages: about the last 5 polls count (0.5 s at 100 ms).
const POLL_WEIGHT: f64 = 0.2;

/// One node's running estimate.
#[derive(Clone, Debug)]
pub struct ServiceMeter {
    /// Reads executing, sampled at each poll.
    busy: Ewma,
    /// Reads completed per nanosecond between polls.
    rate: Ewma,
    /// The previous poll: when, and the completed counter then.
    last: Option<(Nanos, u64)>,
}

impl Default for ServiceMeter {
    fn default() -> Self {
        ServiceMeter { busy: Ewma::new(POLL_WEIGHT), rate: Ewma::new(POLL_WEIGHT), last: None }
    }
}

impl ServiceMeter {
    /// Fold in a poll taken at `at` (any monotonic clock, ns): `active` reads executing and
    /// `completed` reads done since the node started. Returns the mean service time in ns, 0
    /// until reads completed between two polls.
    pub fn sample(&mut self, at: Nanos, active: u32, completed: u64) -> Nanos {
        match self.last {
            // a counter that went back: the node restarted; start over from this poll
            Some((_, before)) if completed < before => *self = ServiceMeter::default(),
            Some((then, before)) if at > then => {
                self.rate.update((completed - before) as f64 / (at - then) as f64);
                self.busy.update(active as f64);
            }
            _ => {}
        }
        self.last = Some((at, completed));
        self.mean()
    }

    /// The current estimate in ns (0 while nothing completed).
    pub fn mean(&self) -> Nanos {
        match (self.busy.get(), self.rate.get()) {
            (Some(busy), Some(rate)) if rate > 0.0 => (busy / rate).round() as Nanos,
            _ => 0,
        }
    }
}

/// One node's mean read service time over a whole run: the mean of `active` over its polls
/// divided by the run's completion rate (what the simulator's twin is calibrated with).
#[derive(Clone, Debug, Default)]
pub struct RunMean {
    active_sum: u64,
    polls: u64,
    /// The first and the latest poll: when, and the completed counter then.
    first: Option<(Nanos, u64)>,
    last: Option<(Nanos, u64)>,
}

impl RunMean {
    /// Fold in a poll, as [`ServiceMeter::sample`] takes it.
    pub fn sample(&mut self, at: Nanos, active: u32, completed: u64) {
        if self.last.is_some_and(|(_, before)| completed < before) {
            *self = RunMean::default(); // the node restarted: its run starts again here
        }
        self.first.get_or_insert((at, completed));
        self.last = Some((at, completed));
        self.active_sum += u64::from(active);
        self.polls += 1;
    }

    /// The mean service time in ns; `None` until reads completed between two polls and some
    /// poll caught a read executing.
    pub fn mean(&self) -> Option<Nanos> {
        let ((t0, c0), (t1, c1)) = (self.first?, self.last?);
        if c1 <= c0 || t1 <= t0 || self.active_sum == 0 {
            return None;
        }
        let busy = self.active_sum as f64 / self.polls as f64;
        let rate = (c1 - c0) as f64 / (t1 - t0) as f64;
        Some((busy / rate).round() as Nanos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_core::time::MS;

    #[test]
    fn steady_load_gives_the_service_time() {
        // 2 000 reads/s of 0.5 ms each: one read executing on average
        let mut m = ServiceMeter::default();
        assert_eq!(m.sample(0, 0, 0), 0, "one poll says nothing");
        let mut done = 0;
        for i in 1..=20u64 {
            done += 200;
            m.sample(i * 100 * MS, 1, done);
        }
        assert_eq!(m.mean(), MS / 2);
    }

    #[test]
    fn a_slower_node_reads_slower_and_idle_polls_keep_the_ratio() {
        let mut m = ServiceMeter::default();
        m.sample(0, 0, 0);
        m.sample(100 * MS, 4, 100); // 1 000 reads/s, 4 executing: 4 ms each
        assert_eq!(m.mean(), 4 * MS);
        let before = m.mean();
        m.sample(200 * MS, 0, 100); // idle: both averages shrink alike
        assert_eq!(m.mean(), before);
    }

    #[test]
    fn a_restart_or_a_repeated_instant_is_not_a_sample() {
        let mut m = ServiceMeter::default();
        m.sample(0, 0, 1_000);
        m.sample(100 * MS, 2, 1_200);
        assert_eq!(m.sample(100 * MS, 9, 1_500), m.mean(), "same instant: no rate");
        assert_eq!(m.sample(200 * MS, 1, 10), 0, "the counter went back: start over");
        assert_eq!(m.sample(300 * MS, 1, 210), MS / 2);
    }

    #[test]
    fn a_run_mean_is_busy_over_rate_from_first_to_last_poll() {
        let mut r = RunMean::default();
        assert_eq!(r.mean(), None);
        r.sample(0, 3, 500);
        assert_eq!(r.mean(), None, "one poll");
        r.sample(MS, 1, 502); // 2 reads in 1 ms, 2 executing on average: 1 ms each
        assert_eq!(r.mean(), Some(MS));
        let mut idle = RunMean::default();
        idle.sample(0, 0, 0);
        idle.sample(MS, 0, 5);
        assert_eq!(idle.mean(), None, "no poll caught a read executing: no evidence");
        r.sample(2 * MS, 0, 3); // restarted
        assert_eq!(r.mean(), None);
    }
}
