//! Measurements of one run: histograms after warm-up, throughput, per-server load windows,
//! small-behind-large counts, cache figures, and the requests exported for the lower bound.

use crate::queueing::QueueTracker;
use crate::{BoundJob, RunOutput};
use std::collections::BTreeMap;
use tailor_core::results::RunResult;
use tailor_core::ring::ReplicaSet;
use tailor_core::stats::Hist;
use tailor_core::time::{from_ms, Nanos, SEC};
use tailor_spec::{RunPlan, Spec};

/// Most windows a per-server load series keeps: a longer run gets wider windows (memory stays
/// bounded whatever the run's length; a plot has no use for more columns).
const MAX_WINDOWS: usize = 4096;

/// Collects a run's figures as events happen.
pub struct Recorder {
    warmup: Nanos,
    reads: Hist,
    writes: Hist,
    stretch: Hist,
    measured: u64,
    first_measured: Nanos,
    last_done: Nanos,
    /// When the workload issued its last request (`None` while it still issues): completions
    /// after it are the queues draining, not the steady state the throughput describes.
    arrivals_end: Option<Nanos>,
    /// Requests (whenever released) completed between the warm-up and `arrivals_end`.
    done_in_window: u64,
    small_behind_large: u64,
    /// Requests that failed (refused by every replica they could try).
    failed: u64,
    cache_hits: u64,
    cache_misses: u64,
    window: Option<Nanos>,
    /// Routed reads completed, per window then per server: time only moves forward, so reads
    /// land in the last window, whose counts stay in the cache (kept per server, every read
    /// touched a row of its own, a cache miss at thousands of servers). Turned into one row per
    /// server at the end.
    windows: Vec<Box<[u32]>>,
    /// The last window a read landed in and the time it ends: reads come in time order, so
    /// most land in it and need no division.
    current: (usize, Nanos),
    servers: usize,
    bound_requests: usize,
    bound_jobs: Vec<BoundJob>,
    result: RunResult,
    cdf_points: usize,
    /// Every measured request, when the spec asks (`report.per_request`).
    per_request: Option<Vec<crate::RequestRecord>>,
    /// Per-server queue integrals over the measured window.
    pub queue: QueueTracker,
}

impl Recorder {
    /// A recorder for `plan` on `servers` servers.
    pub fn new(spec: &Spec, plan: &RunPlan, servers: usize) -> Self {
        let keep_series = plan.first_seed && spec.report.per_server_load;
        Recorder {
            warmup: from_ms(spec.workload.warmup_ms),
            reads: Hist::latency(),
            writes: Hist::latency(),
            stretch: Hist::stretch(),
            measured: 0,
            first_measured: Nanos::MAX,
            last_done: 0,
            arrivals_end: None,
            done_in_window: 0,
            small_behind_large: 0,
            failed: 0,
            cache_hits: 0,
            cache_misses: 0,
            window: keep_series.then(|| from_ms(spec.report.window_ms).max(1)),
            windows: Vec::new(),
            current: (0, 0),
            servers,
            bound_requests: if spec.bound.enabled { spec.bound.requests } else { 0 },
            bound_jobs: Vec::new(),
            result: RunResult {
                selector: plan.selector.clone(),
                local: plan.local.clone(),
                params: plan.params.clone(),
                seed: plan.seed,
                window_ms: spec.report.window_ms,
                ..RunResult::default()
            },
            cdf_points: spec.report.cdf_points,
            per_request: spec.report.per_request.then(Vec::new),
            queue: QueueTracker::new(servers, spec.cluster.capacity(), from_ms(spec.workload.warmup_ms)),
        }
    }

    fn measured_from(&mut self, release: Nanos, done: Nanos) -> bool {
        if done >= self.warmup && self.arrivals_end.is_none() {
            self.done_in_window += 1;
        }
        if release < self.warmup {
            return false;
        }
        self.measured += 1;
        self.first_measured = self.first_measured.min(release);
        self.last_done = self.last_done.max(done);
        true
    }

