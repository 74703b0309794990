//! Lower bound on the maximum weighted flow time of a finite request instance.
//!
//! # The relaxation
//!
//! The scheduling problem behind a replicated store is `P | M_i, r_i | max w_i F_i`: each
//! request `i` is released at `r_i`, needs `p_i` of processing on one machine of its replica
//! set `M_i`, runs without interruption, and the objective is the largest weighted flow time
//! `w_i (C_i - r_i)` (`w = 1` for latency, `w = 1/p` for stretch). It is NP-hard, so this crate
//! computes the optimum of a relaxation instead: the *preemptive, migratory* problem
//! `R | r_i, pmtn | max w_i F_i`, where a request may be paused and resumed, even on another
//! allowed machine, but still never runs on two machines at the same instant.
//!
//! Why it bounds every real schedule: a non-preemptive schedule is a particular preemptive
//! migratory one (one piece per request), so it is feasible for the relaxation and its
//! objective is at least the relaxation's optimum. The same holds for any lower value this
//! crate reports.
//!
//! # How it is computed
//!
//! For a candidate objective `F`, every request gets a deadline `d_i = r_i + F / w_i`. Cutting
//! time at every `r_i` and `d_i` gives intervals `I_t` of length `L_t` inside which the set of
//! live requests does not change. `F` is achievable iff there are amounts `x_{i,j,t} >= 0`
//! (work of `i` on machine `j ∈ M_i` during `I_t ⊆ [r_i, d_i]`) with `sum_{j,t} x = p_i`,
//! `sum_i x <= L_t` per machine and interval, and `sum_j x <= L_t` per request and interval:
//! inside one interval such amounts can always be laid out without overlap (Lawler and
//! Labetoulle, 1978), and conversely any schedule meeting the deadlines yields them. Feasibility
//! is monotone in `F`, so a binary search finds the smallest feasible `F` (Legrand, Su and
//! Vivien, 2008); each test is one LP ([`lower_bound`]).
//!
//! The LP is solved in its phase-1 form (maximise the scheduled work under `<= p_i`, feasible
//! iff it reaches `sum p_i`), which is always feasible and bounded, so a solver status other
//! than optimal is a real failure rather than the answer "infeasible". Two backends solve it:
//! HiGHS ([`Backend::Highs`], behind the `highs` feature) and Dinic's max flow on the equivalent
//! transportation network ([`Backend::MaxFlow`], the default). On a 1,000-request, 12-machine, `k = 3`
//! Euro-Par instance at load 0.9 the LPs have 1.2 to 1.6 million variables; one HiGHS solve
//! takes minutes (interior point plus crossover) where one max flow takes about a second even
//! in a debug build.
//!
//! The search starts from `max_i w_i p_i` (a request completes no earlier than `r_i + p_i`,
//! even with migration, because it never runs in parallel with itself) and from the objective
//! of a first-come-first-served list schedule (an achievable value, hence feasible).

mod cut;
mod flow;
mod instance;
#[cfg(feature = "highs")]
mod lp;

#[cfg(test)]
mod maxflow;
#[cfg(test)]
mod tests;

pub use instance::{max_weighted_flow, weight_for, Instance, Job};
pub use tailor_core::results::Weighting;

use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Most doublings of the upper start tried before giving up on a numerically stubborn LP.
const MAX_UPPER_RETRIES: u32 = 8;

/// Why a bound could not be computed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BoundError {
    /// A request lists no machine.
    #[error("request {index}: no allowed machine")]
    NoMachine {
        /// Index of the request in `Instance::requests`.
        index: usize,
    },
    /// A request lists a machine index the instance does not have.
    #[error("request {index}: machine {machine} is out of range (the instance has {machines} machines)")]
    MachineOutOfRange {
        /// Index of the request.
        index: usize,
        /// The offending machine index.
        machine: u32,
        /// `Instance::machines`.
        machines: usize,
    },
    /// A processing time is zero, negative, infinite or NaN.
    #[error("request {index}: processing time {value} ms must be finite and positive")]
    BadProcessing {
        /// Index of the request.
        index: usize,
        /// The value given.
        value: f64,
    },
    /// A weight is zero, negative, infinite or NaN.
    #[error("request {index}: weight {value} must be finite and positive")]
    BadWeight {
        /// Index of the request.
        index: usize,
        /// The value given.
        value: f64,
    },
    /// A release time is NaN or infinite.
    #[error("request {index}: release time {value} ms must be a finite number")]
    BadRelease {
        /// Index of the request.
        index: usize,
        /// The value given.
        value: f64,
    },
    /// A [`BoundOptions`] field is out of range.
    #[error("bound option `{field}`: {reason}")]
    BadOption {
        /// The field name.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// HiGHS refused the LP or did not reach an optimal solution.
    #[error("HiGHS failed while {stage}: status {status}")]
    Solver {
        /// What was being done.
        stage: &'static str,
        /// The solver's status, as HiGHS names it.
        status: String,
    },
    /// The LP kept declaring achievable objectives infeasible: a numerical failure, not a bound.
    #[error("the LP found the achievable objective {objective} infeasible (numerical trouble)")]
    Numerical {
        /// The last objective tried.
        objective: f64,
    },
}

