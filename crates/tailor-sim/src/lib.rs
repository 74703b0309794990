//! Tailor's discrete-event simulator.
//!
//! Runs `tailor-core` strategies, unchanged, on a modelled cluster under virtual time: servers
//! with `P` workers and a local queue, exponential or size-proportional service times with
//! bimodal fluctuation, optional LRU caches, one-way network delay, read repair, and clients
//! acting as coordinators. A run is a pure function of its [`RunPlan`]: same plan, same bits.

pub mod bound;
pub mod coordinator;
pub mod dst;
mod engine;
mod events;
mod faults;
mod lru;
mod multiget;
mod prefetch;
mod queueing;
mod racks;
mod record;
pub mod replica_script;
mod requests;
pub mod script;
mod server;
mod workload;

use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use tailor_core::results::{Results, RunResult, RESULTS_FORMAT};
use tailor_core::time::Nanos;
use tailor_core::workload::TraceRecord;
use tailor_spec::{RunPlan, Spec};

/// A run that could not start.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SimError {
    /// The spec cannot be simulated (message names the field).
    #[error("{0}")]
    Spec(String),
}

/// A read as executed, for the lower-bound instance: it could start at `release` on any of
/// `machines`, ran for `processing` and completed at `completion`.
#[derive(Clone, Debug, PartialEq)]
pub struct BoundJob {
    /// Request index.
    pub req: u32,
    /// Earliest time a server could start it (release + network delay), ns.
    pub release: Nanos,
    /// When it started, ns.
    pub start: Nanos,
    /// Processing time it took, ns.
    pub processing: Nanos,
    /// Completion at the server, ns.
    pub completion: Nanos,
    /// Its replicas.
    pub machines: Vec<u32>,
}

/// Everything one run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutput {
    /// The figures for `results.json`.
    pub result: RunResult,
    /// The first requests as executed, when the spec asks for the bound.
    pub bound_jobs: Vec<BoundJob>,
    /// Events processed (a cost measure).
    pub events: u64,
    /// Every measured request, in completion order, when the spec asks (`report.per_request`).
    pub requests: Vec<RequestRecord>,
}

/// One measured request as it happened (`report.per_request`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestRecord {
    /// Its id (issue order in the high bits).
    pub id: u64,
    /// The client (coordinator) that issued it.
    pub client: u32,
    /// Its key.
    pub key: u64,
    /// Its value's size in bytes.
    pub size: u64,
    /// A write (else a read).
    pub write: bool,
    /// When the client issued it, ns.
    pub release: Nanos,
    /// When the client had its reply, ns.
    pub done: Nanos,
}

/// Run one plan. `trace` holds the trace's requests when the workload replays one
/// ([`tailor_spec::trace::load`]).
pub fn run(plan: &RunPlan, trace: Option<&[TraceRecord]>) -> Result<RunOutput, SimError> {
    run_observed(plan, trace, &mut |_| {})
}

/// Run one plan, calling `finished(n)` each time `n` more requests are done (every
/// [`PROGRESS_EVERY`]), so a long run can show its progress. What it reports does not change
/// the run.
pub fn run_observed(
    plan: &RunPlan,
    trace: Option<&[TraceRecord]>,
    finished: &mut dyn FnMut(u64),
) -> Result<RunOutput, SimError> {
    Ok(engine::Engine::new(plan, trace)?.run(finished))
}

/// Requests a run finishes between two progress reports: often enough for a display (a few
/// times a second at simulator speed), rarely enough to cost nothing.
pub const PROGRESS_EVERY: u64 = 1 << 16;

/// Run every plan, in parallel on all cores, keeping the plans' order in the output.
/// `progress(done_runs, done_requests)` is called after each run completes and every
/// [`PROGRESS_EVERY`] requests inside a run.
pub fn run_all(
    plans: &[RunPlan],
    trace: Option<&[TraceRecord]>,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Vec<RunOutput>, SimError> {
    let runs = AtomicU64::new(0);
    let reqs = AtomicU64::new(0);
    plans
        .par_iter()
        .map(|plan| {
            let mut reported = 0;
            let mut out = run_observed(plan, trace, &mut |n| {
                reported += n;
                progress(runs.load(Ordering::Relaxed), reqs.fetch_add(n, Ordering::Relaxed) + n);
            })?;
            bound::attach(&mut out, &plan.spec)?;
            let done = runs.fetch_add(1, Ordering::Relaxed) + 1;
            let rest = plan.spec.workload.requests.saturating_sub(reported);
            progress(done, reqs.fetch_add(rest, Ordering::Relaxed) + rest);
            Ok(out)
        })
        .collect()
}

/// Simulate `plans` (the expansion of `spec`) on all cores and assemble the results file: what
/// `tailor sim` and the Python package's `tailor.sim` both run. Reads the spec's trace file
/// when its workload replays one; `progress` is [`run_all`]'s.
pub fn simulate(spec: &Spec, plans: &[RunPlan], progress: &(dyn Fn(u64, u64) + Sync)) -> Result<Results, SimError> {
    let outputs = simulate_outputs(spec, plans, progress)?;
    Ok(results(spec, &outputs))
}

/// [`simulate`], returning every run's output (for what results files do not hold, such as
/// per-request records).
pub fn simulate_outputs(
    spec: &Spec,
    plans: &[RunPlan],
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Vec<RunOutput>, SimError> {
    let trace = match spec.workload.arrival {
        tailor_spec::ArrivalKind::Trace => Some(tailor_spec::trace::load(&spec.workload).map_err(SimError::Spec)?),
        _ => None,
    };
    run_all(plans, trace.as_ref().map(|t| &t.records[..]), progress)
}

/// Why `results` of `spec` carry no figure, when every run measured nothing after the warm-up
/// (the table would be all zeros): the CLI's and the Python package's error.
pub fn measured_nothing(spec: &Spec, results: &Results) -> Option<String> {
    results.runs.iter().all(|r| r.requests == 0).then(|| {
        format!(
            "every run measured 0 requests after the {} ms warm-up: raise workload.requests",
            spec.workload.warmup_ms
        )
    })
}

/// Assemble the results file of an experiment.
pub fn results(spec: &Spec, outputs: &[RunOutput]) -> Results {
    Results {
        format: RESULTS_FORMAT,
        tailor_version: env!("CARGO_PKG_VERSION").to_string(),
        experiment: spec.name.clone(),
        engine: "sim".into(),
        spec: spec.to_toml(),
        runs: outputs.iter().map(|o| o.result.clone()).collect(),
    }
}
