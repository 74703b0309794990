//! The page: header, one part per results file (spec, table, figures), the overlays, and CSS.

use crate::escape::{escape, slug};
use crate::plots::Section;
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
    /// Banners above the table, e.g. one per invalid live run (plain text).
    pub banners: Vec<String>,
    /// The comparison table's HTML (already escaped).
    pub table: String,
    /// The figure sections.
    pub sections: Vec<Section>,
}

const CSS: &str = r#"
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
        write_banners(&mut out, &part.banners);
        let _ =
            write!(out, "<details><summary>Experiment spec</summary>\n<pre>{}</pre>\n</details>\n", escape(&part.spec));
        let _ = write!(
            out,
            "<h3 id=\"{}--comparison\">Comparison</h3>\n<p class=\"caption\">Median over seeds, with the \
             lowest–highest seed beneath when they differ; the best median of each column within a swept point \
             is highlighted (lowest, or highest for throughput). Errors and timeouts are counts per run.</p>\n",
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
