//! Measurements of one run: histograms after warm-up, throughput, per-server load windows,
//! small-behind-large counts, cache figures, and the requests exported for the lower bound.

use crate::{BoundJob, RunOutput};
use std::collections::BTreeMap;
use tailor_core::results::RunResult;
use tailor_core::ring::ReplicaSet;
use tailor_core::stats::Hist;
use tailor_core::time::{from_ms, Nanos, SEC};
use tailor_spec::{RunPlan, Spec};

/// Collects a run's figures as events happen.
pub struct Recorder {
    warmup: Nanos,
    reads: Hist,
    writes: Hist,
    stretch: Hist,
    measured: u64,
    first_measured: Nanos,
    last_done: Nanos,
    small_behind_large: u64,
    cache_hits: u64,
    cache_misses: u64,
    window: Option<Nanos>,
    per_server: Vec<Vec<u32>>,
    bound_requests: usize,
    bound_jobs: Vec<BoundJob>,
    result: RunResult,
    cdf_points: usize,
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
            small_behind_large: 0,
            cache_hits: 0,
            cache_misses: 0,
            window: keep_series.then(|| from_ms(spec.report.window_ms).max(1)),
            per_server: if keep_series { vec![Vec::new(); servers] } else { Vec::new() },
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
        }
    }

    fn measured_from(&mut self, release: Nanos, done: Nanos) -> bool {
        if release < self.warmup {
            return false;
        }
        self.measured += 1;
        self.first_measured = self.first_measured.min(release);
        self.last_done = self.last_done.max(done);
        true
    }

    /// A read released at `release` completed at `done`; `nominal` is its processing time.
    pub fn read_done(&mut self, release: Nanos, done: Nanos, nominal: Nanos) {
        if self.measured_from(release, done) {
            let latency = (done - release) as f64;
            self.reads.record(latency);
            self.stretch.record(latency / nominal.max(1) as f64);
        }
    }

    /// A write released at `release` reached its consistency level at `done`.
    pub fn write_done(&mut self, release: Nanos, done: Nanos) {
        if self.measured_from(release, done) {
            self.writes.record((done - release) as f64);
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
    pub fn served(&mut self, server: u32, now: Nanos) {
        if let Some(w) = self.window {
            let row = &mut self.per_server[server as usize];
            let slot = (now / w) as usize;
            if row.len() <= slot {
                row.resize(slot + 1, 0);
            }
            row[slot] += 1;
        }
    }

    /// Whether request `req` is among those kept for the lower bound.
    pub fn wants_bound(&self, req: u32) -> bool {
        (req as usize) < self.bound_requests
    }

    /// A read executed: keep it for the lower bound when it is among the first requests.
    pub fn bound_job(
        &mut self,
        req: u32,
        available: Nanos,
        start: Nanos,
        service: Nanos,
        done: Nanos,
        replicas: &ReplicaSet,
    ) {
        if (req as usize) < self.bound_requests {
            self.bound_jobs.push(BoundJob {
                req,
                release: available,
                start,
                processing: service,
                completion: done,
                machines: replicas.to_vec(),
            });
        }
    }

    /// The run's result.
    pub fn finish(mut self, _end: Nanos, offered_rps: f64, events: u64) -> RunOutput {
        let r = &mut self.result;
        r.requests = self.measured;
        r.read_latency_ms = self.reads.summary();
        r.write_latency_ms = (self.writes.count() > 0).then(|| self.writes.summary());
        r.stretch = self.stretch.summary();
        let span = self.last_done.saturating_sub(self.first_measured.min(self.last_done));
        r.throughput_rps = if span > 0 { self.measured as f64 * SEC as f64 / span as f64 } else { 0.0 };
        r.offered_rps = offered_rps;
        r.small_behind_large = self.small_behind_large;
        r.latency_cdf = self.reads.cdf(self.cdf_points);
        r.stretch_cdf = self.stretch.cdf(self.cdf_points);
        let longest = self.per_server.iter().map(Vec::len).max().unwrap_or(0);
        for row in &mut self.per_server {
            row.resize(longest, 0);
        }
        r.per_server_load = self.per_server;
        let mut extra = BTreeMap::new();
        if self.cache_hits + self.cache_misses > 0 {
            extra.insert(
                "cache_hit_ratio".into(),
                self.cache_hits as f64 / (self.cache_hits + self.cache_misses) as f64,
            );
        }
        r.extra = extra;
        self.bound_jobs.sort_by_key(|j| j.req);
        RunOutput { result: self.result, bound_jobs: self.bound_jobs, events }
    }
}
