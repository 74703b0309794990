//! What every feasibility backend shares: the time cut of a candidate objective and the
//! outcome of one test.

use crate::Instance;

/// Relative shortfall of scheduled work, over the total work, still counted as feasible. It
/// absorbs the solver's primal tolerance: a wrongly "feasible" answer only loosens the bound,
/// a wrongly "infeasible" one would overstate it, so the margin errs towards feasible.
pub(crate) const FEASIBILITY_SLACK: f64 = 1e-7;

/// The outcome of one feasibility test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Check {
    /// Whether every request's work fits before its deadline.
    pub feasible: bool,
    /// Work the LP could place, in milliseconds.
    pub scheduled_ms: f64,
    /// Columns of the LP.
    pub variables: usize,
}

/// The time cut of one candidate objective: sorted distinct breakpoints and, per request, the
/// half-open range of interval indices inside `[r_i, d_i]`.
pub(crate) struct Cut {
    /// Sorted distinct release times and deadlines.
    pub points: Vec<f64>,
    /// Per request, `(first, end)` interval indices: intervals `first..end` lie in `[r_i, d_i]`.
    pub spans: Vec<(usize, usize)>,
}

impl Cut {
    /// Cuts time at every release and every deadline `d_i = r_i + objective / w_i`.
    pub fn new(inst: &Instance, objective: f64) -> Self {
        let deadlines: Vec<f64> = inst.requests.iter().map(|j| j.release_ms + objective / j.weight).collect();
        let mut points: Vec<f64> =
            inst.requests.iter().map(|j| j.release_ms).chain(deadlines.iter().copied()).collect();
        points.sort_by(f64::total_cmp);
        points.dedup();
        // Every value searched for is in `points`, so the search is exact; the fallback index
        // only guards against a NaN slipping past validation.
        let index = |v: f64| points.binary_search_by(|p| p.total_cmp(&v)).unwrap_or_else(|i| i);
        let spans = inst.requests.iter().zip(&deadlines).map(|(j, &d)| (index(j.release_ms), index(d))).collect();
        Cut { points, spans }
    }

    /// Number of intervals.
    pub fn intervals(&self) -> usize {
        self.points.len().saturating_sub(1)
    }

    /// Length `L_t` of interval `t`.
    pub fn length(&self, t: usize) -> f64 {
        self.points[t + 1] - self.points[t]
    }
}
