//! The reproduce table (terminal) and page (HTML): claim, the paper's value, Tailor's value
//! with its spread over seeds, verdict.

use super::claims::{Claim, Kind, Verdict};
use super::verdict::Outcome;
use super::Judged;
use tailor_report::escape::escape;

/// What the paper states, as a short figure.
pub fn paper_figure(c: &Claim) -> String {
    match (c.kind, c.published) {
        (Kind::Lower | Kind::Higher, Some(p)) => format!("{p:.2}x"),
        (Kind::Lower, None) => "< 1x".into(),
        (Kind::Higher, None) => "> 1x".into(),
        (Kind::Similar, _) => format!("1x ± {:.0} %", c.tolerance.unwrap_or(0.0) * 100.0),
        (Kind::Share, p) => format!(">= {:.0} % within {}", p.unwrap_or(0.0) * 100.0, c.threshold.unwrap_or(0.0)),
    }
}

/// Tailor's figure: the median ratio with its range over seeds, or the share of runs.
pub fn tailor_figure(c: &Claim, o: &Outcome) -> String {
    let n = o.per_seed.len();
    match c.kind {
        Kind::Share => {
            let within = (o.value * n as f64).round() as usize;
            format!("{:.0} % ({within}/{n})", o.value * 100.0)
        }
        _ if n == 1 => format!("{:.2}x", o.value),
        _ => format!("{:.2}x [{:.2}-{:.2}]", o.value, o.min, o.max),
    }
}

/// `a vs b` of a claim, in words.
fn sides(c: &Claim) -> String {
    let side = |s: &super::claims::Side| {
        let mut text = s.selector.clone();
        if let Some(l) = &s.local {
            text = format!("{text}+{l}");
        }
        match &s.setup {
            Some(setup) => format!("{text}@{setup}"),
            None => text,
        }
    };
    match &c.b {
        Some(b) => format!("{} / {} {}", side(&c.a), side(b), c.metric),
        None => format!("{} {}", side(&c.a), c.metric),
    }
}

/// The verdict as shown, with a mark when it differs from the expected one.
fn verdict_text(j: &Judged) -> String {
    match j.verdict() {
        None => "ERROR".into(),
        Some(v) if v < j.claim.expected => format!("{v} (REGRESSED from {})", j.claim.expected),
        Some(v) if v > j.claim.expected => format!("{v} (better than the claimed {})", j.claim.expected),
        Some(v) => v.to_string(),
    }
}

/// The plain-text table printed by `tailor reproduce`.
pub fn table(judged: &[Judged]) -> String {
    let rows: Vec<[String; 5]> = judged
        .iter()
        .map(|j| {
            let ours = match &j.outcome {
                Ok(o) => tailor_figure(&j.claim, o),
                Err(e) => e.clone(),
            };
            [
                format!("{} {}", j.claim.paper, j.claim.id),
                sides(&j.claim),
                paper_figure(&j.claim),
                ours,
                verdict_text(j),
            ]
        })
        .collect();
    let head = ["claim", "compares", "paper", "tailor (median [min-max] over seeds)", "verdict"];
    let mut widths = head.map(|h| h.chars().count());
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        padded.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(&head.map(String::from));
    for r in &rows {
        out.push_str(&line(r));
    }
    out
}

/// The self-contained HTML page.
pub fn html(judged: &[Judged], quick: bool) -> String {
    let count = |v: Verdict| judged.iter().filter(|j| j.verdict() == Some(v)).count();
    let mut body = format!(
        "<h1>Tailor reproduces its sources</h1>\n<p>{} claims{}: <b>{}</b> hold, <b>{}</b> sign only, <b>{}</b> fail.</p>\n",
        judged.len(),
        if quick {
            " (<b>smoke run</b>, <code>--quick</code>: fewer requests and seeds than the full run, so noisier figures; a verdict may differ from the full run's)"
        } else {
            ""
        },
        count(Verdict::Holds),
        count(Verdict::SignOnly),
        count(Verdict::Fails)
    );
    body.push_str(RULE);
    body.push_str("<table>\n<tr><th>source</th><th>claim</th><th>compares</th><th>paper</th><th>Tailor</th><th>verdict</th></tr>\n");
    for j in judged {
        body.push_str(&row(j));
    }
    body.push_str("</table>\n");
    format!("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tailor reproduce</title>\n<style>{STYLE}</style></head>\n<body>\n{body}</body></html>\n")
}

fn row(j: &Judged) -> String {
    let c = &j.claim;
    let (ours, seeds) = match &j.outcome {
        Ok(o) => {
            let per: Vec<String> = o.per_seed.iter().map(|(s, v)| format!("seed {s}: {v:.3}")).collect();
            (tailor_figure(c, o), per.join(", "))
        }
        Err(e) => ("not judged".to_string(), e.clone()),
    };
    let class = match j.verdict() {
        Some(Verdict::Holds) => "holds",
        Some(Verdict::SignOnly) => "sign",
        _ => "fails",
    };
    let note = c.note.as_deref().map(|n| format!("<div class=\"note\">{}</div>", escape(n))).unwrap_or_default();
    format!(
        "<tr class=\"{class}\"><td>{}<br><small>{}</small></td><td>{}{note}<details><summary>{}</summary>{}</details></td>\
         <td>{}</td><td>{}</td><td>{}</td><td class=\"v\">{}</td></tr>\n",
        escape(&c.paper),
        escape(&c.source),
        escape(&c.text),
        escape(&c.id),
        escape(&seeds),
        escape(&sides(c)),
        escape(&paper_figure(c)),
        escape(&ours),
        escape(&verdict_text(j))
    )
}

const RULE: &str = "<p class=\"rule\">Each claim runs its source's setup (a built-in preset) in the simulator. \
Both sides of a comparison see the same requests on each seed, so the figure is their ratio seed by seed; \
the verdict reads the median over seeds. A claim with a published effect <b>holds</b> when Tailor shows at \
least half of it, is <b>sign only</b> when only the direction holds, and <b>fails</b> otherwise. \
The claims and the verdicts the project stands by are in <code>crates/tailor/claims.toml</code>.</p>\n";

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}\
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4em .6em;text-align:left;vertical-align:top}\
tr.holds td.v{color:#1a7f37;font-weight:600}tr.sign td.v{color:#9a6700;font-weight:600}tr.fails td.v{color:#cf222e;font-weight:600}\
.note{margin-top:.3em;font-size:.9em;color:#555}.rule{color:#444}details{font-size:.85em;color:#666}";
