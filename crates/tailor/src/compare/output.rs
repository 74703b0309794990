//! What a comparison writes: `compare.json` (a pure function of the arguments and seeds: no
//! wall time in it), `compare.csv` (one row per registered pair, skipped ones with their
//! reason) and the table printed on stdout.

use super::pairs::Skipped;
use super::rank::Row;
use super::stats::Estimate;
use crate::trace_summary::TraceSummary;
use serde::Serialize;
use std::fmt::Write;

/// Version of `compare.json`'s layout.
pub const COMPARE_FORMAT: u32 = 1;

/// How the lower bound went.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BoundNote {
    /// Requests (the first ones of each run) in the bounded instance; 0 when not computed.
    pub requests: usize,
    /// Why it was not computed, if it was not.
    pub why_not: Option<String>,
}

/// `compare.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// [`COMPARE_FORMAT`].
    pub format: u32,
    /// The tailor that ran it.
    pub tailor_version: String,
    /// The base spec (preset name or file) the cluster and service model came from.
    pub base_spec: String,
    /// The replayed part of the trace, when one was replayed.
    pub trace: Option<TraceSummary>,
    /// Arrival times divided by this.
    pub speedup: f64,
    /// Servers.
    pub servers: usize,
    /// Replication factor.
    pub replication: usize,
    /// Seeds, each run once per pair.
    pub seeds: Vec<u64>,
    /// Requests per run.
    pub requests: u64,
    /// Warm-up not measured, ms.
    pub warmup_ms: f64,
    /// The recommendation.
    pub recommendation: String,
    /// What limits it.
    pub caveats: Vec<String>,
    /// Every pair that ran, best first.
    pub ranking: Vec<Row>,
    /// Every registered pair that did not, with why.
    pub skipped: Vec<Skipped>,
    /// The lower bound.
    pub bound: BoundNote,
}

/// Header of the printed table and the page's ranking.
pub const HEADER: [&str; 11] = [
    "rank",
    "selector",
    "local",
    "p99 ms [95% CI]",
    "p50 ms",
    "p99.9 ms",
    "mean ms",
    "tput/s",
    "errors",
    "max/bound",
    "verdict",
];

/// The cells of `row` under [`HEADER`].
pub fn cells(row: &Row) -> Vec<String> {
    let verdict = match (row.rank, row.tied_with_best) {
        (1, _) => "best",
        (_, true) => "tied with the best",
        _ => "",
    };
    vec![
        row.rank.to_string(),
        row.selector.clone(),
        row.local.clone(),
        row.p99_ms.text(2),
        format!("{:.2}", row.p50_ms.mean),
        format!("{:.2}", row.p999_ms.mean),
        format!("{:.3}", row.mean_ms.mean),
        format!("{:.0}", row.throughput_rps.mean),
        row.errors.to_string(),
        row.bound.map_or("-".into(), |b| format!("{:.3}", b.ratio.mean)),
        verdict.into(),
    ]
}

/// The ranking as an aligned text table (text left, numbers right).
pub fn table(rows: &[Row]) -> String {
    let mut all: Vec<Vec<String>> = vec![HEADER.iter().map(|h| h.to_string()).collect()];
    all.extend(rows.iter().map(cells));
    let widths: Vec<usize> =
        (0..HEADER.len()).map(|c| all.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for (i, row) in all.iter().enumerate() {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = " ".repeat(widths[c] - cell.chars().count());
            let left = matches!(c, 1 | 2 | 10);
            let _ = if left { write!(line, "{cell}{pad}  ") } else { write!(line, "{pad}{cell}  ") };
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if i == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
            out.push('\n');
        }
    }
    out
}

/// `compare.csv`: every ranked pair, then every skipped one with its reason.
pub fn csv(rows: &[Row], skipped: &[Skipped]) -> String {
    let est = ["p99_ms", "p50_ms", "p999_ms", "mean_ms", "throughput_rps"];
    let mut head: Vec<String> = ["rank", "selector", "local"].map(String::from).to_vec();
    for e in est {
        head.extend([e.to_string(), format!("{e}_ci_low"), format!("{e}_ci_high")]);
    }
    head.extend(
        [
            "errors",
            "reads",
            "tied_with_best",
            "bound_requests",
            "max_flow_ms",
            "lower_bound_ms",
            "bound_ratio",
            "skipped",
        ]
        .map(String::from),
    );
    let mut out = head.join(",") + "\n";
    let ci = |e: &Estimate| {
        let (lo, hi) = e.ci95.map_or((String::new(), String::new()), |(l, h)| (l.to_string(), h.to_string()));
        format!("{},{lo},{hi}", e.mean)
    };
    for r in rows {
        let figures = [r.p99_ms, r.p50_ms, r.p999_ms, r.mean_ms, r.throughput_rps].iter().map(ci).collect::<Vec<_>>();
        let bound = r.bound.map_or(",,,".into(), |b| {
            format!("{},{},{},{}", b.requests, b.max_flow_ms.mean, b.lower_bound_ms.mean, b.ratio.mean)
        });
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{bound},",
            r.rank,
            field(&r.selector),
            field(&r.local),
            figures.join(","),
            r.errors,
            r.reads,
            r.tied_with_best
        );
    }
    let empty = ",".repeat(3 * est.len() + 8);
    for s in skipped {
        let _ = writeln!(out, ",{},{}{empty}{}", field(&s.selector), field(&s.local), field(&s.reason));
    }
    out
}

/// A CSV field, quoted when it holds a comma or a quote.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::super::rank::rank;
    use super::*;
    use tailor_core::results::RunResult;

    #[test]
    fn csv_rows_have_as_many_fields_as_the_header_and_skipped_pairs_their_reason() {
        let mut r = RunResult { selector: "c3".into(), local: "fcfs".into(), ..Default::default() };
        r.read_latency_ms.count = 10;
        let rows = rank(&[r.clone(), RunResult { seed: 2, ..r }]);
        let skipped = [Skipped { selector: "heron".into(), local: "sjf".into(), reason: "no sizes, none".into() }];
        let text = csv(&rows, &skipped);
        let lines: Vec<&str> = text.lines().collect();
        let n = lines[0].split(',').count();
        assert_eq!(lines[1].split(',').count(), n, "{text}");
        assert!(lines[2].starts_with(",heron,sjf,") && lines[2].ends_with(",\"no sizes, none\""), "{text}");
        assert_eq!(lines[2].split(',').count(), n + 1, "the quoted reason holds one comma");
        let printed = table(&rows);
        assert!(printed.lines().nth(2).unwrap().ends_with("best"), "{printed}");
    }
}
