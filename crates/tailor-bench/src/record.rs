//! Accounting of a live run: every request ends exactly once here, as a success, a miss, an error
//! or a timeout, with its latency measured from its *intended* send time.
//!
//! Per-second rows bucket completions by the second they completed in (achieved throughput,
//! errors, latency percentiles) and by the second they were intended in (offered requests), so a
//! stalled cluster shows up as a gap in `completed` with `offered` unchanged.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tailor_core::results::{KeyCounts, MultigetResult, RunResult};
use tailor_core::stats::Hist;
use tailor_core::time::{Nanos, SEC};
use tailor_core::Op;
use tailor_spec::ServiceSpec;

/// How one request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The node answered (`OK` for a write, a value for a read).
    Ok,
    /// A read answered nil: the key was never loaded. Counted as a completed request (the node did
    /// serve it) and reported in `extra.read_misses`.
    Miss,
    /// Connection refused or reset, protocol error, or an error reply from the node.
    Error,
    /// No reply within the per-request timeout (counted from the intended send time).
    Timeout,
}

/// One finished request, times in ns since the start of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Intended send time.
    pub intended: Nanos,
    /// Whether every connection of its coordinator was busy when the sender thread handed it
    /// over: it then waited for one (too few connections), whatever the host did.
    pub starved: bool,
    /// When a connection actually started sending it (≥ `intended`, unless sent early by rounding).
    pub sent: Nanos,
    /// When the reply (or the error) arrived.
    pub done: Nanos,
    /// Read or write.
    pub op: Op,
    /// Value size in bytes.
    pub size: u64,
    /// Keys of a multi-get read (`MGET`); 0 for a single read or a write.
    pub keys: u32,
    /// How it ended.
    pub outcome: Outcome,
    /// Index of the node that coordinated it.
    pub node: u32,
}

/// One read as the failover figures need it (kept only for runs with faults), times in ns since
/// the start of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadRecord {
    /// Intended send time (the read's release).
    pub intended: Nanos,
    /// Latency from the intended time to the answer, the error or the timeout.
    pub latency: Nanos,
    /// Index of the node that coordinated it.
    pub node: u32,
    /// Whether it ended in an error or a timeout.
    pub failed: bool,
}

/// One row of `timeseries.csv` / `timeseries.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SecondStats {
    /// Second of the run (0-based, warm-up included).
    pub second: u64,
    /// Whether the second lies (partly) in the warm-up.
    pub warmup: bool,
    /// Requests intended to be sent in this second.
    pub offered: u64,
    /// Requests that completed (ok or miss) in this second.
    pub completed: u64,
    /// Requests that ended in an error or a timeout in this second.
    pub errors: u64,
    /// Median latency of the requests completed in this second, ms.
    pub p50_ms: f64,
    /// 99th percentile latency of the requests completed in this second, ms.
    pub p99_ms: f64,
    /// Largest latency of the requests completed in this second, ms.
    pub max_ms: f64,
}

#[derive(Clone, Debug)]
struct Second {
    offered: u64,
    completed: u64,
    errors: u64,
    latency: Hist,
}

impl Default for Second {
    fn default() -> Self {
        Second { offered: 0, completed: 0, errors: 0, latency: Hist::latency() }
    }
}

/// The progress figures printed each second.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// Requests completed so far (ok or miss), warm-up included.
    pub completed: u64,
    /// Errors and timeouts so far, warm-up included.
    pub errors: u64,
    /// 99th percentile latency so far, ms, warm-up included.
    pub p99_ms: f64,
}

/// Collects the run's figures.
#[derive(Clone, Debug)]
pub struct Recorder {
    warmup: Nanos,
    end: Nanos,
    service: ServiceSpec,
    reads: Hist,
    writes: Hist,
    multigets: Hist,
    /// The fewest and the most keys of a measured multi-get.
    multiget_keys: KeyCounts,
    multiget_failed: u64,
    stretch: Hist,
    send_lag: Hist,
    /// Measured requests that found every connection of their coordinator busy.
    starved: u64,
    all: Hist,
    measured: u64,
    measured_in_window: u64,
    errors: u64,
    timeouts: u64,
    warmup_errors: u64,
    misses: u64,
    total_completed: u64,
    total_errors: u64,
    last_done: Nanos,
    seconds: Vec<Second>,
    error_samples: Vec<String>,
    /// Requests sent through another coordinator because theirs refused connections.
    coordinator_failovers: u64,
    /// Requests sent again on a fresh connection because their kept one was broken.
    resends: u64,
    reads_kept: Option<Vec<ReadRecord>>,
}

