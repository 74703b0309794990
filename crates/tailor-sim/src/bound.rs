//! The lower bound of a run: its first requests as executed become a `tailor-bound` instance,
//! and the run's max weighted flow on them is compared with the relaxation's optimum.

use crate::{BoundJob, RunOutput, SimError};
use tailor_bound::{lower_bound, max_weighted_flow, BoundOptions, Instance, Weighting};
use tailor_core::results::BoundRatio;
use tailor_core::time::to_ms;
use tailor_spec::Spec;

/// The instance of the executed reads `jobs` on `servers` servers of `workers` workers each,
/// weighted by `weighting`.
///
/// Each worker is a machine (a server with `P` workers runs `P` requests at once), and a request
/// may run on any worker of its replicas from the time it could first reach one (release +
/// network delay), for the processing time it actually took.
pub fn instance(jobs: &[BoundJob], servers: usize, workers: usize, weighting: Weighting) -> Instance {
    let workers_of = |&s: &u32| (0..workers as u32).map(move |w| s * workers as u32 + w);
    Instance::with_weighting(
        servers * workers,
        jobs.iter().map(|j| (to_ms(j.release), to_ms(j.processing), j.machines.iter().flat_map(workers_of).collect())),
        weighting,
    )
}

/// The instance of `spec`'s first run (first swept point, selector, local policy and seed)
/// cut to its first `requests` requests with no warm-up, and that run's own max weighted flow
/// on it with its strategy's name: what `tailor bound <spec>` and Python's `tailor.bound` solve.
pub fn first_run_instance(
    spec: &Spec,
    requests: usize,
    weighting: Weighting,
) -> Result<(Instance, String, f64), SimError> {
    let mut plan = tailor_spec::expand(spec)
        .map_err(|e| SimError::Spec(e.to_string()))?
        .into_iter()
        .next()
        .ok_or_else(|| SimError::Spec("the spec has no run".into()))?;
    if requests == 0 {
        return Err(SimError::Spec("the bound needs at least 1 request".into()));
    }
    plan.spec.workload.requests = requests as u64;
    plan.spec.workload.warmup_ms = 0.0;
    plan.spec.bound.enabled = true;
    plan.spec.bound.requests = requests;
    let out = crate::run(&plan, None)?;
    if out.bound_jobs.is_empty() {
        return Err(SimError::Spec(format!("the first {requests} requests hold no read to bound")));
    }
    let inst = instance(&out.bound_jobs, plan.spec.cluster.servers, plan.spec.cluster.workers, weighting);
    let completions: Vec<f64> = out.bound_jobs.iter().map(|j| to_ms(j.completion)).collect();
    let achieved = max_weighted_flow(&inst, &completions);
    Ok((inst, format!("{}+{}", plan.selector, plan.local), achieved))
}

/// Fill `out.result.bound` with the ratio of the run's max weighted flow to the lower bound.
pub fn attach(out: &mut RunOutput, spec: &Spec) -> Result<(), SimError> {
    if !spec.bound.enabled || out.bound_jobs.is_empty() {
        return Ok(());
    }
    let inst = instance(&out.bound_jobs, spec.cluster.servers, spec.cluster.workers, spec.bound.weighting);
    let opts = BoundOptions { rel_tol: spec.bound.tolerance, backend: spec.bound.solver, ..BoundOptions::default() };
    let bound = lower_bound(&inst, &opts).map_err(|e| SimError::Spec(format!("lower bound: {e}")))?;
    let completions: Vec<f64> = out.bound_jobs.iter().map(|j| to_ms(j.completion)).collect();
    let achieved = max_weighted_flow(&inst, &completions);
    out.result.bound = Some(BoundRatio {
        weighting: spec.bound.weighting,
        requests: inst.requests.len() as u64,
        max_weighted_flow: achieved,
        bound: bound.value,
        ratio: if bound.value > 0.0 { achieved / bound.value } else { f64::NAN },
        solve_seconds: bound.solve_seconds,
    });
    Ok(())
}
