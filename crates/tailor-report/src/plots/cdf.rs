//! Read latency tails per strategy, one figure per swept point (small multiples).

use super::tail::{tail_figure, Line};
use super::{Ctx, Section};
use crate::data::pool_cdf;
use crate::escape::slug;

/// The latency tail section: for each swept point, 1 − F of read latency for every strategy,
/// seeds pooled (weighted by requests).
pub fn section(ctx: &Ctx) -> Section {
    distribution_section(
        ctx,
        "Read latency tail",
        "Fraction of reads slower than x, both axes logarithmic: lower and further left is better; \
         where a line crosses the p99 mark is its 99th percentile. Seeds are pooled.",
        "latency",
        "read latency (ms)",
        |r| &r.latency_cdf,
    )
}

/// Shared by the latency and stretch sections: one tail figure per swept point.
pub fn distribution_section(
    ctx: &Ctx,
    title: &str,
    caption: &str,
    kind: &str,
    x_label: &str,
    get: fn(&tailor_core::results::RunResult) -> &[(f64, f64)],
) -> Section {
    let mut section = Section::new(title, caption);
    let view = ctx.view;
    for p in 0..view.points.len() {
        let present: Vec<usize> = (0..view.strategies.len()).filter(|&s| !view.runs(s, p).is_empty()).collect();
        let strategies: Vec<_> = present.iter().map(|&s| view.strategies[s].clone()).collect();
        let lines: Vec<Line> = present
            .iter()
            .map(|&s| {
                let st = ctx.styles.get(&view.strategies[s]);
                Line { color: st.color.into(), dash: st.dash.map(str::to_string), cdf: pool_cdf(view.runs(s, p), get) }
            })
            .collect();
        let point = view.point_label(p);
        let name = format!("{}-{kind}-{}", ctx.id, slug(&point));
        let fig_title = format!("{title} — {point}");
        match tail_figure(&name, &fig_title, x_label, &ctx.styles.line_legend(&strategies), &lines) {
            Some(svg) => section.plots.push(super::Plot { name, title: fig_title, svg }),
            None => section.notes.push(format!("{point}: no {kind} distribution recorded; figure skipped.")),
        }
    }
    if view.points.is_empty() {
        section.notes.push("No runs in this results file.".into());
    }
    section
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{tests::results, View};
    use crate::plots::test_support::{check_svg, styles};

    #[test]
    fn one_figure_per_point_with_every_strategy() {
        let r = results("sim");
        let view = View::new(&r);
        let styles = styles(&view);
        let s = section(&Ctx { id: "sim".into(), view: &view, styles: &styles });
        assert_eq!(s.plots.len(), 2);
        assert_eq!(s.plots[0].name, "sim-latency-interval-ms-100");
        for p in &s.plots {
            check_svg(&p.svg, &["c3", "lor", "read latency (ms)"]);
            assert_eq!(p.svg.matches("<polyline").count(), 2);
        }
        assert!(s.notes.is_empty());
    }

    #[test]
    fn empty_cdfs_become_notes() {
        let mut r = results("sim");
        for run in &mut r.runs {
            run.latency_cdf.clear();
        }
        let view = View::new(&r);
        let styles = styles(&view);
        let s = section(&Ctx { id: "sim".into(), view: &view, styles: &styles });
        assert!(s.plots.is_empty());
        assert_eq!(s.notes.len(), 2);
    }
}
