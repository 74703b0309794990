//! The reproduce table (terminal) and page (HTML): claim, the paper's value, Tailor's value
//! with its spread over seeds, verdict.

use super::claims::{Aggregate, Claim, Kind, Metric, NotReproduced, Verdict, STABLE_SHARE};
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
        (Kind::Share, p) => {
            let op = if c.strict { ">" } else { ">=" };
            format!("{op} {:.0} % within {}", p.unwrap_or(0.0) * 100.0, c.threshold.unwrap_or(0.0))
        }
        (Kind::AtMost, p) => format!("{} (± {:.0} %)", p.unwrap_or(0.0), c.tolerance.unwrap_or(0.0) * 100.0),
        (Kind::Steadier, _) => "IQR < 1x".into(),
    }
}

/// What the compared figure means, in words: the metric and how a seed's runs became one value.
pub fn meaning(c: &Claim) -> String {
    let metric = match c.metric {
        Metric::P50 | Metric::P95 | Metric::P99 | Metric::P999 | Metric::Max | Metric::Mean => {
            format!("read latency {}, ms", c.metric)
        }
        Metric::Throughput => "requests completed per second".into(),
        Metric::Offered => "requests offered per second".into(),
        Metric::StretchP99 => "99th percentile of the read stretch (latency over processing time)".into(),
        Metric::BoundRatio => "max weighted flow over the LP lower bound of the run's first requests".into(),
        Metric::HedgeRatio => "hedged copies sent per read".into(),
        Metric::SmallOverLarge => "mean latency of small reads over that of large reads".into(),
        Metric::MgetP99 => "multi-get latency p99 (release to last key's answer), ms".into(),
        Metric::MgetP999 => "multi-get latency p99.9 (release to last key's answer), ms".into(),
    };
    let per_seed = match c.aggregate {
        Aggregate::One => String::new(),
        Aggregate::Max => "; per seed, the largest over the swept points".into(),
        Aggregate::MaxStable => format!(
            "; per seed, the largest over the swept points served stably (throughput at least {:.0} % of offered)",
            STABLE_SHARE * 100.0
        ),
    };
    metric + &per_seed
}

/// "exact", or "approximate" (the reason is on the page).
fn fidelity_word(c: &Claim) -> &'static str {
    if c.setup_fidelity == "exact" {
        "exact"
    } else {
        "approximate"
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
        Kind::AtMost if n == 1 => format!("{:.3}", o.value),
        Kind::AtMost => format!("{:.3} [{:.3}-{:.3}]", o.value, o.min, o.max),
        Kind::Steadier => format!("IQR {:.2}x (a: {:.2}-{:.2})", o.value, o.min, o.max),
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
    let rows: Vec<[String; 6]> = judged
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
                fidelity_word(&j.claim).into(),
            ]
        })
        .collect();
    let head = ["claim", "compares", "paper", "tailor (median [min-max] over seeds)", "verdict", "setup"];
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

/// The verdicts counted in words ("30 hold, 3 sign only, 9 fail", each count between the two
/// halves of `mark`), and how many published statements are not reproduced.
pub fn summary(judged: &[Judged], not_reproduced: &[NotReproduced], mark: (&str, &str)) -> String {
    let count = |v: Verdict| judged.iter().filter(|j| j.verdict() == Some(v)).count();
    let (l, r) = mark;
    let mut text = format!(
        "{l}{}{r} hold, {l}{}{r} sign only, {l}{}{r} fail",
        count(Verdict::Holds),
        count(Verdict::SignOnly),
        count(Verdict::Fails)
    );
    if !not_reproduced.is_empty() {
        text += &format!(
            "; {} published statements not reproduced (models Tailor lacks; the page lists them)",
            not_reproduced.len()
        );
    }
    text
}