/// Error messages kept as examples for the report.
const ERROR_SAMPLES: usize = 5;

impl Recorder {
    /// A recorder that excludes requests intended before `warmup`, for a schedule whose last
    /// request is intended before `end`; `service` gives each read's nominal processing time for
    /// the stretch (latency / nominal time).
    pub fn new(warmup: Nanos, end: Nanos, service: ServiceSpec) -> Recorder {
        Recorder {
            warmup,
            end,
            service,
            reads: Hist::latency(),
            writes: Hist::latency(),
            multigets: Hist::latency(),
            multiget_keys: KeyCounts::default(),
            multiget_failed: 0,
            stretch: Hist::stretch(),
            send_lag: Hist::latency(),
            starved: 0,
            all: Hist::latency(),
            measured: 0,
            measured_in_window: 0,
            errors: 0,
            timeouts: 0,
            warmup_errors: 0,
            misses: 0,
            total_completed: 0,
            total_errors: 0,
            last_done: 0,
            seconds: Vec::new(),
            error_samples: Vec::new(),
            coordinator_failovers: 0,
            resends: 0,
            reads_kept: None,
        }
    }

    /// Keep every read (warm-up included) for the failover figures: [`Recorder::kept_reads`].
    pub fn keep_reads(&mut self) {
        self.reads_kept = Some(Vec::new());
    }

    /// The reads kept since [`Recorder::keep_reads`], in completion order (empty if not kept).
    pub fn kept_reads(&self) -> &[ReadRecord] {
        self.reads_kept.as_deref().unwrap_or_default()
    }

    fn second(&mut self, t: Nanos) -> &mut Second {
        let i = (t / SEC) as usize;
        if self.seconds.len() <= i {
            self.seconds.resize_with(i + 1, Second::default);
        }
        &mut self.seconds[i]
    }

    /// A request went to another coordinator: its own refused connections (down).
    pub fn coordinator_failover(&mut self) {
        self.coordinator_failovers += 1;
    }

    /// A request found its kept connection broken and is sent again on a fresh one.
    pub fn resent(&mut self) {
        self.resends += 1;
    }

    /// Keep `message` as an example of what went wrong (the first few distinct ones).
    pub fn note_error(&mut self, message: String) {
        if self.error_samples.len() < ERROR_SAMPLES && !self.error_samples.contains(&message) {
            self.error_samples.push(message);
        }
    }

    /// Account for one finished request (a multi-get's latency goes to its own histogram, not
    /// to the single reads').
    pub fn record(&mut self, c: Completion) {
        let latency = c.done.saturating_sub(c.intended);
        let measured = c.intended >= self.warmup;
        self.second(c.intended).offered += 1;
        let failed = matches!(c.outcome, Outcome::Error | Outcome::Timeout);
        if let (Some(kept), Op::Read) = (&mut self.reads_kept, c.op) {
            kept.push(ReadRecord { intended: c.intended, latency, node: c.node, failed });
        }
        if measured {
            // failed requests count too: a request dequeued after its deadline was late as well
            self.send_lag.record(c.sent.saturating_sub(c.intended) as f64);
            self.starved += c.starved as u64;
        }
        if failed {
            self.total_errors += 1;
            self.second(c.done).errors += 1;
            if !measured {
                self.warmup_errors += 1;
            } else if c.outcome == Outcome::Timeout {
                self.timeouts += 1;
            } else {
                self.errors += 1;
            }
            if measured && c.keys > 0 {
                self.multiget_keys.saw(c.keys);
                self.multiget_failed += 1;
            }
            return;
        }
        self.total_completed += 1;
        self.all.record(latency as f64);
        {
            let s = self.second(c.done);
            s.completed += 1;
            s.latency.record(latency as f64);
        }
        if !measured {
            return;
        }
        self.measured += 1;
        if c.done <= self.end {
            self.measured_in_window += 1;
        }
        self.last_done = self.last_done.max(c.done);
        if c.outcome == Outcome::Miss {
            self.misses += 1;
        }
        match c.op {
            Op::Read if c.keys > 0 => {
                self.multiget_keys.saw(c.keys);
                self.multigets.record(latency as f64);
            }
            Op::Read => {
                self.reads.record(latency as f64);
                self.stretch.record(latency as f64 / self.service.nominal_ns(c.size).max(1.0));
            }
            Op::Write => self.writes.record(latency as f64),
        }
    }

