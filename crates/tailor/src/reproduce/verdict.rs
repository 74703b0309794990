//! Judging a claim on the runs of its setup: one value per seed and side, the ratio seed by
//! seed, its median and spread, and the verdict.
//!
//! The rule (a choice, documented on the reproduce page): a claim with a published effect
//! holds when Tailor shows at least half of it (a 25 % reduction published, at least 12.5 %
//! measured), is "sign only" when the direction holds with less, and fails otherwise. Seeds
//! are compared pairwise (common random numbers: both sides of a seed saw the same requests),
//! and the verdict reads the median over seeds.

use super::claims::{Aggregate, Claim, Kind, Metric, Side, Verdict, STABLE_SHARE};
use anyhow::{bail, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use tailor_core::results::RunResult;
use tailor_report::data::Spread;

/// What a claim came to.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// The claim's figure per seed: `a / b`, or for `share` the metric of each run.
    pub per_seed: BTreeMap<u64, f64>,
    /// Median over seeds (for `share`: the share of runs within the threshold).
    pub value: f64,
    /// Smallest and largest over seeds.
    pub min: f64,
    /// See `min`.
    pub max: f64,
    /// The verdict.
    pub verdict: Verdict,
    /// `bound_ratio` claims: how many of the runs had a trivial lower bound (the LP's optimum
    /// equal to the largest single request's own weighted processing time), out of how many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trivial_bounds: Option<(usize, usize)>,
}

/// The extra figure holding a run's trivial bound, `max_i w_i p_i` (filled by `reproduce`).
pub const TRIVIAL_BOUND: &str = "bound_trivial";
/// Extra figures holding a run's mean latency of small and of large reads (ms).
pub const SMALL_MEAN: &str = "small_mean_ms";
/// See [`SMALL_MEAN`].
pub const LARGE_MEAN: &str = "large_mean_ms";

/// A bound within this relative distance of the trivial one is the trivial one (the LP is
/// solved by a binary search to `bound.tolerance`, 1e-4 by default).
const TRIVIAL_TOLERANCE: f64 = 1e-3;

/// A claim of direction only (no published effect) whose median ratio is this close to 1 is
/// "sign only": the two sides are equal to the precision of the runs (TAP against C3 with 50
/// clients gave 0.9999 over 20 seeds spread 0.42-2.15).
const EQUAL_WITHIN: f64 = 0.01;

/// Judge `claim` on the runs of the setups its sides read (`a_runs`, `b_runs`).
pub fn judge(claim: &Claim, a_runs: &[RunResult], b_runs: &[RunResult]) -> Result<Outcome> {
    let a = side_values(claim, &claim.a, a_runs)?;
    let per_seed = match (&claim.b, claim.kind) {
        (Some(b), Kind::Lower | Kind::Higher | Kind::Similar) => {
            let b = side_values(claim, b, b_runs)?;
            let mut ratios = BTreeMap::new();
            for (seed, va) in &a {
                let Some(vb) = b.get(seed) else { bail!("seed {seed} has no run for side b") };
                if *vb <= 0.0 || !vb.is_finite() {
                    bail!("side b's {:?} is {vb} on seed {seed}: the run measured nothing", claim.metric);
                }
                ratios.insert(*seed, va / vb);
            }
            ratios
        }
        (Some(b), Kind::Steadier) => {
            let b = side_values(claim, b, b_runs)?;
            let spread_b = interquartile_range(b.values().copied());
            if spread_b <= 0.0 || !spread_b.is_finite() {
                bail!("side b's {:?} does not vary between seeds ({spread_b}): nothing to compare", claim.metric);
            }
            let values: Vec<f64> = a.values().copied().collect();
            let spread = Spread::of(values.iter().copied());
            let value = interquartile_range(values) / spread_b;
            return Ok(Outcome {
                verdict: verdict(claim, value),
                per_seed: a,
                value,
                min: spread.min,
                max: spread.max,
                trivial_bounds: None,
            });
        }
        _ => a,
    };
    let values: Vec<f64> = per_seed.values().copied().collect();
    let spread = Spread::of(values.iter().copied());
    let value = match claim.kind {
        Kind::Share => share_within(&values, claim.threshold.unwrap_or(f64::NAN)),
        _ => spread.median,
    };
    let trivial_bounds = (claim.metric == Metric::BoundRatio).then(|| trivial_bounds(claim, a_runs));
    Ok(Outcome { verdict: verdict(claim, value), per_seed, value, min: spread.min, max: spread.max, trivial_bounds })
}

