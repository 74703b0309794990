//! The failover table of runs with injected faults: per strategy and fault, how fast reads left
//! the faulty server and the tail recovered, medians over seeds. Shared by `tailor sim`'s text
//! table and the report's HTML.

use crate::data::Strategy;
use crate::escape::escape;
use std::fmt::Write;
use tailor_core::results::{FaultOutcome, RunResult};

/// Column names of [`rows`] after the swept parameters.
const COLUMNS: [&str; 10] =
    ["selector", "local", "fault", "shed ms", "recover ms", "p99 before", "p99 during", "timeouts", "failed", "seeds"];

/// The table's rows (the header first), or `None` when no run had faults: one row per swept
/// point × strategy × fault, in first-seen order. A time the faulty server never reached in a
/// seed counts as the longest; a median that falls on such a seed reads `never`.
pub fn rows(runs: &[RunResult]) -> Option<Vec<Vec<String>>> {
    let mut groups: Vec<(String, Vec<&RunResult>)> = Vec::new();
    for r in runs.iter().filter(|r| r.failover.is_some()) {
        let key = format!("{:?}|{}|{}", r.params, r.selector, r.local);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    let first = groups.first()?.1[0];
    let params: Vec<&String> = first.params.keys().collect();
    let mut header: Vec<String> = params.iter().map(|p| p.rsplit('.').next().unwrap_or(p).to_string()).collect();
    header.extend(COLUMNS.map(String::from));
    let mut out = vec![header];
    for (_, group) in &groups {
        let faults = group[0].failover.as_ref().map_or(0, |f| f.faults.len());
        for i in 0..faults {
            let of = |r: &&RunResult| r.failover.as_ref().and_then(|f| f.faults.get(i)).cloned();
            let outcomes: Vec<FaultOutcome> = group.iter().filter_map(of).collect();
            let mut row: Vec<String> = params.iter().map(|p| group[0].params[*p].clone()).collect();
            row.extend(fault_cells(&Strategy::of(group[0]), &outcomes));
            out.push(row);
        }
    }
    Some(out)
}

/// The cells of one strategy's row for one fault (`outcomes`: one per seed).
fn fault_cells(s: &Strategy, outcomes: &[FaultOutcome]) -> Vec<String> {
    let f = &outcomes[0];
    let times = |get: fn(&FaultOutcome) -> Option<f64>| match median_or_never(outcomes.iter().map(get).collect()) {
        Some(v) => format!("{v:.0}"),
        None => "never".into(),
    };
    let median = |get: fn(&FaultOutcome) -> f64| {
        median_or_never(outcomes.iter().map(|o| Some(get(o))).collect()).unwrap_or(f64::NAN)
    };
    vec![
        s.selector.clone(),
        s.local.clone(),
        format!("{} server {} {:.0}–{:.0} ms", f.kind, f.server, f.start_ms, f.end_ms),
        times(|o| o.shed_ms),
        times(|o| o.recover_ms),
        format!("{:.2}", median(|o| o.p99_before_ms)),
        format!("{:.2}", median(|o| o.p99_during_ms)),
        format!("{:.0}", median(|o| o.timeouts as f64)),
        format!("{:.0}", median(|o| o.failed as f64)),
        outcomes.len().to_string(),
    ]
}

/// The median of `values`, a `None` counting as larger than any number (and the median
/// `None` when it falls on one).
pub fn median_or_never(mut values: Vec<Option<f64>>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(|a, b| match (a, b) {
        (Some(x), Some(y)) => x.total_cmp(y),
        (a, b) => a.is_none().cmp(&b.is_none()),
    });
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        Some((values[n / 2 - 1]? + values[n / 2]?) / 2.0)
    }
}

/// [`rows`] as aligned text, for the terminal.
pub fn text(runs: &[RunResult]) -> Option<String> {
    let rows = rows(runs)?;
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::from("failover (medians over seeds; docs/failures.md)\n");
    for row in &rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    Some(out)
}

/// [`rows`] as an HTML table under its heading ("" when no run had faults).
pub fn html(runs: &[RunResult]) -> String {
    let Some(rows) = rows(runs) else { return String::new() };
    let mut out = String::from(
        "<h3>Failover</h3><p class=\"caption\">Per fault, medians over seeds: the time from its start until \
         the faulty server's share of reads sent stays below the threshold (shed; a slow coordinator's: its \
         share of the reads clients sent it) and until the sliding p99 \
         stays within the factor of its pre-fault value (recover); p99 of reads released before and during \
         the fault; copies that timed out and reads that failed during it. <code>never</code>: not reached \
         in the median seed.</p><div class=\"table-wrap\"><table class=\"cmp\"><thead><tr>",
    );
    let cell = |tag: &str, v: &str| format!("<{tag}>{}</{tag}>", escape(v));
    rows[0].iter().for_each(|h| out.push_str(&cell("th", h)));
    out.push_str("</tr></thead><tbody>");
    for row in &rows[1..] {
        out.push_str("<tr>");
        row.iter().for_each(|v| out.push_str(&cell("td", v)));
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_core::results::Failover;

    fn run(selector: &str, seed: u64, shed: Option<f64>) -> RunResult {
        let fault = FaultOutcome {
            kind: "slow".into(),
            server: 0,
            start_ms: 2000.0,
            end_ms: 4500.0,
            shed_ms: shed,
            recover_ms: Some(120.0),
            p99_before_ms: 20.0,
            p99_during_ms: 35.0,
            ..FaultOutcome::default()
        };
        let failover = Failover { window_ms: 100.0, faults: vec![fault], timeline: Vec::new() };
        RunResult {
            selector: selector.into(),
            local: "fcfs".into(),
            seed,
            failover: Some(failover),
            ..Default::default()
        }
    }

    #[test]
    fn a_row_per_strategy_and_fault_with_never_when_the_median_seed_never_shed() {
        let runs = [
            run("lor", 1, Some(100.0)),
            run("lor", 2, Some(300.0)),
            run("random", 1, None),
            run("random", 2, Some(5.0)),
            run("random", 3, None),
        ];
        let rows = rows(&runs).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1][..5], ["lor", "fcfs", "slow server 0 2000–4500 ms", "200", "120"]);
        assert_eq!(rows[2][3], "never");
        assert_eq!(rows[2][9], "3");
        assert!(text(&runs).unwrap().contains("never"));
        assert!(html(&runs).contains("<th>shed ms</th>"));
        assert!(super::rows(&[RunResult::default()]).is_none());
    }

    #[test]
    fn never_sorts_above_every_time() {
        assert_eq!(median_or_never(vec![None, Some(1.0), Some(3.0)]), Some(3.0));
        assert_eq!(median_or_never(vec![None, Some(1.0)]), None);
        assert_eq!(median_or_never(vec![Some(4.0), Some(2.0)]), Some(3.0));
    }
}
