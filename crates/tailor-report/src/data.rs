//! Results grouped for plotting: strategies × swept points, with seeds pooled or averaged.

use std::collections::BTreeMap;
use tailor_core::results::{Results, RunResult};

/// A strategy: a replica selector with a local queue policy.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Strategy {
    /// Replica selector name.
    pub selector: String,
    /// Local policy name.
    pub local: String,
}

impl Strategy {
    /// The strategy of a run.
    pub fn of(run: &RunResult) -> Strategy {
        Strategy { selector: run.selector.clone(), local: run.local.clone() }
    }

    /// A label: the selector alone when every run on the page uses one local policy.
    pub fn label(&self, show_local: bool) -> String {
        if show_local {
            format!("{} + {}", self.selector, self.local)
        } else {
            self.selector.clone()
        }
    }
}

/// One results file's runs arranged as strategies × swept points.
#[derive(Debug)]
pub struct View<'a> {
    /// Strategies in first-seen order.
    pub strategies: Vec<Strategy>,
    /// Swept points (parameter maps) in first-seen order.
    pub points: Vec<BTreeMap<String, String>>,
    cells: BTreeMap<(usize, usize), Vec<&'a RunResult>>,
}

impl<'a> View<'a> {
    /// Group the runs of `results`.
    pub fn new(results: &'a Results) -> View<'a> {
        let mut view = View { strategies: Vec::new(), points: Vec::new(), cells: BTreeMap::new() };
        for run in &results.runs {
            let s = Strategy::of(run);
            let si = match view.strategies.iter().position(|x| *x == s) {
                Some(i) => i,
                None => {
                    view.strategies.push(s);
                    view.strategies.len() - 1
                }
            };
            let pi = match view.points.iter().position(|p| *p == run.params) {
                Some(i) => i,
                None => {
                    view.points.push(run.params.clone());
                    view.points.len() - 1
                }
            };
            view.cells.entry((si, pi)).or_default().push(run);
        }
        for runs in view.cells.values_mut() {
            runs.sort_by_key(|r| r.seed);
        }
        view
    }

    /// The runs (all seeds, by seed) of strategy `s` at point `p`; empty when none.
    pub fn runs(&self, s: usize, p: usize) -> &[&'a RunResult] {
        self.cells.get(&(s, p)).map(Vec::as_slice).unwrap_or(&[])
    }

    /// True when some run carries a live run's validity verdict (`valid` set; never in the
    /// simulator).
    pub fn has_verdicts(&self) -> bool {
        self.cells.values().flatten().any(|r| r.valid.is_some())
    }

    /// Index of a strategy in this view.
    pub fn strategy_index(&self, s: &Strategy) -> Option<usize> {
        self.strategies.iter().position(|x| x == s)
    }

    /// Index of a swept point in this view.
    pub fn point_index(&self, p: &BTreeMap<String, String>) -> Option<usize> {
        self.points.iter().position(|x| x == p)
    }

    /// A short label of point `p`, e.g. `interval_ms=100` (last segment of each dotted path).
    pub fn point_label(&self, p: usize) -> String {
        self.points.get(p).map(point_label).unwrap_or_default()
    }

    /// The single swept parameter's short name and numeric values per point, when exactly one
    /// parameter is swept and every value is a number (so it can be a numeric x axis).
    pub fn numeric_sweep(&self) -> Option<(String, Vec<f64>)> {
        let first = self.points.first()?;
        if first.len() != 1 {
            return None;
        }
        let key = first.keys().next()?.clone();
        let mut values = Vec::with_capacity(self.points.len());
        for p in &self.points {
            let v: f64 = p.get(&key)?.trim().parse().ok()?;
            if !v.is_finite() || p.len() != 1 {
                return None;
            }
            values.push(v);
        }
        Some((short_name(&key), values))
    }
}

/// The last segment of a dotted parameter path.
pub fn short_name(path: &str) -> String {
    path.rsplit('.').next().unwrap_or(path).to_string()
}

/// `a=1, b=2` with short parameter names; `all runs` when nothing was swept.
pub fn point_label(params: &BTreeMap<String, String>) -> String {
    if params.is_empty() {
        return "all runs".into();
    }
    params.iter().map(|(k, v)| format!("{}={v}", short_name(k))).collect::<Vec<_>>().join(", ")
}

/// Mean of `f` over runs (0 when there are none); non-finite values are skipped.
pub fn mean(runs: &[&RunResult], f: impl Fn(&RunResult) -> f64) -> f64 {
    let vals: Vec<f64> = runs.iter().map(|r| f(r)).filter(|v| v.is_finite()).collect();
    if vals.is_empty() {
        return 0.0;
    }
    vals.iter().sum::<f64>() / vals.len() as f64
}

/// Median, minimum and maximum of `f` over runs (NaN when none is finite): the spread across
/// seeds, which a mean alone hides.
pub fn spread(runs: &[&RunResult], f: impl Fn(&RunResult) -> f64) -> Spread {
    Spread::of(runs.iter().map(|r| f(r)))
}

/// A value across seeds: median and range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Number of finite values.
    pub n: usize,
}