    /// Figures for the progress line.
    pub fn progress(&self) -> Progress {
        Progress { completed: self.total_completed, errors: self.total_errors, p99_ms: self.all.summary().p99 }
    }

    /// Examples of the errors seen.
    pub fn error_samples(&self) -> &[String] {
        &self.error_samples
    }

    /// The per-second rows.
    pub fn timeseries(&self) -> Vec<SecondStats> {
        self.seconds
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let l = s.latency.summary();
                SecondStats {
                    second: i as u64,
                    warmup: (i as u64) * SEC < self.warmup,
                    offered: s.offered,
                    completed: s.completed,
                    errors: s.errors,
                    p50_ms: l.p50,
                    p99_ms: l.p99,
                    max_ms: l.max,
                }
            })
            .collect()
    }

    /// Fill the measured figures of `r` (labels, seed and params are the caller's).
    ///
    /// `requests` counts measured completions (ok or miss); `errors` counts measured errors and
    /// timeouts; `throughput_rps` is measured completions over the span from the end of the
    /// warm-up to the last measured completion; `offered_rps` is the schedule's rate. Warm-up
    /// errors are not dropped: they are in `extra.warmup_errors`.
    ///
    /// For the validity check, `extra` also holds the rates over the measured window (end of
    /// warm-up to end of schedule): `window_offered_rps`, the requests actually intended in it
    /// (so Poisson noise in a short run is not mistaken for a shortfall), and
    /// `window_achieved_rps`, the measured completions that finished inside it (so one late
    /// straggler does not stretch the span as it does `throughput_rps`, while a backlog does
    /// lower it). `send_lag_*` covers every measured request, failed ones included.
    pub fn fill(&self, r: &mut RunResult, offered_rps: f64, cdf_points: usize) {
        r.requests = self.measured;
        r.read_latency_ms = self.reads.summary();
        r.write_latency_ms = (self.writes.count() > 0).then(|| self.writes.summary());
        r.stretch = self.stretch.summary();
        let span = self.last_done.saturating_sub(self.warmup);
        r.throughput_rps = if span > 0 { self.measured as f64 * SEC as f64 / span as f64 } else { 0.0 };
        r.offered_rps = offered_rps;
        r.errors = self.errors + self.timeouts;
        r.latency_cdf = self.reads.cdf(cdf_points);
        r.stretch_cdf = self.stretch.cdf(cdf_points);
        let lag = self.send_lag.summary();
        let window = self.end.saturating_sub(self.warmup);
        let per_window = |n: u64| if window > 0 { n as f64 * SEC as f64 / window as f64 } else { 0.0 };
        let extra: BTreeMap<String, f64> = [
            ("timeouts", self.timeouts as f64),
            ("warmup_errors", self.warmup_errors as f64),
            ("read_misses", self.misses as f64),
            ("send_lag_p99_ms", lag.p99),
            ("send_lag_max_ms", lag.max),
            ("starved_requests", self.starved as f64),
            ("window_offered_rps", per_window(self.measured + self.errors + self.timeouts)),
            ("window_achieved_rps", per_window(self.measured_in_window)),
            ("coordinator_failovers", self.coordinator_failovers as f64),
            ("resends", self.resends as f64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        r.extra.extend(extra);
        r.multiget = self.multiget_figures();
    }

    /// The multi-get section, none in a run without multi-gets: the simulator's fields, a
    /// multi-get's latency from its intended time to its whole reply. A client sees only the
    /// whole reply of an `MGET`, so the straggler gap is not measured live (left at zero).
    fn multiget_figures(&self) -> Option<MultigetResult> {
        let (keys, keys_max) = self.multiget_keys.fields();
        (self.multigets.count() > 0 || self.multiget_failed > 0).then(|| MultigetResult {
            keys,
            keys_max,
            requests: self.multigets.count(),
            failed: self.multiget_failed,
            latency_ms: self.multigets.summary(),
            straggler_gap_ms: Default::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_core::time::MS;

    fn c(intended: Nanos, done: Nanos, op: Op, outcome: Outcome) -> Completion {
        Completion { intended, starved: false, sent: intended, done, op, size: 1000, keys: 0, outcome, node: 0 }
    }

    fn recorder() -> Recorder {
        Recorder::new(SEC, 2 * SEC, ServiceSpec::default())
    }

    #[test]
    fn latency_counts_from_the_intended_time_and_warmup_is_excluded() {
        let mut r = recorder();
        // warm-up request: not measured
        r.record(c(500 * MS, 510 * MS, Op::Read, Outcome::Ok));
        // intended at 1.0 s but only sent at 1.3 s (no free connection): 305 ms, not 5 ms
        r.record(Completion { sent: 1300 * MS, ..c(SEC, 1305 * MS, Op::Read, Outcome::Ok) });
        r.record(c(1100 * MS, 1102 * MS, Op::Write, Outcome::Ok));
        r.record(c(1200 * MS, 1204 * MS, Op::Read, Outcome::Miss));
        let mut res = RunResult::default();
        r.fill(&mut res, 3.0, 10);
        assert_eq!(res.requests, 3);
        assert!((res.read_latency_ms.max - 305.0).abs() < 0.5, "{:?}", res.read_latency_ms);
        assert_eq!(res.read_latency_ms.count, 2);
        assert!((res.write_latency_ms.unwrap().max - 2.0).abs() < 0.01);
        assert!((res.extra["send_lag_max_ms"] - 300.0).abs() < 0.5);
        assert_eq!(res.extra["read_misses"], 1.0);
        // default service: exponential, mean 4 ms -> stretch 305 / 4
        assert!((res.stretch.max - 76.25).abs() < 0.1, "{:?}", res.stretch);
        // 3 measured completions between 1 s and 1.305 s
        assert!((res.throughput_rps - 3.0 / 0.305).abs() < 0.01, "{}", res.throughput_rps);
        assert_eq!(res.offered_rps, 3.0);
        assert_eq!(res.errors, 0);
    }

    #[test]
    fn errors_and_timeouts_are_counted_never_dropped() {
        let mut r = recorder();
        r.record(c(100 * MS, 101 * MS, Op::Read, Outcome::Error));
        r.record(c(1100 * MS, 1101 * MS, Op::Read, Outcome::Error));
        r.record(c(1200 * MS, 2200 * MS, Op::Write, Outcome::Timeout));
        r.record(c(1300 * MS, 1301 * MS, Op::Read, Outcome::Ok));
        let mut res = RunResult::default();
        r.fill(&mut res, 1.0, 10);
        assert_eq!((res.requests, res.errors), (1, 2));
        assert_eq!(res.extra["timeouts"], 1.0);
        assert_eq!(res.extra["warmup_errors"], 1.0);
        // failed requests do not pollute the latency histograms
        assert!(res.write_latency_ms.is_none());
        assert!((res.read_latency_ms.max - 1.0).abs() < 0.01);
        assert_eq!(r.progress().errors, 3);
        assert_eq!(r.progress().completed, 1);
    }

    #[test]
    fn kept_reads_hold_every_read_with_its_coordinator_and_failure() {
        let mut r = recorder();
        r.record(c(100 * MS, 101 * MS, Op::Read, Outcome::Ok));
        r.keep_reads();
        r.record(Completion { node: 2, ..c(500 * MS, 520 * MS, Op::Read, Outcome::Timeout) });
        r.record(c(600 * MS, 601 * MS, Op::Write, Outcome::Ok));
        r.record(c(1100 * MS, 1103 * MS, Op::Read, Outcome::Miss));
        let kept = r.kept_reads();
        assert_eq!(kept.len(), 2, "writes and reads before keep_reads are not kept");
        assert_eq!(kept[0], ReadRecord { intended: 500 * MS, latency: 20 * MS, node: 2, failed: true });
        assert_eq!(kept[1], ReadRecord { intended: 1100 * MS, latency: 3 * MS, node: 0, failed: false });
    }

    #[test]
    fn window_rates_count_intended_requests_and_completions_inside_the_window() {
        // measured window: 1 s to 2 s
        let mut r = recorder();
        r.record(c(500 * MS, 600 * MS, Op::Read, Outcome::Ok)); // warm-up: neither
        r.record(c(1100 * MS, 1200 * MS, Op::Read, Outcome::Ok)); // offered and achieved
        r.record(c(1800 * MS, 2500 * MS, Op::Read, Outcome::Ok)); // finished after the window
        r.record(Completion { sent: 1400 * MS, ..c(1300 * MS, 3300 * MS, Op::Read, Outcome::Timeout) });
        let mut res = RunResult::default();
        r.fill(&mut res, 10.0, 10);
        assert_eq!(res.extra["window_offered_rps"], 3.0);
        assert_eq!(res.extra["window_achieved_rps"], 1.0);
        // the timed-out request's 100 ms lag is counted: it was late too
        assert!((res.extra["send_lag_max_ms"] - 100.0).abs() < 0.5, "{:?}", res.extra);
    }

    #[test]
    fn timeseries_buckets_offered_by_intent_and_completions_by_done() {
        let mut r = recorder();
        r.record(c(200 * MS, 300 * MS, Op::Read, Outcome::Ok));
        // intended in second 0, completes in second 2 (a stall)
        r.record(c(900 * MS, 2100 * MS, Op::Read, Outcome::Ok));
        r.record(c(1500 * MS, 2500 * MS, Op::Read, Outcome::Timeout));
        let ts = r.timeseries();
        assert_eq!(ts.len(), 3);
        let rows: Vec<(u64, bool, u64, u64, u64)> =
            ts.iter().map(|s| (s.second, s.warmup, s.offered, s.completed, s.errors)).collect();
        assert_eq!(rows, vec![(0, true, 2, 1, 0), (1, false, 1, 0, 0), (2, false, 0, 1, 1)]);
        assert!((ts[2].max_ms - 1200.0).abs() < 1.0);
        assert!((ts[0].p99_ms - 100.0).abs() < 0.1);
    }

    #[test]
    fn multigets_have_their_own_latency_and_counts() {
        let mut r = recorder();
        let m = |intended, done, outcome| Completion { keys: 4, ..c(intended, done, Op::Read, outcome) };
        r.record(m(500 * MS, 590 * MS, Outcome::Ok)); // warm-up
        r.record(c(1100 * MS, 1102 * MS, Op::Read, Outcome::Ok));
        r.record(m(1200 * MS, 1230 * MS, Outcome::Ok));
        r.record(m(1300 * MS, 1340 * MS, Outcome::Miss));
        r.record(m(1400 * MS, 1401 * MS, Outcome::Error));
        let mut res = RunResult::default();
        r.fill(&mut res, 1.0, 10);
        assert_eq!(res.read_latency_ms.count, 1, "single reads only");
        assert!((res.read_latency_ms.max - 2.0).abs() < 0.01);
        let m = res.multiget.expect("a multi-get section");
        assert_eq!((m.keys, m.requests, m.failed), (4, 2, 1));
        assert!((m.latency_ms.max - 40.0).abs() < 0.1, "{m:?}");
        assert_eq!(res.extra["read_misses"], 1.0);
        assert_eq!((res.requests, res.errors), (3, 1));
        let mut plain = RunResult::default();
        recorder().fill(&mut plain, 1.0, 10);
        assert!(plain.multiget.is_none());
    }

    #[test]
    fn error_samples_are_distinct_and_bounded() {
        let mut r = recorder();
        for i in 0..20 {
            r.note_error(format!("e{}", i % 7));
        }
        assert_eq!(r.error_samples(), &["e0", "e1", "e2", "e3", "e4"]);
    }
}