    /// Keep `record` when the spec asks for per-request records and it is measured (released
    /// after the warm-up, as the histograms count).
    #[inline]
    pub fn keep(&mut self, record: crate::RequestRecord) {
        if let Some(kept) = self.per_request.as_mut().filter(|_| record.release >= self.warmup) {
            kept.push(record);
        }
    }

    /// The workload issued its last request at `now`.
    pub fn arrivals_ended(&mut self, now: Nanos) {
        self.arrivals_end = Some(now);
        self.queue.close(now);
    }

    /// A request failed at its coordinator (replicas' queue caps refused it).
    pub fn failed(&mut self) {
        self.failed += 1;
    }

    /// A read released at `release` completed at `done`; `nominal` is its processing time.
    #[inline]
    pub fn read_done(&mut self, release: Nanos, done: Nanos, nominal: Nanos) {
        if self.measured_from(release, done) {
            let latency = done - release;
            self.reads.record_units(latency);
            self.stretch.record(latency as f64 / nominal.max(1) as f64);
        }
    }

    /// A write released at `release` reached its consistency level at `done`.
    pub fn write_done(&mut self, release: Nanos, done: Nanos) {
        if self.measured_from(release, done) {
            self.writes.record_units(done - release);
        }
    }

    /// A small read arrived behind a large one at a busy server.
    pub fn small_behind_large(&mut self, release: Nanos) {
        if release >= self.warmup {
            self.small_behind_large += 1;
        }
    }

    /// A cache lookup.
    pub fn cache_access(&mut self, hit: bool) {
        if hit {
            self.cache_hits += 1;
        } else {
            self.cache_misses += 1;
        }
    }

    /// `server` completed a routed read at `now`.
    #[inline]
    pub fn served(&mut self, server: u32, now: Nanos) {
        debug_assert!(self.window.is_none_or(|w| now + w >= self.current.1), "reads are served in time order");
        if now >= self.current.1 {
            let Some(w) = self.window else { return };
            self.current = self.window_at(now, w);
        }
        self.windows[self.current.0][server as usize] += 1;
    }

    /// The window `now` falls in, and its end, once the series holds it (coarsened while it
    /// would exceed [`MAX_WINDOWS`]).
    fn window_at(&mut self, now: Nanos, mut w: Nanos) -> (usize, Nanos) {
        let mut slot = now / w;
        while slot >= MAX_WINDOWS as Nanos {
            w = self.coarsen();
            slot = now / w;
        }
        while self.windows.len() <= slot as usize {
            self.windows.push(vec![0; self.servers].into_boxed_slice());
        }
        (slot as usize, (slot + 1) * w)
    }

    /// Double the per-server windows (merging neighbours) so a long run keeps at most
    /// [`MAX_WINDOWS`] of them; returns the new window.
    fn coarsen(&mut self) -> Nanos {
        let w = 2 * self.window.expect("only a kept series is coarsened");
        let mut old = std::mem::take(&mut self.windows).into_iter();
        while let Some(mut first) = old.next() {
            if let Some(second) = old.next() {
                first.iter_mut().zip(second.iter()).for_each(|(sum, n)| *sum += n);
            }
            self.windows.push(first);
        }
        self.window = Some(w);
        self.result.window_ms = w as f64 / 1e6;
        w
    }

    /// Whether request `req` is among those kept for the lower bound.
    pub fn wants_bound(&self, req: u64) -> bool {
        req < self.bound_requests as u64
    }

    /// A read executed: keep it for the lower bound when it is among the first requests.
    pub fn bound_job(
        &mut self,
        req: u64,
        available: Nanos,
        start: Nanos,
        service: Nanos,
        done: Nanos,
        replicas: &ReplicaSet,
    ) {
        if self.wants_bound(req) {
            self.bound_jobs.push(BoundJob {
                req: req as u32,
                release: available,
                start,
                processing: service,
                completion: done,
                machines: replicas.to_vec(),
            });
        }
    }

