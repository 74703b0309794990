//! Figures a claim reads that results files do not hold, derived from each run's executed
//! requests before they are dropped: the trivial lower bound of a bounded run, and the mean
//! latency of small and of large reads.

use super::verdict::{LARGE_MEAN, SMALL_MEAN, TRIVIAL_BOUND};
use tailor_core::time::to_ms;
use tailor_sim::RunOutput;
use tailor_spec::RunPlan;

/// Add the derived figures to each output's `extra` (plans and outputs in the same order).
pub fn annotate(plans: &[RunPlan], outputs: &mut [RunOutput]) {
    for (plan, out) in plans.iter().zip(outputs) {
        let spec = &plan.spec;
        if !out.bound_jobs.is_empty() {
            let (servers, workers) = (spec.cluster.servers, spec.cluster.workers);
            let inst = tailor_sim::bound::instance(&out.bound_jobs, servers, workers, spec.bound.weighting);
            out.result.extra.insert(TRIVIAL_BOUND.into(), inst.trivial_lower_bound());
        }
        let reads = out.requests.iter().filter(|r| !r.write);
        let (small, large): (Vec<&tailor_sim::RequestRecord>, Vec<_>) =
            reads.partition(|r| r.size <= spec.workload.large_threshold);
        for (name, group) in [(SMALL_MEAN, small), (LARGE_MEAN, large)] {
            if !group.is_empty() {
                let total: f64 = group.iter().map(|r| to_ms(r.done.saturating_sub(r.release))).sum();
                out.result.extra.insert(name.into(), total / group.len() as f64);
            }
        }
    }
}
