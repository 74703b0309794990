//! The page a person acts on: the comparison laid out for tailor-report's compare renderer,
//! written as `compare.html` with its figure as PNG in `plots/`.

use super::output::{cells, Comparison, HEADER};
use anyhow::{Context, Result};
use std::path::Path;
use tailor_core::results::{Results, RunResult};
use tailor_report::compare::{ComparePage, RankedRow};
use tailor_report::data::Strategy;

/// Pairs drawn in the latency figure.
const TOP_PAIRS: usize = 6;

/// Write `compare.html` and `plots/*.png` into `dir`; returns the page's path.
pub fn write(dir: &Path, c: &Comparison, results: &Results) -> Result<std::path::PathBuf> {
    let top = c
        .ranking
        .iter()
        .take(TOP_PAIRS)
        .map(|row| {
            let runs: Vec<&RunResult> =
                results.runs.iter().filter(|r| r.selector == row.selector && r.local == row.local).collect();
            (Strategy { selector: row.selector.clone(), local: row.local.clone() }, runs)
        })
        .collect();
    let page = ComparePage {
        title: format!("Which strategy for {}", c.trace.as_ref().map_or(c.base_spec.as_str(), |t| t.file.as_str())),
        subtitle: format!(
            "tailor compare: {} servers, replication {}, seeds {:?}, {} requests per run, every registered selector × local policy in the simulator",
            c.servers, c.replication, c.seeds, c.requests
        ),
        recommendation: c.recommendation.clone(),
        caveats: c.caveats.clone(),
        header: HEADER.iter().map(|h| h.to_string()).collect(),
        rows: c.ranking.iter().map(|r| RankedRow { cells: cells(r), tied: r.tied_with_best }).collect(),
        top,
        workload: workload(c),
        bound: bound_text(c),
        skipped: c.skipped.iter().map(|s| format!("{}/{}: {}", s.selector, s.local, s.reason)).collect(),
        spec: results.spec.clone(),
    };
    let report = tailor_report::compare::render(&page);
    let path = dir.join("compare.html");
    std::fs::write(&path, &report.html).with_context(|| format!("writing {}", path.display()))?;
    let export = tailor_report::write_pngs(&report.plots, &dir.join("plots"))?;
    for w in &export.warnings {
        eprintln!("warning: {w}");
    }
    Ok(path)
}

/// The trace's summary (as `tailor trace` prints it), or the base spec's workload.
fn workload(c: &Comparison) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = match &c.trace {
        Some(t) => t.lines().into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        None => vec![("spec".into(), format!("the workload of `{}`", c.base_spec))],
    };
    if c.speedup != 1.0 {
        out.push(("speedup".into(), format!("arrivals {}× faster than the trace", c.speedup)));
    }
    out.push(("warm-up".into(), format!("{} ms not measured", c.warmup_ms)));
    out
}

/// What the max/bound column means, or why it is empty.
fn bound_text(c: &Comparison) -> String {
    match &c.bound.why_not {
        Some(why) => format!("Not computed: {why}."),
        None => format!(
            "max/bound is each pair's worst flow time over the reads among the first {} requests of each run, \
             divided by the LP relaxation's lower bound on any schedule's worst flow time for those reads \
             (the same arrivals and processing times, any replica and order): 1 means no scheduler could have \
             done better on them; it speaks of the worst request, not of p99.",
            c.bound.requests
        ),
    }
}
