//! The ranking: one row per pair, its figures over seeds as means with 95 % intervals, sorted by
//! p99, each pair whose p99 interval meets the best one's marked as tied with it.

use super::stats::Estimate;
use serde::Serialize;
use tailor_core::results::RunResult;

/// A pair's distance from the lower bound on its first requests (means over seeds).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BoundFigures {
    /// Reads in the bounded instance (the first ones of each run).
    pub requests: u64,
    /// The pair's max flow time on them, ms.
    pub max_flow_ms: Estimate,
    /// The LP lower bound on any schedule's max flow time on them, ms.
    pub lower_bound_ms: Estimate,
    /// `max_flow_ms / lower_bound_ms` per run.
    pub ratio: Estimate,
}

/// One pair's row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Place in the ranking, from 1.
    pub rank: usize,
    /// Replica selector.
    pub selector: String,
    /// Local policy.
    pub local: String,
    /// Read latency percentiles and mean, ms.
    pub p99_ms: Estimate,
    /// Median read latency, ms.
    pub p50_ms: Estimate,
    /// 99.9th percentile, ms.
    pub p999_ms: Estimate,
    /// Mean read latency, ms.
    pub mean_ms: Estimate,
    /// Completed requests per second.
    pub throughput_rps: Estimate,
    /// Failed requests, summed over seeds.
    pub errors: u64,
    /// Reads measured, summed over seeds.
    pub reads: u64,
    /// Whether its p99 interval overlaps the best pair's (the best is tied with itself).
    pub tied_with_best: bool,
    /// Its distance from the lower bound, when computed.
    pub bound: Option<BoundFigures>,
}

impl Row {
    /// `c3/fcfs`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.selector, self.local)
    }

    fn of(runs: &[&RunResult]) -> Row {
        let est = |f: &dyn Fn(&RunResult) -> f64| Estimate::of(runs.iter().map(|r| f(r)));
        let bounds: Vec<_> = runs.iter().filter_map(|r| r.bound).collect();
        let bound = (!bounds.is_empty()).then(|| BoundFigures {
            requests: bounds[0].requests,
            max_flow_ms: Estimate::of(bounds.iter().map(|b| b.max_weighted_flow)),
            lower_bound_ms: Estimate::of(bounds.iter().map(|b| b.bound)),
            ratio: Estimate::of(bounds.iter().map(|b| b.ratio)),
        });
        Row {
            rank: 0,
            selector: runs[0].selector.clone(),
            local: runs[0].local.clone(),
            p99_ms: est(&|r| r.read_latency_ms.p99),
            p50_ms: est(&|r| r.read_latency_ms.p50),
            p999_ms: est(&|r| r.read_latency_ms.p999),
            mean_ms: est(&|r| r.read_latency_ms.mean),
            throughput_rps: est(&|r| r.throughput_rps),
            errors: runs.iter().map(|r| r.errors).sum(),
            reads: runs.iter().map(|r| r.read_latency_ms.count).sum(),
            tied_with_best: false,
            bound,
        }
    }
}

/// Rows of `runs` (every seed of every pair), best p99 first; equal means are ordered by p99.9,
/// then by name, so the order is a function of the figures alone. A pair that measured no read
/// comes last.
pub fn rank(runs: &[RunResult]) -> Vec<Row> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for r in runs {
        let key = (r.selector.clone(), r.local.clone());
        if !pairs.contains(&key) {
            pairs.push(key);
        }
    }
    let mut rows: Vec<Row> = pairs
        .iter()
        .map(|(s, l)| {
            let mine: Vec<&RunResult> = runs.iter().filter(|r| &r.selector == s && &r.local == l).collect();
            Row::of(&mine)
        })
        .collect();
    let key = |r: &Row| (r.reads == 0 || r.p99_ms.mean.is_nan(), r.p99_ms.mean, r.p999_ms.mean);
    rows.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1)).then(ka.2.total_cmp(&kb.2)).then(a.name().cmp(&b.name()))
    });
    let best = rows.first().map(|r| r.p99_ms);
    for (i, row) in rows.iter_mut().enumerate() {
        row.rank = i + 1;
        row.tied_with_best = best.is_some_and(|b| row.reads > 0 && row.p99_ms.overlaps(&b));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(selector: &str, seed: u64, p99: f64) -> RunResult {
        let mut r = RunResult { selector: selector.into(), local: "fcfs".into(), seed, ..Default::default() };
        r.read_latency_ms.p99 = p99;
        r.read_latency_ms.count = 100;
        r
    }

    #[test]
    fn rows_are_sorted_by_mean_p99_and_overlapping_intervals_tie() {
        let runs = vec![
            run("slow", 1, 30.0),
            run("slow", 2, 31.0),
            run("near", 1, 10.0),
            run("near", 2, 14.0),
            run("best", 1, 10.0),
            run("best", 2, 12.0),
        ];
        let rows = rank(&runs);
        let names: Vec<String> = rows.iter().map(Row::name).collect();
        assert_eq!(names, ["best/fcfs", "near/fcfs", "slow/fcfs"]);
        assert_eq!(rows.iter().map(|r| r.rank).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(rows.iter().map(|r| r.tied_with_best).collect::<Vec<_>>(), [true, true, false]);
        assert_eq!(rows[0].p99_ms.mean, 11.0);
    }

    #[test]
    fn a_pair_that_measured_nothing_is_last_and_never_tied() {
        let mut empty = run("empty", 1, 0.0);
        empty.read_latency_ms.count = 0;
        let rows = rank(&[empty, run("a", 1, 5.0)]);
        assert_eq!(rows[1].selector, "empty");
        assert!(!rows[1].tied_with_best);
    }
}