    /// The run's result.
    pub fn finish(mut self, end: Nanos, offered_rps: f64, events: u64) -> RunOutput {
        let r = &mut self.result;
        r.requests = self.measured;
        r.read_latency_ms = self.reads.summary();
        r.write_latency_ms = (self.writes.count() > 0).then(|| self.writes.summary());
        r.stretch = self.stretch.summary();
        // steady state: completions between the warm-up and the last arrival, so that a run past
        // saturation reports what the cluster completed, not that count diluted by the drain
        let steady_end = self.arrivals_end.unwrap_or(self.last_done);
        let span = steady_end.saturating_sub(self.warmup.min(steady_end));
        r.throughput_rps = if span > 0 { self.done_in_window as f64 * SEC as f64 / span as f64 } else { 0.0 };
        r.offered_rps = offered_rps;
        r.small_behind_large = self.small_behind_large;
        r.errors = self.failed;
        r.latency_cdf = self.reads.cdf(self.cdf_points);
        r.stretch_cdf = self.stretch.cdf(self.cdf_points);
        r.per_server_load = if self.window.is_some() {
            (0..self.servers).map(|s| self.windows.iter().map(|w| w[s]).collect()).collect()
        } else {
            Vec::new()
        };
        let mut extra = BTreeMap::new();
        if self.cache_hits + self.cache_misses > 0 {
            extra.insert(
                "cache_hit_ratio".into(),
                self.cache_hits as f64 / (self.cache_hits + self.cache_misses) as f64,
            );
        }
        r.extra = extra;
        r.queueing = Some(self.queue.finish(end));
        self.bound_jobs.sort_by_key(|j| j.req);
        let requests = self.per_request.unwrap_or_default();
        RunOutput { result: self.result, bound_jobs: self.bound_jobs, events, requests }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_core::time::MS;

    #[test]
    fn throughput_counts_completions_between_the_warmup_and_the_last_arrival() {
        let spec =
            tailor_spec::presets::preset("hector-rml").unwrap().with_overrides(&["workload.warmup_ms=100"]).unwrap();
        let plan = tailor_spec::expand(&spec).unwrap().remove(0);
        let mut rec = Recorder::new(&spec, &plan, 3);
        // released before the warm-up ends but completed inside the window: counted for
        // throughput, not for latency
        rec.read_done(50 * MS, 150 * MS, MS);
        for i in 0..99 {
            rec.read_done((100 + i) * MS, (200 + i) * MS, MS);
        }
        rec.arrivals_ended(300 * MS);
        // the drain: measured for latency, not for throughput
        for i in 0..1000 {
            rec.read_done(299 * MS, (400 + i) * MS, MS);
        }
        let r = rec.finish(2000 * MS, 0.0, 0).result;
        assert_eq!(r.requests, 1099);
        assert!((r.throughput_rps - 100.0 / 0.2).abs() < 1e-6, "{}", r.throughput_rps);
    }

    #[test]
    fn a_long_series_keeps_a_bounded_number_of_wider_windows() {
        let spec = tailor_spec::presets::preset("c3").unwrap().with_overrides(&["report.window_ms=1"]).unwrap();
        let plan = tailor_spec::expand(&spec).unwrap().remove(0);
        let mut rec = Recorder::new(&spec, &plan, 2);
        for ms in 0..10_000 {
            rec.served(0, ms * MS);
        }
        rec.served(1, 9_999 * MS);
        let r = rec.finish(10_000 * MS, 0.0, 0).result;
        // 10,000 one-ms windows exceed the cap twice: 4 ms windows
        assert_eq!(r.window_ms, 4.0);
        assert_eq!(r.per_server_load[0].len(), 2500);
        assert!(r.per_server_load[0].iter().all(|&n| n == 4));
        assert_eq!(r.per_server_load[1].iter().sum::<u32>(), 1);
        assert_eq!(r.per_server_load[1][2499], 1);
    }
}
