//! The page: header, one part per results file (spec, table, figures), the overlays, and CSS.

use crate::escape::{escape, slug};
use crate::plots::Section;
use crate::validity::Invalidity;
use std::fmt::Write;

/// One results file's part of the page.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Part {
    /// Anchor id.
    pub id: String,
    /// Heading.
    pub title: String,
    /// One-line facts (file, version, run counts).
    pub meta: String,
    /// The effective spec (TOML), shown collapsed.
    pub spec: String,
    /// The file's invalid live runs, summarised once above the table.
    pub invalidity: Option<Invalidity>,
    /// The comparison table's HTML (already escaped).
    pub table: String,
    /// The figure sections.
    pub sections: Vec<Section>,
}

pub(crate) const CSS: &str = r#"
:root { --ink: #222; --muted: #666; --line: #ddd; --accent: #0072B2; --best: #dff0d8; }
* { box-sizing: border-box; }
body { margin: 0; font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; color: var(--ink); background: #f6f6f4; line-height: 1.45; }
header { background: #fff; border-bottom: 1px solid var(--line); padding: 18px 32px 12px; }
header h1 { margin: 0 0 4px; font-size: 26px; }
header p { margin: 2px 0; color: var(--muted); font-size: 14px; }
nav { font-size: 14px; margin-top: 8px; }
nav a { color: var(--accent); margin-right: 14px; text-decoration: none; }
main { padding: 8px 32px 40px; max-width: 1800px; }
section.part { background: #fff; border: 1px solid var(--line); border-radius: 6px; margin: 20px 0; padding: 8px 24px 20px; }
h2 { font-size: 21px; margin: 12px 0 4px; }
h3 { font-size: 17px; margin: 26px 0 4px; border-top: 1px solid #eee; padding-top: 14px; }
p.meta, p.caption { color: var(--muted); font-size: 14px; margin: 4px 0 10px; max-width: 1100px; }
p.invalid { color: #fff; background: #b00020; border-radius: 3px; padding: 6px 12px; font-weight: bold; font-size: 14px; margin: 6px 0; }
details.invalid { margin: 6px 0; }
details.invalid > summary { color: #fff; background: #b00020; border-radius: 3px; padding: 4px 12px; font-weight: bold; }
details.invalid p.invalid { color: #b00020; background: none; font-weight: normal; font-size: 13px; padding: 0 12px; margin: 2px 0; }
p.note { color: #8a5300; background: #fff7e6; border-left: 3px solid #E69F00; padding: 4px 10px; font-size: 14px; margin: 6px 0; }
details { margin: 8px 0 4px; }
summary { cursor: pointer; color: var(--accent); font-size: 14px; }
pre { background: #f7f7f7; border: 1px solid #eee; padding: 10px 14px; font-size: 12px; max-height: 480px; overflow: auto; }
.table-wrap { overflow-x: auto; }
table.cmp { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
table.cmp th { background: #f0f0f0; position: sticky; top: 0; text-align: left; padding: 5px 10px; border-bottom: 2px solid #ccc; white-space: nowrap; }
table.cmp td { padding: 3px 10px; border-bottom: 1px solid #eee; white-space: nowrap; }
table.cmp .num { text-align: right; font-variant-numeric: tabular-nums; }
table.cmp tr.group td { border-top: 2px solid #ccc; }
table.cmp td.best { background: var(--best); font-weight: bold; }
table.cmp tr.invalid td { color: #999; background: #f4f4f4; }
table.cmp tr.invalid td.num { text-decoration: line-through; }
table.cmp td.verdict.bad { color: #b00020; font-weight: bold; }
table.cmp span.range { display: block; font-size: 10px; color: var(--muted); font-weight: normal; }
table.cmp tbody tr:hover td { background: #f3f8fc; }
.grid { display: flex; flex-wrap: wrap; gap: 14px; }
figure { margin: 0; background: #fff; border: 1px solid #eee; border-radius: 4px; padding: 4px; }
figure svg { display: block; max-width: 100%; height: auto; }
figcaption { display: none; }
footer { color: var(--muted); font-size: 12px; padding: 0 32px 24px; }
"#;

/// The whole page as one self-contained HTML document (inline CSS and SVG, no scripts).
pub fn page(title: &str, subtitle: &str, parts: &[Part], extra: &[(String, Section)]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{t}</title>\n\
         <style>{CSS}</style>\n</head>\n<body>\n<header>\n<h1>{t}</h1>\n<p>{s}</p>\n<nav>",
        t = escape(title),
        s = escape(subtitle)
    );
    for part in parts {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", escape(&part.id), escape(&part.title));
    }
    for (heading, _) in extra {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", slug(heading), escape(heading));
    }
    out.push_str("</nav>\n</header>\n<main>\n");
    for part in parts {
        let _ = write!(
            out,
            "<section class=\"part\" id=\"{}\">\n<h2>{}</h2>\n<p class=\"meta\">{}</p>\n",
            escape(&part.id),
            escape(&part.title),
            escape(&part.meta)
        );
        write_invalidity(&mut out, part.invalidity.as_ref());
        let _ =
            write!(out, "<details><summary>Experiment spec</summary>\n<pre>{}</pre>\n</details>\n", escape(&part.spec));
        let _ = write!(
            out,
            "<h3 id=\"{}--comparison\">Comparison</h3>\n<p class=\"caption\">Median over seeds, with the \
             lowest–highest seed beneath when they differ; the best median of each column within a swept point \
             is highlighted among valid rows (lowest, or highest for throughput); a row holding an INVALID live run \
             is greyed and never ranked. Errors and timeouts are counts per run.</p>\n",
            escape(&part.id)
        );
        out.push_str(&part.table);
        for section in &part.sections {
            write_section(&mut out, &part.id, section);
        }
        out.push_str("</section>\n");
    }
    for (heading, section) in extra {
        let _ = write!(out, "<section class=\"part\" id=\"{}\">\n<h2>{}</h2>\n", slug(heading), escape(heading));
        write_section(&mut out, &slug(heading), section);
        out.push_str("</section>\n");
    }
    let _ = write!(
        out,
        "</main>\n<footer>Made by tailor report {}. Hover over bars and dots for values.</footer>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    out
}

fn write_banners(out: &mut String, banners: &[String]) {
    for banner in banners {
        let _ = writeln!(out, "<p class=\"invalid\">{}</p>", escape(banner));
    }
}

/// One compact line for a file's invalid live runs ("3 of 8 live runs INVALID"), each run and its
/// reasons collapsed beneath it.
fn write_invalidity(out: &mut String, invalidity: Option<&Invalidity>) {
    let Some(inv) = invalidity else { return };
    let _ = writeln!(
        out,
        "<details class=\"invalid\"><summary>{}: their table rows say INVALID and their figures carry a red \
         band (the runs and reasons)</summary>",
        escape(&inv.headline())
    );
    write_banners(out, &inv.runs);
    out.push_str("</details>\n");
}

/// A section under its heading; the heading's id (`<part>--<title slug>`) lets a screenshot
/// check find every section of every part.
fn write_section(out: &mut String, part: &str, section: &Section) {
    let _ = write!(
        out,
        "<h3 id=\"{}--{}\">{}</h3>\n<p class=\"caption\">{}</p>\n",
        escape(part),
        slug(&section.title),
        escape(&section.title),
        escape(&section.caption)
    );
    write_invalidity(out, section.invalidity.as_ref());
    write_banners(out, &section.warnings);
    for note in &section.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    if section.plots.is_empty() {
        return;
    }
    out.push_str("<div class=\"grid\">\n");
    for plot in &section.plots {
        let _ = write!(
            out,
            "<figure id=\"fig-{}\">\n{}<figcaption>{}</figcaption>\n</figure>\n",
            escape(&plot.name),
            plot.svg,
            escape(&plot.title)
        );
    }
    out.push_str("</div>\n");
}

#[cfg(test)]
mod tests {
    use crate::data::tests::{results, run};
    use crate::svg::balanced;
    use crate::{render, Source};
    use tailor_core::results::Results;

    fn source(results: Results) -> Source {
        let path = format!("/tmp/x/results-{}.json", results.engine).into();
        Source { path, results, timeseries: Vec::new() }
    }

    /// A live file, each run valid unless `bad(selector, seed)`, with a third strategy (rr) faster
    /// than the others.
    fn live(bad: impl Fn(&str, u64) -> bool) -> Source {
        let mut r = results("live");
        for interval in ["100", "500"] {
            for seed in [1, 2] {
                r.runs.push(run("rr", "fcfs", &[("cluster.fluctuation.interval_ms", interval)], seed, 0.5));
            }
        }
        for x in &mut r.runs {
            x.valid = Some(!bad(&x.selector, x.seed));
            if !x.is_valid() {
                x.invalid_reasons = vec!["3 timeouts after the warm-up".into()];
            }
        }
        source(r)
    }

    /// The live file's part of the page.
    fn live_part(html: &str) -> &str {
        let start = html.find("<section class=\"part\" id=\"synthetic-live\">").unwrap();
        &html[start..start + html[start..].find("</section>").unwrap()]
    }

    #[test]
    fn a_page_whose_live_runs_are_all_invalid_crowns_nothing_and_summarises_once() {
        let report = render(&[source(results("sim")), live(|_, _| true)], None);
        let html = &report.html;
        balanced(html).unwrap();
        let part = live_part(html);
        assert!(part.contains("<th>valid</th>") && part.contains(">INVALID</td>"));
        assert!(!part.contains("num best"), "no best among invalid rows");
        assert!(part.contains("<p class=\"note\">No best value is highlighted: every row holds an INVALID live run"));
        assert!(html.contains("num best"), "the simulated part still ranks its rows");
        // one compact summary in the part and one over the overlay, each run listed inside it
        assert_eq!(html.matches("<details class=\"invalid\"><summary>12 of 12 live runs INVALID").count(), 2);
        assert_eq!(part.matches("<details class=\"invalid\">").count(), 1);
        assert_eq!(html.matches("<p class=\"invalid\">live run invalid: 3 timeouts").count(), 24);
        for block in html.split("<details class=\"invalid\">").skip(1) {
            let inside = &block[..block.find("</details>").unwrap()];
            assert_eq!(inside.matches("<p class=\"invalid\">").count(), 12);
        }
        let outside: String =
            html.split("<details class=\"invalid\">").map(|b| b.split("</details>").last().unwrap()).collect();
        assert!(!outside.contains("<p class=\"invalid\">"), "no stacked banners outside the summaries");
        // every figure drawn from the live file carries the mark; the simulated ones do not
        for plot in &report.plots {
            let marked = plot.svg.contains(">INVALID runs included (");
            assert_eq!(marked, plot.name.contains("synthetic-live"), "{}", plot.name);
        }
    }

    #[test]
    fn a_page_with_mixed_validity_crowns_only_valid_rows() {
        // rr is fastest everywhere but its seed 2 is invalid
        let report = render(&[live(|sel, seed| sel == "rr" && seed == 2)], None);
        let part = live_part(&report.html);
        assert!(part.contains("<summary>2 of 12 live runs INVALID"));
        let rows: Vec<&str> = part.lines().filter(|l| l.starts_with("<tr") && l.contains("num best")).collect();
        assert_eq!(rows.len(), 2, "a best row per swept point");
        assert!(rows.iter().all(|l| l.contains("<td>c3</td>") && l.ends_with("<td class=\"verdict\">ok</td></tr>")));
        let rr: Vec<&str> = part.lines().filter(|l| l.contains("<td>rr</td>")).collect();
        assert!(rr
            .iter()
            .all(|l| l.contains("invalid\">") && !l.contains("num best") && l.contains("1 of 2 seeds invalid")));
        assert!(!part.contains("<p class=\"note\">No best"));
    }
}
