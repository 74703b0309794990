//! The comparison table as HTML: one row per swept point × selector × local policy, the median
//! over seeds with its min–max range beneath, the best median of each column highlighted within
//! each swept point. Errors and timeouts are never highlighted: they judge the run, not the
//! strategy.

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

/// The table's HTML. "Best" is judged within each swept point, since points differ in load and
/// are not comparable with each other.
pub fn render(view: &View) -> String {
    let columns = COLUMNS;
    let params: Vec<String> = view.points.first().map(|p| p.keys().cloned().collect()).unwrap_or_default();
    let mut out = String::from("<div class=\"table-wrap\"><table class=\"cmp\">\n<thead><tr>");
    for p in &params {
        let _ = write!(out, "<th title=\"{}\">{}</th>", escape(p), escape(&short_name(p)));
    }
    out.push_str("<th>selector</th><th>local</th>");
    for (h, _, _) in &columns {
        let _ = write!(out, "<th class=\"num\">{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for p in 0..view.points.len() {
        let rows: Vec<(usize, Vec<Spread>, usize)> = (0..view.strategies.len())
            .filter(|&s| !view.runs(s, p).is_empty())
            .map(|s| {
                let runs = view.runs(s, p);
                (s, columns.iter().map(|(_, _, f)| spread(runs, f)).collect(), runs.len())
            })
            .collect();
        let best: Vec<f64> = (0..columns.len())
            .map(|c| {
                let vals = rows.iter().map(|r| r.1[c].median).filter(|v| v.is_finite());
                match columns[c].1 {
                    Best::Lowest => vals.fold(f64::INFINITY, f64::min),
                    Best::Highest => vals.fold(f64::NEG_INFINITY, f64::max),
                    Best::Unranked => f64::NAN,
                }
            })
            .collect();
        for (i, (s, vals, seeds)) in rows.iter().enumerate() {
            let class = if i == 0 && p > 0 { " class=\"group\"" } else { "" };
            let _ = write!(out, "<tr{class}>");
            for key in &params {
                let v = view.points[p].get(key).map(String::as_str).unwrap_or("");
                let _ = write!(out, "<td>{}</td>", escape(v));
            }
            let strategy = &view.strategies[*s];
            let _ = write!(out, "<td>{}</td><td>{}</td>", escape(&strategy.selector), escape(&strategy.local));
            for (c, v) in vals.iter().enumerate() {
                if columns[c].0 == "seeds" {
                    let _ = write!(out, "<td class=\"num\">{seeds}</td>");
                    continue;
                }
                // only mark a best when there is a choice to make
                let is_best = rows.len() > 1 && v.median.is_finite() && v.median == best[c];
                let cls = if is_best { "num best" } else { "num" };
                let _ = write!(out, "<td class=\"{cls}\">{}</td>", cell(v));
            }
            out.push_str("</tr>\n");
        }
    }
    out.push_str("</tbody></table></div>\n");
    out
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
}