/// How many of side `a`'s runs had a bound no better than the trivial one, out of those whose
/// trivial bound is known.
fn trivial_bounds(claim: &Claim, runs: &[RunResult]) -> (usize, usize) {
    let known: Vec<bool> = runs
        .iter()
        .filter(|r| matches(claim, &claim.a, r))
        .filter_map(|r| Some(r.bound?.bound <= r.extra.get(TRIVIAL_BOUND)? * (1.0 + TRIVIAL_TOLERANCE)))
        .collect();
    (known.iter().filter(|&&t| t).count(), known.len())
}

/// The verdict for a claim whose figure (median ratio, or share) is `value`.
pub fn verdict(claim: &Claim, value: f64) -> Verdict {
    let holds_if = |ok: bool| if ok { Verdict::Holds } else { Verdict::Fails };
    match claim.kind {
        Kind::Lower => match claim.published {
            _ if value >= 1.0 => Verdict::Fails,
            Some(p) if value > 1.0 - (1.0 - p) / 2.0 => Verdict::SignOnly,
            None if value > 1.0 - EQUAL_WITHIN => Verdict::SignOnly,
            _ => Verdict::Holds,
        },
        Kind::Higher => match claim.published {
            _ if value <= 1.0 => Verdict::Fails,
            Some(p) if value < 1.0 + (p - 1.0) / 2.0 => Verdict::SignOnly,
            None if value < 1.0 + EQUAL_WITHIN => Verdict::SignOnly,
            _ => Verdict::Holds,
        },
        Kind::Similar => holds_if((value - 1.0).abs() <= claim.tolerance.unwrap_or(0.0)),
        Kind::Share if claim.strict => holds_if(value > claim.published.unwrap_or(f64::INFINITY)),
        Kind::Share => holds_if(value >= claim.published.unwrap_or(f64::INFINITY)),
        Kind::AtMost => holds_if(value <= claim.published.unwrap_or(0.0) * (1.0 + claim.tolerance.unwrap_or(0.0))),
        Kind::Steadier => holds_if(value < 1.0),
    }
}

/// The distance between the upper and the lower quartile of the finite `values` (quartiles
/// interpolated between order statistics, as numpy's default), NaN when there are none.
fn interquartile_range(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        let pos = q * (v.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
    };
    quantile(0.75) - quantile(0.25)
}

/// One value per seed for `side`: its runs at the claim's points, aggregated.
fn side_values(claim: &Claim, side: &Side, runs: &[RunResult]) -> Result<BTreeMap<u64, f64>> {
    let mut per_seed: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    let counts = |r: &&RunResult| claim.aggregate != Aggregate::MaxStable || stable(r);
    for r in runs.iter().filter(|r| matches(claim, side, r)).filter(counts) {
        per_seed.entry(r.seed).or_default().push(metric(claim.metric, r)?);
    }
    if per_seed.is_empty() {
        let stably = if claim.aggregate == Aggregate::MaxStable { " served stably" } else { "" };
        bail!("no run of selector `{}` (local {:?}) at {:?}{stably}", side.selector, side.local, claim.at);
    }
    let mut out = BTreeMap::new();
    for (seed, values) in per_seed {
        let v = match claim.aggregate {
            Aggregate::One if values.len() == 1 => values[0],
            Aggregate::One => {
                bail!("{} runs of `{}` match seed {seed}: narrow `at` or set `aggregate`", values.len(), side.selector)
            }
            Aggregate::Max | Aggregate::MaxStable => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        };
        out.insert(seed, v);
    }
    Ok(out)
}

/// Whether a run completed at least [`STABLE_SHARE`] of what it was offered.
fn stable(r: &RunResult) -> bool {
    r.throughput_rps >= STABLE_SHARE * r.offered_rps
}

fn matches(claim: &Claim, side: &Side, r: &RunResult) -> bool {
    r.selector == side.selector
        && side.local.as_ref().is_none_or(|l| *l == r.local)
        && claim.at.iter().all(|(k, v)| r.params.get(k).is_some_and(|p| same_value(p, v)))
}

/// Whether a swept parameter's text equals a claim's: numerically when both are numbers
/// (`40000` and `40000.0`), else ignoring spaces (`[0.9, 0.1]`).
fn same_value(a: &str, b: &str) -> bool {
    match (a.trim().parse::<f64>(), b.trim().parse::<f64>()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a.split_whitespace().collect::<String>() == b.split_whitespace().collect::<String>(),
    }
}

/// The multi-get figures of run `r`.
fn multiget(r: &RunResult) -> Result<&tailor_core::stats::Summary> {
    match &r.multiget {
        Some(m) => Ok(&m.latency_ms),
        None => bail!("run {} seed {} has no multi-gets: its setup needs workload.multiget", r.selector, r.seed),
    }
}