/// Which solver runs each feasibility test; both answer the same LP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// HiGHS (dual simplex on small LPs, interior point on large ones); needs the `highs` feature.
    Highs,
    /// Dinic's max flow on the equivalent network: exact to rounding and about two orders of
    /// magnitude faster than HiGHS on 1,000-request instances; ignores `threads`. The default:
    /// the tests check it against HiGHS and an independent max-flow oracle.
    #[default]
    MaxFlow,
}

/// Knobs of [`lower_bound`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BoundOptions {
    /// Stop when `(upper - value) <= rel_tol * upper`; must be finite and positive.
    pub rel_tol: f64,
    /// HiGHS threads (`None`: HiGHS's default). HiGHS keeps one thread pool per process,
    /// sized by the first solve, and rejects a different explicit count afterwards: use one
    /// value for the whole process.
    pub threads: Option<usize>,
    /// The solver of each feasibility test.
    pub backend: Backend,
}

impl Default for BoundOptions {
    fn default() -> Self {
        BoundOptions { rel_tol: 1e-4, threads: None, backend: Backend::MaxFlow }
    }
}

/// A lower bound and what it cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// A proven lower bound on `max w_i F_i` of every non-preemptive schedule: the largest
    /// objective the search proved infeasible for the relaxation (or `max w_i p_i` when that is
    /// already feasible), so it never exceeds the relaxation's optimum.
    pub value: f64,
    /// The smallest objective found feasible for the relaxation: its optimum lies in
    /// `[value, upper]`, and `upper - value <= rel_tol * upper`.
    pub upper: f64,
    /// LPs solved.
    pub lp_solves: u32,
    /// Wall time of the whole search in seconds (LP construction and solves).
    pub solve_seconds: f64,
    /// Columns of the largest LP solved.
    pub variables: usize,
}

/// Computes the lower bound of `inst` by binary search on the relaxation's feasibility LP.
///
/// Validates the instance first. An empty instance has bound 0 and solves nothing.
pub fn lower_bound(inst: &Instance, opts: &BoundOptions) -> Result<Bound, BoundError> {
    inst.validate()?;
    if !(opts.rel_tol.is_finite() && opts.rel_tol > 0.0) {
        return Err(BoundError::BadOption {
            field: "rel_tol",
            reason: format!("{} is not a positive number", opts.rel_tol),
        });
    }
    if opts.threads == Some(0) {
        return Err(BoundError::BadOption { field: "threads", reason: "must be at least 1".into() });
    }
    let started = Instant::now();
    let mut bound = Bound::default();
    if inst.requests.is_empty() {
        return Ok(bound);
    }
    let feasible = |objective: f64, bound: &mut Bound| -> Result<bool, BoundError> {
        let check = match opts.backend {
            #[cfg(feature = "highs")]
            Backend::Highs => lp::check(inst, objective, opts.threads)?,
            #[cfg(not(feature = "highs"))]
            Backend::Highs => {
                return Err(BoundError::BadOption {
                    field: "backend",
                    reason: "this build has no HiGHS: rebuild with the `highs` feature or use max-flow".into(),
                })
            }
            Backend::MaxFlow => flow::check(inst, objective),
        };
        bound.lp_solves += 1;
        bound.variables = bound.variables.max(check.variables);
        Ok(check.feasible)
    };

    let mut lo = inst.trivial_lower_bound();
    let mut hi = max_weighted_flow(inst, &instance::fcfs_completions(inst)).max(lo);
    // The relaxation's optimum lies in [lo, hi]; a gap already within tolerance needs no LP.
    if hi - lo > opts.rel_tol * hi {
        if feasible(lo, &mut bound)? {
            hi = lo;
        } else {
            let mut retries = 0;
            while !feasible(hi, &mut bound)? {
                // `hi` is achievable, so this is solver noise: move up rather than trust it.
                retries += 1;
                if retries > MAX_UPPER_RETRIES {
                    return Err(BoundError::Numerical { objective: hi });
                }
                hi *= 2.0;
            }
            while hi - lo > opts.rel_tol * hi {
                let mid = 0.5 * (lo + hi);
                if feasible(mid, &mut bound)? {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
        }
    }
    bound.value = lo;
    bound.upper = hi;
    bound.solve_seconds = started.elapsed().as_secs_f64();
    Ok(bound)
}
