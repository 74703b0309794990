//! The feasibility LP of the preemptive migratory relaxation for one candidate objective.

use crate::cut::{Check, Cut, FEASIBILITY_SLACK};
use crate::{BoundError, Instance};
use highs::{ColProblem, HighsModelStatus, Row, Sense};

/// LPs with at least this many variables go to the interior-point solver; smaller ones to
/// HiGHS's own choice (dual simplex), which is exact and fast at that size. Simplex took
/// minutes where IPM took seconds on the 1,000-request Euro-Par instances.
const IPM_MIN_VARIABLES: usize = 20_000;

/// Solves the phase-1 form of the feasibility LP for `objective`: maximise the scheduled work
/// `sum x` subject to `sum_{j,t} x_{i,j,t} <= p_i`, machine capacity and one-machine-at-a-time
/// per interval; the candidate is feasible iff the maximum equals `sum p_i` (within
/// [`crate::cut::FEASIBILITY_SLACK`]). Unlike asking for `= p_i` directly, this LP is always feasible and
/// bounded, so any status but optimal is a genuine solver failure.
pub(crate) fn check(inst: &Instance, objective: f64, threads: Option<usize>) -> Result<Check, BoundError> {
    let cut = Cut::new(inst, objective);
    let intervals = cut.intervals();
    let mut pb = ColProblem::default();
    let job_rows: Vec<Row> = inst.requests.iter().map(|j| pb.add_row(..=j.processing_ms)).collect();

    // Machine-interval rows only where some request may run, so that long sparse horizons do
    // not pay for every (machine, interval) pair.
    let mut machine_rows: Vec<Option<Row>> = vec![None; inst.machines * intervals];
    for (job, &(first, end)) in inst.requests.iter().zip(&cut.spans) {
        for t in first..end {
            for &m in &job.machines {
                let slot = &mut machine_rows[m as usize * intervals + t];
                if slot.is_none() {
                    *slot = Some(pb.add_row(..=cut.length(t)));
                }
            }
        }
    }

    let mut variables = 0usize;
    let mut allowed: Vec<u32> = Vec::new();
    for ((job, &(first, end)), &job_row) in inst.requests.iter().zip(&cut.spans).zip(&job_rows) {
        allowed.clear();
        allowed.extend_from_slice(&job.machines);
        allowed.sort_unstable();
        allowed.dedup();
        for t in first..end {
            // With one allowed machine its capacity row already caps the request per interval.
            let own_row = (allowed.len() > 1).then(|| pb.add_row(..=cut.length(t)));
            for &m in &allowed {
                let Some(machine_row) = machine_rows[m as usize * intervals + t] else { continue };
                match own_row {
                    Some(r) => pb.add_column(1.0, 0.0.., [(job_row, 1.0), (machine_row, 1.0), (r, 1.0)]),
                    None => pb.add_column(1.0, 0.0.., [(job_row, 1.0), (machine_row, 1.0)]),
                }
                variables += 1;
            }
        }
    }

    let mut model = pb.try_optimise(Sense::Maximise).map_err(|s| solver_error("loading the LP", format!("{s:?}")))?;
    if variables >= IPM_MIN_VARIABLES {
        model.try_set_option("solver", "ipm").map_err(|_| solver_error("setting solver=ipm", "rejected".into()))?;
    }
    if let Some(n) = threads {
        let n = i32::try_from(n).unwrap_or(i32::MAX);
        model.try_set_option("threads", n).map_err(|_| solver_error("setting threads", "rejected".into()))?;
    }
    let stage = if threads.is_some() {
        // The usual cause: HiGHS sizes one thread pool per process and refuses another size.
        "solving (note: HiGHS fixes `threads` at the first solve of the process)"
    } else {
        "solving"
    };
    let solved = model.try_solve().map_err(|s| solver_error(stage, format!("{s:?}")))?;
    let status = solved.status();
    if status != HighsModelStatus::Optimal {
        return Err(solver_error("solving", format!("{status:?}")));
    }
    let scheduled_ms = solved.objective_value();
    let total: f64 = inst.requests.iter().map(|j| j.processing_ms).sum();
    let feasible = scheduled_ms >= total * (1.0 - FEASIBILITY_SLACK);
    Ok(Check { feasible, scheduled_ms, variables })
}

fn solver_error(stage: &'static str, status: String) -> BoundError {
    BoundError::Solver { stage, status }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Job;

    fn job(r: f64, p: f64, w: f64, m: &[u32]) -> Job {
        Job { release_ms: r, processing_ms: p, weight: w, machines: m.to_vec() }
    }

    #[test]
    fn cut_spans_cover_release_to_deadline() {
        let inst = Instance::new(1, vec![job(0.0, 1.0, 1.0, &[0]), job(1.0, 1.0, 0.5, &[0])]);
        // F = 2: deadlines 2 and 1 + 4 = 5; points 0, 1, 2, 5.
        let cut = Cut::new(&inst, 2.0);
        assert_eq!(cut.points, vec![0.0, 1.0, 2.0, 5.0]);
        assert_eq!(cut.spans, vec![(0, 2), (1, 3)]);
        assert_eq!(cut.intervals(), 3);
        assert_eq!(cut.length(2), 3.0);
    }

    #[test]
    fn one_machine_work_vs_capacity() {
        // Two unit jobs at 0 on one machine: F = 2 fits both, F = 1.5 fits only 1.5 of 2 units.
        let inst = Instance::new(1, vec![job(0.0, 1.0, 1.0, &[0]), job(0.0, 1.0, 1.0, &[0])]);
        let ok = check(&inst, 2.0, None).unwrap();
        assert!(ok.feasible);
        assert_eq!(ok.variables, 2);
        let short = check(&inst, 1.5, None).unwrap();
        assert!(!short.feasible);
        assert!((short.scheduled_ms - 1.5).abs() < 1e-9, "{short:?}");
    }

    #[test]
    fn a_request_never_runs_on_two_machines_at_once() {
        // One job of 2 ms on two idle machines still needs 2 ms: the per-interval row binds.
        let inst = Instance::new(2, vec![job(0.0, 2.0, 1.0, &[0, 1])]);
        let half = check(&inst, 1.0, None).unwrap();
        assert!(!half.feasible);
        assert!((half.scheduled_ms - 1.0).abs() < 1e-9, "{half:?}");
        assert!(check(&inst, 2.0, None).unwrap().feasible);
    }
}