fn metric(m: Metric, r: &RunResult) -> Result<f64> {
    let l = &r.read_latency_ms;
    Ok(match m {
        Metric::P50 => l.p50,
        Metric::P95 => l.p95,
        Metric::P99 => l.p99,
        Metric::P999 => l.p999,
        Metric::Max => l.max,
        Metric::Mean => l.mean,
        Metric::Throughput => r.throughput_rps,
        Metric::Offered => r.offered_rps,
        Metric::StretchP99 => r.stretch.p99,
        Metric::BoundRatio => match r.bound {
            Some(b) => b.ratio,
            None => bail!("run {} seed {} has no lower bound: its setup needs bound.enabled", r.selector, r.seed),
        },
        Metric::HedgeRatio => match r.extra.get("hedge_ratio") {
            Some(&v) => v,
            None => {
                bail!("run {} seed {} did not hedge: its setup needs cluster.speculative_retry", r.selector, r.seed)
            }
        },
        Metric::MgetP99 => multiget(r)?.p99,
        Metric::MgetP999 => multiget(r)?.p999,
        Metric::SmallOverLarge => match (r.extra.get(SMALL_MEAN), r.extra.get(LARGE_MEAN)) {
            (Some(s), Some(l)) if *l > 0.0 => s / l,
            _ => bail!(
                "run {} seed {} has no small and large reads apart: its setup needs report.per_request and both sizes",
                r.selector,
                r.seed
            ),
        },
    })
}

