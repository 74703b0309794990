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

/// What `tailor bound <INPUT>` and Python's `tailor.bound` solve: an instance file (`.json`,
/// re-weighted when `weighting` is given), or the first `requests` requests (default: the spec's
/// `bound.requests`) of the first run of a preset or spec file with `sets` applied, together
/// with that run's strategy and its own max weighted flow on them.
pub fn bound_input(
    input: &str,
    sets: &[String],
    requests: Option<usize>,
    weighting: Option<Weighting>,
) -> Result<(Instance, Option<(String, f64)>), SimError> {
    if input.ends_with(".json") {
        let text = std::fs::read_to_string(input).map_err(|e| SimError::Spec(format!("reading {input}: {e}")))?;
        let inst: Instance =
            serde_json::from_str(&text).map_err(|e| SimError::Spec(format!("{input} is not an instance: {e}")))?;
        return Ok((weighting.map_or(inst.clone(), |w| inst.reweighted(w)), None));
    }
    // enabling the bound validates the spec's bound settings
    let sets: Vec<&str> = sets.iter().map(String::as_str).chain(["bound.enabled=true"]).collect();
    let spec = tailor_spec::load(input, &sets).map_err(|e| SimError::Spec(e.to_string()))?;
    let requests = requests.unwrap_or(spec.bound.requests);
    if requests == 0 {
        return Err(SimError::Spec("the bound needs at least 1 request".into()));
    }
    let mut plan = tailor_spec::expand(&spec)
        .map_err(|e| SimError::Spec(e.to_string()))?
        .into_iter()
        .next()
        .ok_or_else(|| SimError::Spec("the spec has no run".into()))?;
    plan.spec.workload.requests = requests as u64;
    plan.spec.workload.warmup_ms = 0.0;
    plan.spec.bound.requests = requests;
    let out = crate::run(&plan, None)?;
    if out.bound_jobs.is_empty() {
        return Err(SimError::Spec(format!("the first {requests} requests hold no read to bound")));
    }
    let weighting = weighting.unwrap_or(spec.bound.weighting);
    let inst = instance(&out.bound_jobs, plan.spec.cluster.servers, plan.spec.cluster.workers, weighting);
    let completions: Vec<f64> = out.bound_jobs.iter().map(|j| to_ms(j.completion)).collect();
    let achieved = max_weighted_flow(&inst, &completions);
    Ok((inst, Some((format!("{}+{}", plan.selector, plan.local), achieved))))
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
