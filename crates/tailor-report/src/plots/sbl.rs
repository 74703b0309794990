//! Small-behind-large counts as grouped bars: one group per swept point, one bar per strategy.

use super::{fill, Ctx, Plot, Section};
use crate::chart::{Figure, WIDTH};
use crate::data::mean;
use crate::scale::{format_value, Band};

/// The small-behind-large section (seed means); skipped with a note when every count is zero.
/// `live` files get "not measured" instead: the live store does not count these waits, so a zero
/// there says nothing about the strategy.
pub fn section(ctx: &Ctx, live: bool) -> Section {
    let mut section = Section::new(
        "Small reads stuck behind large ones",
        "Reads of small values that waited in a queue behind a large one (mean over seeds): \
         the head-of-line blocking that size-aware strategies try to avoid. Lower is better.",
    );
    let view = ctx.view;
    let np = view.points.len();
    let ns = view.strategies.len();
    let mut values: Vec<Vec<Option<f64>>> = vec![vec![None; ns]; np];
    for (p, row) in values.iter_mut().enumerate() {
        for (s, cell) in row.iter_mut().enumerate() {
            let runs = view.runs(s, p);
            if !runs.is_empty() {
                *cell = Some(mean(runs, |r| r.small_behind_large as f64));
            }
        }
    }
    let max = values.iter().flatten().flatten().copied().fold(0.0, f64::max);
    if live && max <= 0.0 {
        section.notes.push("Not measured: live runs do not count small-behind-large waits.".into());
        return section;
    }
    if max <= 0.0 {
        section.notes.push("No small-behind-large waits were counted in any run.".into());
        return section;
    }
    let name = format!("{}-small-behind-large", ctx.id);
    let title = "Small reads queued behind large ones".to_string();
    let width = WIDTH.max(90.0 + (np * ns) as f64 * 12.0);
    let names: Vec<String> = (0..np).map(|p| view.point_label(p)).collect();
    let mut fig = Figure::for_categories(&name, &title, &ctx.styles.swatch_legend(&view.strategies), width, &names);
    let a = fig.area();
    let y = fig.y_linear(0.0, max);
    let groups = Band::new(np, a.left, a.right(), 0.2);
    let bars = Band::new(ns, 0.0, groups.width(), 0.1);
    for (p, row) in values.iter().enumerate() {
        for (s, v) in row.iter().enumerate() {
            let Some(v) = v else { continue };
            let strategy = &view.strategies[s];
            let x0 = groups.start(p) + bars.start(s);
            let top = y.map(*v);
            let tip = format!("{} at {}: {}", ctx.styles.label(strategy), view.point_label(p), format_value(*v));
            fig.svg().rect(x0, top, bars.width(), a.bottom() - top, &fill(ctx.styles.get(strategy)), Some(&tip));
        }
    }
    let labels: Vec<(f64, String)> = (0..np).map(|p| (groups.center(p), view.point_label(p))).collect();
    fig.x_categories(&labels, "swept point");
    fig.y_axis(&y, "reads (count)");
    section.plots.push(Plot { name, title, svg: fig.finish() });
    section
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{tests::results, View};
    use crate::plots::test_support::{check_svg, styles};

    #[test]
    fn a_bar_per_strategy_and_point() {
        let r = results("sim");
        let view = View::new(&r);
        let styles = styles(&view);
        let s = section(&Ctx { id: "sim".into(), view: &view, styles: &styles }, false);
        assert_eq!(s.plots.len(), 1);
        let svg = &s.plots[0].svg;
        check_svg(svg, &["c3", "lor", "interval_ms=500", "reads (count)"]);
        assert_eq!(svg.matches("<title>").count(), 4);
        // lor at 500: scales 2*1.5*1.1=3.3 -> 33 and 2*1.5*1.2=3.6 -> 36, mean 34.5
        assert!(svg.contains("lor at interval_ms=500: 34.50"));
    }

    #[test]
    fn all_zero_counts_skip_the_plot() {
        let mut r = results("sim");
        for run in &mut r.runs {
            run.small_behind_large = 0;
        }
        let view = View::new(&r);
        let styles = styles(&view);
        let s = section(&Ctx { id: "sim".into(), view: &view, styles: &styles }, false);
        assert!(s.plots.is_empty());
        assert_eq!(s.notes, ["No small-behind-large waits were counted in any run."]);
        let s = section(&Ctx { id: "live".into(), view: &view, styles: &styles }, true);
        assert_eq!(s.notes, ["Not measured: live runs do not count small-behind-large waits."]);
    }
}