impl Spread {
    /// The median, minimum and maximum of the finite `values` (NaN when there are none).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Spread {
        let mut vals: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        if vals.is_empty() {
            return Spread { median: f64::NAN, min: f64::NAN, max: f64::NAN, n: 0 };
        }
        vals.sort_by(f64::total_cmp);
        let n = vals.len();
        let median = if n % 2 == 1 { vals[n / 2] } else { (vals[n / 2 - 1] + vals[n / 2]) / 2.0 };
        Spread { median, min: vals[0], max: vals[n - 1], n }
    }
}

/// Pool the CDFs of several runs into one, each weighted by its request count (equal weights
/// when no run counted requests). Each input is read as a step function: F(x) is the highest
/// fraction among its points at or below x. Points with non-finite values are ignored.
pub fn pool_cdf(runs: &[&RunResult], get: impl Fn(&RunResult) -> &[(f64, f64)]) -> Vec<(f64, f64)> {
    let cdfs: Vec<(f64, Vec<(f64, f64)>)> = runs
        .iter()
        .map(|r| {
            let mut pts: Vec<(f64, f64)> =
                get(r).iter().copied().filter(|(x, f)| x.is_finite() && f.is_finite()).collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            (r.requests as f64, pts)
        })
        .filter(|(_, pts)| !pts.is_empty())
        .collect();
    if cdfs.is_empty() {
        return Vec::new();
    }
    if cdfs.len() == 1 {
        return cdfs[0].1.clone();
    }
    let total: f64 = cdfs.iter().map(|(w, _)| w).sum();
    let equal = total <= 0.0;
    let mut xs: Vec<f64> = cdfs.iter().flat_map(|(_, p)| p.iter().map(|(x, _)| *x)).collect();
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.dedup();
    xs.iter()
        .map(|&x| {
            let f: f64 = cdfs
                .iter()
                .map(|(w, pts)| {
                    let w = if equal { 1.0 / cdfs.len() as f64 } else { w / total };
                    // step function: last point at or below x
                    let n = pts.partition_point(|(px, _)| *px <= x);
                    let fx = if n == 0 { 0.0 } else { pts[..n].iter().map(|p| p.1).fold(0.0, f64::max) };
                    w * fx
                })
                .sum();
            (x, f)
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use tailor_core::stats::Summary;

    /// A run with a latency CDF shaped like an exponential of mean `scale` ms.
    pub fn run(selector: &str, local: &str, params: &[(&str, &str)], seed: u64, scale: f64) -> RunResult {
        let cdf: Vec<(f64, f64)> = (1..=40)
            .map(|i| {
                let q = 1.0 - 10f64.powf(-(i as f64) / 10.0);
                (-(1.0 - q).ln() * scale, q)
            })
            .chain(std::iter::once((12.0 * scale, 1.0)))
            .collect();
        RunResult {
            selector: selector.into(),
            local: local.into(),
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            seed,
            requests: 1000,
            read_latency_ms: Summary {
                p50: 0.69 * scale,
                p95: 3.0 * scale,
                p99: 4.6 * scale,
                p999: 6.9 * scale,
                max: 12.0 * scale,
                mean: scale,
                count: 1000,
            },
            write_latency_ms: None,
            stretch: Summary { p50: 1.5, p95: 3.0, p99: 5.0 * scale, p999: 8.0, max: 20.0, mean: 2.0, count: 1000 },
            throughput_rps: 1000.0 / scale,
            offered_rps: 1000.0,
            small_behind_large: (10.0 * scale) as u64,
            errors: 0,
            latency_cdf: cdf.clone(),
            stretch_cdf: cdf.iter().map(|(x, f)| (1.0 + x, *f)).collect(),
            per_server_load: (0..3).map(|s| (0..20).map(|t| ((s * 7 + t * 3) % 11) as u32).collect()).collect(),
            window_ms: 100.0,
            bound: None,
            extra: BTreeMap::new(),
            valid: None,
            invalid_reasons: Vec::new(),
            failover: None,
            queueing: None,
            multiget: None,
            hedge_cancel: None,
        }
    }

    /// Two strategies × two swept points × two seeds.
    pub fn results(engine: &str) -> Results {
        let mut runs = Vec::new();
        for interval in ["100", "500"] {
            for (sel, scale) in [("c3", 1.0), ("lor", 2.0)] {
                for seed in [1, 2] {
                    let s = scale * if interval == "100" { 1.0 } else { 1.5 } * (1.0 + seed as f64 / 10.0);
                    runs.push(run(sel, "fcfs", &[("cluster.fluctuation.interval_ms", interval)], seed, s));
                }
            }
        }
        Results {
            format: tailor_core::results::RESULTS_FORMAT,
            tailor_version: "0.1.0".into(),
            experiment: "synthetic".into(),
            engine: engine.into(),
            spec: "name = \"synthetic\"\n[workload]\nrequests = 1000\n".into(),
            runs,
        }
    }

    #[test]
    fn view_groups_by_strategy_and_point() {
        let r = results("sim");
        let v = View::new(&r);
        assert_eq!(v.strategies.len(), 2);
        assert_eq!(v.points.len(), 2);
        assert_eq!(v.runs(1, 1).len(), 2);
        assert_eq!(v.runs(1, 1)[0].seed, 1);
        assert!(v.runs(5, 0).is_empty());
        assert_eq!(v.point_label(0), "interval_ms=100");
        assert_eq!(v.numeric_sweep(), Some(("interval_ms".into(), vec![100.0, 500.0])));
        assert_eq!(Strategy::of(&r.runs[0]).label(true), "c3 + fcfs");
    }

    #[test]
    fn non_numeric_or_multi_sweeps_are_categorical() {
        let mut r = results("sim");
        r.runs[0].params.insert("x.mode".into(), "fast".into());
        assert_eq!(View::new(&r).numeric_sweep(), None);
        let empty = Results::default();
        let v = View::new(&empty);
        assert!(v.strategies.is_empty() && v.numeric_sweep().is_none());
        assert_eq!(point_label(&BTreeMap::new()), "all runs");
    }

    #[test]
    fn pooled_cdf_weights_by_requests() {
        let mut a = run("c3", "fcfs", &[], 1, 1.0);
        a.latency_cdf = vec![(1.0, 0.5), (2.0, 1.0)];
        a.requests = 100;
        let mut b = a.clone();
        b.latency_cdf = vec![(3.0, 1.0)];
        b.requests = 300;
        let pooled = pool_cdf(&[&a, &b], |r| &r.latency_cdf);
        assert_eq!(pooled, vec![(1.0, 0.125), (2.0, 0.25), (3.0, 1.0)]);
        assert_eq!(mean(&[&a, &b], |r| r.requests as f64), 200.0);
        let c = RunResult { requests: 1000, ..a.clone() };
        assert_eq!(
            spread(&[&a, &b, &c], |r| r.requests as f64),
            Spread { median: 300.0, min: 100.0, max: 1000.0, n: 3 }
        );
        assert_eq!(spread(&[&a, &b], |r| r.requests as f64).median, 200.0);
        assert!(spread(&[], |r| r.requests as f64).median.is_nan());
        assert!(pool_cdf(&[], |r| &r.latency_cdf).is_empty());
        b.latency_cdf = vec![(f64::NAN, 1.0)];
        assert_eq!(pool_cdf(&[&a, &b], |r| &r.latency_cdf), a.latency_cdf);
    }
}