/// The self-contained HTML page: the judged claims, then the statements not reproduced.
pub fn html(judged: &[Judged], not_reproduced: &[NotReproduced], quick: bool) -> String {
    let mut body = format!(
        "<h1>Tailor reproduces its sources</h1>\n<p>{} claims{}: {}.</p>\n",
        judged.len(),
        if quick {
            " (<b>smoke run</b>, <code>--quick</code>: fewer requests and seeds than the full run, so noisier figures; a verdict may differ from the full run's)"
        } else {
            ""
        },
        summary(judged, not_reproduced, ("<b>", "</b>"))
    );
    body.push_str(RULE);
    body.push_str("<table>\n<tr><th>source</th><th>claim</th><th>compares</th><th>paper</th><th>Tailor</th><th>verdict</th><th>setup</th></tr>\n");
    for j in judged {
        body.push_str(&row(j));
    }
    body.push_str("</table>\n");
    body.push_str(&not_reproduced_list(not_reproduced));
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
    let trivial = j.outcome.as_ref().ok().and_then(|o| o.trivial_bounds).map(trivial_note).unwrap_or_default();
    let shown: String =
        j.shown.iter().map(|(k, v)| format!("<br><code>{} = {}</code>", escape(k), escape(v))).collect();
    let fidelity = match c.fidelity() {
        Ok(Some(why)) => format!("approximate<br><small>{}</small>", escape(why)),
        _ => "exact".into(),
    };
    format!(
        "<tr class=\"{class}\"><td>{}<br><small>{}</small></td><td>{}{note}{trivial}<details><summary>{}</summary>{}</details></td>\
         <td>{}<br><small>{}</small>{shown}</td><td>{}</td><td>{}</td><td class=\"v\">{}</td><td>{fidelity}</td></tr>\n",
        escape(&c.paper),
        escape(&c.source),
        escape(&c.text),
        escape(&c.id),
        escape(&seeds),
        escape(&sides(c)),
        escape(&meaning(c)),
        escape(&paper_figure(c)),
        escape(&ours),
        escape(&verdict_text(j))
    )
}

/// A bound claim's warning when the LP bound is trivial in some runs.
fn trivial_note((trivial, of): (usize, usize)) -> String {
    if trivial == 0 {
        return format!("<div class=\"note\">The lower bound is informative in all {of} runs (above the largest request's own weighted processing time).</div>");
    }
    format!(
        "<div class=\"note\"><b>Trivial bound in {trivial} of {of} runs</b>: there the LP bound equals the largest single \
         request's own weighted processing time, so the ratio measures how long that request waited, not how far the \
         schedule is from the optimum.</div>"
    )
}

/// The published statements Tailor cannot check, with the model each needs.
fn not_reproduced_list(items: &[NotReproduced]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h2>Not reproduced here ({})</h2>\n<p class=\"rule\">Published statements the simulator cannot express: \
         each needs a model Tailor lacks.</p>\n<table>\n<tr><th>source</th><th>statement</th><th>why not</th></tr>\n",
        items.len()
    );
    for n in items {
        out.push_str(&format!(
            "<tr><td>{}<br><small>{}</small></td><td>{}</td><td>{}</td></tr>\n",
            escape(&n.paper),
            escape(&n.source),
            escape(&n.text),
            escape(&n.reason)
        ));
    }
    out + "</table>\n"
}

const RULE: &str = "<p class=\"rule\">Each claim runs its source's setup (a built-in preset) in the simulator. \
Both sides of a comparison see the same requests on each seed, so the figure is their ratio seed by seed; \
the verdict reads the median over seeds. Under each comparison, what its figure means. A claim with a published effect <b>holds</b> when Tailor shows at \
least half of it, is <b>sign only</b> when only the direction holds, and <b>fails</b> otherwise. \
An <i>at most</i> claim holds when the median is within the stated tolerance of the published value or below; \
a <i>share</i> claim that says \"more than\" needs strictly more. The last column says whether the published setup \
could be expressed exactly in the simulator, and if not, why. The claims and the verdicts the project stands by are in <code>crates/tailor/claims.toml</code>.</p>\n";

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}\
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4em .6em;text-align:left;vertical-align:top}\
tr.holds td.v{color:#1a7f37;font-weight:600}tr.sign td.v{color:#9a6700;font-weight:600}tr.fails td.v{color:#cf222e;font-weight:600}\
.note{margin-top:.3em;font-size:.9em;color:#555}.rule{color:#444}details{font-size:.85em;color:#666}";
