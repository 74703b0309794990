//! The page of `tailor compare`: one recommendation a person can act on, its caveats, the
//! ranking with confidence intervals, the latency tails of the top pairs, what the workload
//! was, and which pairs were left out and why. Same styles and figures as the report's page.

use crate::data::{pool_cdf, Strategy};
use crate::escape::{escape, slug};
use crate::plots::tail::{tail_figure, Line};
use crate::plots::{Plot, Styles};
use crate::Report;
use std::fmt::Write;
use tailor_core::results::RunResult;

/// One row of the ranking, its cells already formatted.
#[derive(Clone, Debug, PartialEq)]
pub struct RankedRow {
    /// The cells, in the header's order.
    pub cells: Vec<String>,
    /// Tied with the best (the best included): the row is highlighted.
    pub tied: bool,
}

/// Everything on the page.
#[derive(Clone, Debug, Default)]
pub struct ComparePage<'a> {
    /// Heading.
    pub title: String,
    /// One line under it: the trace, the cluster shape, the seeds.
    pub subtitle: String,
    /// The recommendation, one sentence.
    pub recommendation: String,
    /// What limits it.
    pub caveats: Vec<String>,
    /// Column names of the ranking.
    pub header: Vec<String>,
    /// The ranking, best first.
    pub rows: Vec<RankedRow>,
    /// The top pairs' runs (every seed), best first, for the latency figure.
    pub top: Vec<(Strategy, Vec<&'a RunResult>)>,
    /// What the workload was, as labelled lines.
    pub workload: Vec<(String, String)>,
    /// How the lower bound was computed, or why not.
    pub bound: String,
    /// Pairs left out, each `selector/local: reason`.
    pub skipped: Vec<String>,
    /// The spec every run used (TOML).
    pub spec: String,
}

/// Render the page and its one figure.
pub fn render(page: &ComparePage) -> Report {
    let plots: Vec<Plot> = tail_plot(page).into_iter().collect();
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{t}</title>\n\
         <style>{css}</style>\n</head>\n<body>\n<header>\n<h1>{t}</h1>\n<p>{s}</p>\n</header>\n<main>\n\
         <section class=\"part\" id=\"compare\">\n<h2>Recommendation</h2>\n<p><strong>{r}</strong></p>\n",
        t = escape(&page.title),
        css = crate::html::CSS,
        s = escape(&page.subtitle),
        r = escape(&page.recommendation)
    );
    list(&mut out, &page.caveats);
    section(&mut out, "Ranking", "Pairs by mean p99 read latency over seeds, with its 95 % confidence interval (Student's t); highlighted rows are tied with the best: their intervals meet its own, so these runs cannot tell them apart.");
    table(&mut out, &page.header, &page.rows);
    section(&mut out, "Read latency tail of the top pairs", "Fraction of reads slower than x, seeds pooled: lower and further left is better; where a line crosses the p99 mark is its 99th percentile.");
    for plot in &plots {
        let _ = write!(
            out,
            "<div class=\"grid\"><figure id=\"fig-{}\">\n{}</figure></div>\n",
            escape(&plot.name),
            plot.svg
        );
    }
    if plots.is_empty() {
        out.push_str("<p class=\"note\">No latency distribution was recorded; figure skipped.</p>\n");
    }
    section(&mut out, "The workload", "What every pair replayed.");
    let facts: Vec<RankedRow> =
        page.workload.iter().map(|(k, v)| RankedRow { cells: vec![k.clone(), v.clone()], tied: false }).collect();
    table(&mut out, &[], &facts);
    section(&mut out, "Lower bound", &page.bound);
    if !page.skipped.is_empty() {
        section(&mut out, "Pairs left out", "Registered pairs that did not run, with the reason.");
        list(&mut out, &page.skipped);
    }
    let _ = write!(
        out,
        "<details><summary>The spec of every run</summary>\n<pre>{}</pre>\n</details>\n</section>\n</main>\n\
         <footer>Made by tailor compare {}.</footer>\n</body>\n</html>\n",
        escape(&page.spec),
        env!("CARGO_PKG_VERSION")
    );
    Report { html: out, plots }
}