fn share_within(values: &[f64], threshold: f64) -> f64 {
    values.iter().filter(|&&v| v <= threshold).count() as f64 / values.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::claims::ClaimsFile;

    fn claim(kind: &str, paper: Option<f64>) -> Claim {
        let extra = match kind {
            "similar" => "tolerance = 0.1".to_string(),
            "share" => "threshold = 1.15".to_string(),
            "at_most" => "tolerance = 0.25".to_string(),
            _ => String::new(),
        };
        let paper = paper.map(|p| format!("published = {p}")).unwrap_or_default();
        let text = format!(
            "[setup.s]\npreset = \"c3\"\nset = []\n[[claim]]\nid = \"x\"\npaper = \"C3\"\nsource = \"s\"\ntext = \"t\"\n\
             setup = \"s\"\nkind = \"{kind}\"\nmetric = \"p99\"\na = {{ selector = \"c3\" }}\n\
             b = {{ selector = \"lor\" }}\nexpected = \"holds\"\nsetup_fidelity = \"exact\"\n{paper}\n{extra}\n"
        );
        ClaimsFile::parse(&text).unwrap().claim.remove(0)
    }

    #[test]
    fn half_the_published_effect_is_the_line_between_holds_and_sign_only() {
        let c = claim("lower", Some(0.75));
        assert_eq!(verdict(&c, 0.70), Verdict::Holds);
        assert_eq!(verdict(&c, 0.875), Verdict::Holds);
        assert_eq!(verdict(&c, 0.90), Verdict::SignOnly);
        assert_eq!(verdict(&c, 1.0), Verdict::Fails);
        let c = claim("higher", Some(6.58));
        assert_eq!(verdict(&c, 4.85), Verdict::Holds);
        assert_eq!(verdict(&c, 2.0), Verdict::SignOnly);
        assert_eq!(verdict(&c, 0.9), Verdict::Fails);
        let bare = claim("lower", None);
        assert_eq!(verdict(&bare, 0.98), Verdict::Holds);
        // a direction by less than 1 % is no more than its sign
        assert_eq!(verdict(&bare, 0.9999), Verdict::SignOnly);
        assert_eq!(verdict(&claim("higher", None), 1.005), Verdict::SignOnly);
        assert_eq!(verdict(&claim("higher", None), 1.02), Verdict::Holds);
        assert_eq!(verdict(&claim("similar", None), 1.08), Verdict::Holds);
        assert_eq!(verdict(&claim("similar", None), 0.85), Verdict::Fails);
    }

    fn run(selector: &str, seed: u64, p99: f64) -> RunResult {
        let mut r = RunResult { selector: selector.into(), local: "fcfs".into(), seed, ..RunResult::default() };
        r.read_latency_ms.p99 = p99;
        r
    }

    #[test]
    fn seeds_are_paired_and_the_median_ratio_decides() {
        let c = claim("lower", Some(0.5));
        let runs = [run("c3", 1, 40.0), run("lor", 1, 100.0), run("c3", 2, 90.0), run("lor", 2, 100.0)]
            .into_iter()
            .chain([run("c3", 3, 50.0), run("lor", 3, 100.0)])
            .collect::<Vec<_>>();
        let o = judge(&c, &runs, &runs).unwrap();
        assert_eq!(o.per_seed.len(), 3);
        assert!((o.value - 0.5).abs() < 1e-12 && (o.min - 0.4).abs() < 1e-12 && (o.max - 0.9).abs() < 1e-12);
        assert_eq!(o.verdict, Verdict::Holds);
        let missing = judge(&c, &runs[..3], &runs[..3]).unwrap_err().to_string();
        assert!(missing.contains("seed 2") || missing.contains("seed 3"), "{missing}");
        let pair = [run("c3", 1, 1.0), run("lor", 1, 0.0)];
        let nothing = judge(&c, &pair, &pair).unwrap_err().to_string();
        assert!(nothing.contains("measured nothing"), "{nothing}");
    }

    #[test]
    fn a_steadier_claim_compares_interquartile_ranges_over_seeds() {
        let c = claim("steadier", None);
        // c3 over seeds 1..=5: 10, 11, 12, 13, 14 (IQR 2); lor: 10, 20, 30, 40, 50 (IQR 20)
        let runs: Vec<RunResult> =
            (1..=5).flat_map(|s| [run("c3", s, 9.0 + s as f64), run("lor", s, 10.0 * s as f64)]).collect();
        let o = judge(&c, &runs, &runs).unwrap();
        assert!((o.value - 0.1).abs() < 1e-12, "{}", o.value);
        assert_eq!((o.verdict, o.min, o.max), (Verdict::Holds, 10.0, 14.0));
        // the other way round it fails: a larger spread is not steadier, whatever the medians
        let mut flipped = c.clone();
        std::mem::swap(&mut flipped.a, flipped.b.as_mut().unwrap());
        assert_eq!(judge(&flipped, &runs, &runs).unwrap().verdict, Verdict::Fails);
        let flat: Vec<RunResult> = (1..=3).flat_map(|s| [run("c3", s, 1.0), run("lor", s, 5.0)]).collect();
        assert!(judge(&c, &flat, &flat).unwrap_err().to_string().contains("does not vary"));
        assert_eq!(interquartile_range([4.0, 1.0, 3.0, 2.0]), 1.5);
    }

    #[test]
    fn a_share_claim_counts_runs_within_the_threshold() {
        let mut c = claim("share", Some(0.5));
        c.metric = Metric::BoundRatio;
        let mut runs: Vec<RunResult> = (1..=4).map(|s| run("c3", s, 0.0)).collect();
        for (r, ratio) in runs.iter_mut().zip([1.05, 1.10, 1.3, 1.2]) {
            r.bound = Some(tailor_core::results::BoundRatio { ratio, ..Default::default() });
        }
        let o = judge(&c, &runs, &[]).unwrap();
        assert_eq!((o.value, o.verdict), (0.5, Verdict::Holds));
        // "more than 50 %" is not met by exactly half
        c.strict = true;
        assert_eq!(judge(&c, &runs, &[]).unwrap().verdict, Verdict::Fails);
        c.strict = false;
        runs[1].bound = None;
        assert!(judge(&c, &runs, &[]).unwrap_err().to_string().contains("bound.enabled"));
    }

    #[test]
    fn a_bound_equal_to_the_largest_request_is_counted_as_trivial() {
        let mut c = claim("share", Some(0.5));
        c.metric = Metric::BoundRatio;
        let runs: Vec<RunResult> = [(1.0, 1.0), (2.07, 1.0), (1.00005, 1.0)]
            .into_iter()
            .enumerate()
            .map(|(i, (bound, trivial))| {
                let mut r = run("c3", i as u64, 0.0);
                r.bound = Some(tailor_core::results::BoundRatio { bound, ratio: 1.1, ..Default::default() });
                r.extra.insert(TRIVIAL_BOUND.into(), trivial);
                r
            })
            .collect();
        assert_eq!(judge(&c, &runs, &[]).unwrap().trivial_bounds, Some((2, 3)));
    }

    #[test]
    fn an_at_most_claim_allows_its_tolerance_above_the_published_value() {
        let c = claim("at_most", Some(0.02));
        assert_eq!(verdict(&c, 0.024), Verdict::Holds);
        assert_eq!(verdict(&c, 0.026), Verdict::Fails);
    }

    #[test]
    fn max_stable_takes_the_largest_rate_served_at_99_percent() {
        let mut c = claim("higher", None);
        (c.metric, c.aggregate, c.b) = (Metric::Offered, Aggregate::MaxStable, None);
        let rate = |offered: f64, done: f64| RunResult {
            selector: "c3".into(),
            seed: 1,
            offered_rps: offered,
            throughput_rps: done,
            ..RunResult::default()
        };
        // 50k offered is "completed" at 48k: overload, not a stable rate
        let runs = [rate(30e3, 29.9e3), rate(40e3, 39.7e3), rate(50e3, 48e3)];
        assert_eq!(side_values(&c, &c.a, &runs).unwrap()[&1], 40e3);
        assert!(side_values(&c, &c.a, &runs[2..]).unwrap_err().to_string().contains("served stably"));
    }
}
