//! The comparison table as HTML: one row per swept point × selector × local policy, the median
//! over seeds with its min–max range beneath, the best median of each column highlighted within
//! each swept point among valid rows. Errors and timeouts are never highlighted: they judge the
//! run, not the strategy; nor is a row holding an invalid live run.

use crate::data::{short_name, spread, Spread, View};
use crate::escape::escape;
use crate::scale::format_value;
use crate::validity::errors_and_timeouts;
use std::fmt::Write;
use tailor_core::results::RunResult;

/// Which value of a column is best, if any.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Best {
    Lowest,
    Highest,
    Unranked,
}

/// A numeric column: header, which value is best, and how to read it from a run.
type Column = (&'static str, Best, fn(&RunResult) -> f64);

const COLUMNS: [Column; 10] = [
    ("p50 ms", Best::Lowest, |r| r.read_latency_ms.p50),
    ("p95 ms", Best::Lowest, |r| r.read_latency_ms.p95),
    ("p99 ms", Best::Lowest, |r| r.read_latency_ms.p99),
    ("p99.9 ms", Best::Lowest, |r| r.read_latency_ms.p999),
    ("max ms", Best::Lowest, |r| r.read_latency_ms.max),
    ("throughput /s", Best::Highest, |r| r.throughput_rps),
    ("stretch p99", Best::Lowest, |r| r.stretch.p99),
    ("errors", Best::Unranked, |r| errors_and_timeouts(r).0),
    ("timeouts", Best::Unranked, |r| errors_and_timeouts(r).1),
    ("seeds", Best::Unranked, |_| f64::NAN),
];

/// One row: a strategy at a swept point, its column values over seeds, its seed count and how
/// many of those runs are invalid.
struct Row {
    strategy: usize,
    values: Vec<Spread>,
    seeds: usize,
    invalid: usize,
}

/// The table's HTML. "Best" is judged within each swept point, since points differ in load and
/// are not comparable with each other, and only among valid rows: a row holding an invalid live
/// run is marked `INVALID` in the `valid` column (present when the file has live runs), greyed
/// and never ranked. A note under the table says where no best could be highlighted for that.
pub fn render(view: &View) -> String {
    let columns = COLUMNS;
    let verdicts = view.has_verdicts();
    let params: Vec<String> = view.points.first().map(|p| p.keys().cloned().collect()).unwrap_or_default();
    let mut out = String::from("<div class=\"table-wrap\"><table class=\"cmp\">\n<thead><tr>");
    for p in &params {
        let _ = write!(out, "<th title=\"{}\">{}</th>", escape(p), escape(&short_name(p)));
    }
    out.push_str("<th>selector</th><th>local</th>");
    for (h, _, _) in &columns {
        let _ = write!(out, "<th class=\"num\">{}</th>", escape(h));
    }
    if verdicts {
        out.push_str("<th>valid</th>");
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let (mut all_rows, mut valid_rows) = (0, 0);
    let mut uncrowned: Vec<String> = Vec::new();
    for p in 0..view.points.len() {
        let rows: Vec<Row> = (0..view.strategies.len())
            .filter(|&s| !view.runs(s, p).is_empty())
            .map(|s| {
                let runs = view.runs(s, p);
                Row {
                    strategy: s,
                    values: columns.iter().map(|(_, _, f)| spread(runs, f)).collect(),
                    seeds: runs.len(),
                    invalid: runs.iter().filter(|r| !r.is_valid()).count(),
                }
            })
            .collect();
        let ranked: Vec<&Row> = rows.iter().filter(|r| r.invalid == 0).collect();
        (all_rows, valid_rows) = (all_rows + rows.len(), valid_rows + ranked.len());
        // only mark a best when there is a choice to make among valid rows
        let crown = ranked.len() > 1;
        if !crown && rows.len() > 1 && ranked.len() < rows.len() {
            uncrowned.push(view.point_label(p));
        }
        let best: Vec<f64> = (0..columns.len())
            .map(|c| {
                let vals = ranked.iter().map(|r| r.values[c].median).filter(|v| v.is_finite());
                match columns[c].1 {
                    Best::Lowest => vals.fold(f64::INFINITY, f64::min),
                    Best::Highest => vals.fold(f64::NEG_INFINITY, f64::max),
                    Best::Unranked => f64::NAN,
                }
            })
            .collect();
        for (i, row) in rows.iter().enumerate() {
            let mut classes: Vec<&str> = Vec::new();
            if i == 0 && p > 0 {
                classes.push("group");
            }
            if row.invalid > 0 {
                classes.push("invalid");
            }
            if classes.is_empty() {
                out.push_str("<tr>");
            } else {
                let _ = write!(out, "<tr class=\"{}\">", classes.join(" "));
            }
            for key in &params {
                let v = view.points[p].get(key).map(String::as_str).unwrap_or("");
                let _ = write!(out, "<td>{}</td>", escape(v));
            }
            let strategy = &view.strategies[row.strategy];
            let _ = write!(out, "<td>{}</td><td>{}</td>", escape(&strategy.selector), escape(&strategy.local));
            for (c, v) in row.values.iter().enumerate() {
                if columns[c].0 == "seeds" {
                    let _ = write!(out, "<td class=\"num\">{}</td>", row.seeds);
                    continue;
                }
                let is_best = crown && row.invalid == 0 && v.median.is_finite() && v.median == best[c];
                let cls = if is_best { "num best" } else { "num" };
                let _ = write!(out, "<td class=\"{cls}\">{}</td>", cell(v));
            }
            if verdicts {
                out.push_str(&verdict(row));
            }
            out.push_str("</tr>\n");
        }
    }
    out.push_str("</tbody></table></div>\n");
    if let Some(note) = no_best_note(verdicts, all_rows, valid_rows, &uncrowned) {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(&note));
    }
    out
}

/// The `valid` cell of a row: `ok`, or `INVALID` with how many of its seeds are invalid.
fn verdict(row: &Row) -> String {
    if row.invalid == 0 {
        return "<td class=\"verdict\">ok</td>".into();
    }
    let seeds = if row.seeds == 1 { "seed" } else { "seeds" };
    format!("<td class=\"verdict bad\" title=\"{} of {} {seeds} invalid\">INVALID</td>", row.invalid, row.seeds)
}

/// Why no best is highlighted, when invalid rows are the reason: none is valid, or some swept
/// points are left with fewer than two valid rows.
fn no_best_note(verdicts: bool, all_rows: usize, valid_rows: usize, uncrowned: &[String]) -> Option<String> {
    if !verdicts || all_rows == 0 {
        None
    } else if valid_rows == 0 {
        Some(
            "No best value is highlighted: every row holds an INVALID live run, whose figures measure the load \
             generator's trouble, not the strategy."
                .into(),
        )
    } else if !uncrowned.is_empty() {
        Some(format!(
            "No best value is highlighted at {}: fewer than two rows there are valid, and rows holding an INVALID \
             live run are never ranked.",
            uncrowned.join("; ")
        ))
    } else {
        None
    }
}

/// A median, with the min–max range beneath when seeds disagree.
fn cell(v: &Spread) -> String {
    if v.n > 1 && v.min != v.max {
        format!(
            "{}<span class=\"range\">{}–{}</span>",
            format_value(v.median),
            format_value(v.min),
            format_value(v.max)
        )
    } else {
        format_value(v.median)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::tests::results;
    use crate::svg::balanced;

    #[test]
    fn rows_per_point_and_strategy_with_bests() {
        let mut r = results("sim");
        r.runs[0].selector = "<b>".into();
        let view = View::new(&r);
        let html = render(&view);
        balanced(&html).unwrap();
        assert_eq!(html.matches("<tr").count(), 1 + 5, "header + 3 strategies at point 1 + 2 at point 2");
        assert!(html.contains("<td>&lt;b&gt;</td>"));
        assert!(html.contains("<th title=\"cluster.fluctuation.interval_ms\">interval_ms</th>"));
        // c3 beats lor on every latency column at each point; lor never holds a best latency
        let lor_rows: Vec<&str> = html.lines().filter(|l| l.contains("<td>lor</td>")).collect();
        assert_eq!(lor_rows.len(), 2);
        assert!(lor_rows.iter().all(|l| l.matches("best").count() == 0));
        let c3 = html.lines().find(|l| l.contains("<td>c3</td>") && l.contains(">500<")).unwrap();
        assert_eq!(c3.matches("best").count(), 7, "all latencies, throughput and stretch");
        // seeds 1 and 2 of c3 at interval 500: p50 0.69·1.65 and 0.69·1.8, median 1.19
        assert!(c3.contains("<td class=\"num best\">1.19<span class=\"range\">1.14–1.24</span></td>"), "{c3}");
    }

    #[test]
    fn live_tables_show_errors_and_timeouts_unranked() {
        let mut r = results("live");
        r.runs[0].errors = 10;
        r.runs[0].extra.insert("timeouts".into(), 4.0);
        let html = render(&View::new(&r));
        balanced(&html).unwrap();
        assert!(html.contains("<th class=\"num\">errors</th><th class=\"num\">timeouts</th>"), "{html}");
        // c3 at the first point: seeds 1 and 2, errors 6 and 0, timeouts 4 and 0: medians and ranges
        let c3 = html.lines().find(|l| l.contains("<td>c3</td>")).unwrap();
        assert!(
            c3.ends_with(
                "<td class=\"num\">3.00<span class=\"range\">0.00–6.00</span></td>\
                 <td class=\"num\">2.00<span class=\"range\">0.00–4.00</span></td><td class=\"num\">2</td></tr>"
            ),
            "{c3}"
        );
        assert_eq!(c3.matches("best").count(), 7, "errors and timeouts are never highlighted");
    }

    /// A live file: every run valid unless `bad` says otherwise.
    fn live(bad: impl Fn(&RunResult) -> bool) -> tailor_core::results::Results {
        let mut r = results("live");
        for run in &mut r.runs {
            run.valid = Some(!bad(run));
        }
        r
    }

    #[test]
    fn when_every_live_run_is_invalid_no_row_is_crowned() {
        let html = render(&View::new(&live(|_| true)));
        balanced(&html).unwrap();
        assert!(html.contains("<th class=\"num\">seeds</th><th>valid</th></tr>"), "{html}");
        assert!(!html.contains("num best"), "{html}");
        assert_eq!(html.matches("<td class=\"verdict bad\" title=\"2 of 2 seeds invalid\">INVALID</td>").count(), 4);
        assert_eq!(
            html.matches("<tr class=\"invalid\">").count() + html.matches("<tr class=\"group invalid\">").count(),
            4
        );
        assert!(html.contains("<p class=\"note\">No best value is highlighted: every row holds an INVALID live run"));
    }

    #[test]
    fn with_mixed_validity_only_valid_rows_are_ranked() {
        // a third strategy, rr, faster than both but invalid on one seed at each point
        let mut r = live(|_| false);
        for interval in ["100", "500"] {
            for seed in [1, 2] {
                let mut run =
                    crate::data::tests::run("rr", "fcfs", &[("cluster.fluctuation.interval_ms", interval)], seed, 0.5);
                run.valid = Some(seed == 1);
                r.runs.push(run);
            }
        }
        let html = render(&View::new(&r));
        balanced(&html).unwrap();
        let rr: Vec<&str> = html.lines().filter(|l| l.contains("<td>rr</td>")).collect();
        assert_eq!(rr.len(), 2);
        for row in &rr {
            assert!(row.starts_with("<tr class=\"invalid\">") || row.starts_with("<tr class=\"group invalid\">"));
            assert!(!row.contains("best"), "{row}");
            assert!(row.ends_with("<td class=\"verdict bad\" title=\"1 of 2 seeds invalid\">INVALID</td></tr>"));
        }
        let c3: Vec<&str> = html.lines().filter(|l| l.contains("<td>c3</td>")).collect();
        assert!(c3.iter().all(|l| l.matches("best").count() == 7 && l.ends_with("<td class=\"verdict\">ok</td></tr>")));
        assert!(!html.contains("class=\"note\""), "every point keeps two valid rows to compare");
        // with lor invalid too, no point has two valid rows left
        for run in &mut r.runs {
            if run.selector == "lor" {
                run.valid = Some(false);
            }
        }
        let html = render(&View::new(&r));
        assert!(!html.contains("num best"));
        assert!(html.contains(
            "No best value is highlighted at interval_ms=100; interval_ms=500: fewer than two rows there are valid"
        ));
    }
}