/// The tail figure of the top pairs, `None` when none recorded a distribution.
fn tail_plot(page: &ComparePage) -> Option<Plot> {
    let strategies: Vec<Strategy> = page.top.iter().map(|(s, _)| s.clone()).collect();
    let styles = Styles::new(&strategies);
    let lines: Vec<Line> = page
        .top
        .iter()
        .map(|(s, runs)| {
            let st = styles.get(s);
            Line { color: st.color.into(), dash: st.dash.map(str::to_string), cdf: pool_cdf(runs, |r| &r.latency_cdf) }
        })
        .collect();
    let legend = styles.line_legend(&strategies);
    let title = format!("Read latency tail, top {} pairs", strategies.len());
    let name = format!("compare-{}", slug("latency tail"));
    tail_figure(&name, &title, "read latency (ms)", &legend, &lines).map(|svg| Plot { name, title, svg })
}

fn section(out: &mut String, title: &str, caption: &str) {
    let _ = write!(
        out,
        "<h3 id=\"compare--{}\">{}</h3>\n<p class=\"caption\">{}</p>\n",
        slug(title),
        escape(title),
        escape(caption)
    );
}

fn list(out: &mut String, items: &[String]) {
    if items.is_empty() {
        return;
    }
    out.push_str("<ul>\n");
    for item in items {
        let _ = writeln!(out, "<li>{}</li>", escape(item));
    }
    out.push_str("</ul>\n");
}

/// A table with the report's styles; numbers (cells starting with a digit) right-aligned.
fn table(out: &mut String, header: &[String], rows: &[RankedRow]) {
    out.push_str("<div class=\"table-wrap\"><table class=\"cmp\">\n");
    if !header.is_empty() {
        out.push_str("<thead><tr>");
        for h in header {
            let _ = write!(out, "<th>{}</th>", escape(h));
        }
        out.push_str("</tr></thead>\n");
    }
    out.push_str("<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in &row.cells {
            let numeric = cell.starts_with(|c: char| c.is_ascii_digit() || c == '-');
            let class = match (row.tied, numeric) {
                (true, true) => " class=\"num best\"",
                (true, false) => " class=\"best\"",
                (false, true) => " class=\"num\"",
                (false, false) => "",
            };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::tests::run;
    use crate::svg::balanced;

    #[test]
    fn the_page_holds_the_recommendation_ranking_figure_and_workload() {
        let a = run("c3", "fcfs", &[], 1, 1.0);
        let b = run("lor", "fcfs", &[], 1, 2.0);
        let page = ComparePage {
            title: "Which strategy for t.csv".into(),
            subtitle: "5 servers".into(),
            recommendation: "c3 with fcfs: p99 1.0 ms [0.9, 1.1], ahead of <every> other pair".into(),
            caveats: vec!["simulated".into()],
            header: vec!["rank".into(), "pair".into(), "p99 ms".into()],
            rows: vec![
                RankedRow { cells: vec!["1".into(), "c3/fcfs".into(), "1.00".into()], tied: true },
                RankedRow { cells: vec!["2".into(), "lor/fcfs".into(), "2.00".into()], tied: false },
            ],
            top: vec![(Strategy::of(&a), vec![&a]), (Strategy::of(&b), vec![&b])],
            workload: vec![("requests".into(), "985".into())],
            bound: "not asked".into(),
            skipped: vec!["heron/fcfs: no sizes".into()],
            spec: "name = \"x\"".into(),
        };
        let report = render(&page);
        balanced(&report.html).unwrap();
        assert!(report.html.contains("ahead of &lt;every&gt; other pair"));
        assert!(
            report.html.contains("<td class=\"num best\">1.00</td>")
                && report.html.contains("<td class=\"num\">2.00</td>")
        );
        assert!(report.html.contains("<li>heron/fcfs: no sizes</li>"));
        assert!(!report.html.contains("<script"));
        assert_eq!(report.plots.len(), 1);
        assert_eq!(report.plots[0].svg.matches("<polyline").count(), 2);
    }
}
