//! Lower-bound ratios (max weighted flow / LP bound) as a strip plot: one column per strategy,
//! one dot per run, a bar at the median.

use super::{fill, Ctx, Plot, Section};
use crate::chart::{Figure, WIDTH};
use crate::scale::{format_value, Band};
use crate::svg::Stroke;

/// One run's ratio: (point index, seed, ratio).
type RunRatio = (usize, u64, f64);

/// The bound-ratio section; skipped with a note when no run carries a bound.
pub fn section(ctx: &Ctx) -> Section {
    let mut section = Section::new(
        "Distance from the lower bound",
        "Each dot is one run (every seed and swept point): its max weighted flow divided by the LP lower \
         bound on the same requests. 1 is optimal; the bar marks the median.",
    );
    let view = ctx.view;
    let columns: Vec<(usize, Vec<RunRatio>)> = (0..view.strategies.len())
        .map(|s| {
            let vals = (0..view.points.len())
                .flat_map(|p| view.runs(s, p).iter().map(move |r| (p, r)))
                .filter_map(|(p, r)| r.bound.map(|b| (p, r.seed, b.ratio)))
                .filter(|(_, _, v)| v.is_finite() && *v > 0.0)
                .collect::<Vec<_>>();
            (s, vals)
        })
        .filter(|(_, v)| !v.is_empty())
        .collect();
    if columns.is_empty() {
        section
            .notes
            .push("No run carries a lower bound (add one with `tailor sim --bound` or `bound.enabled = true`).".into());
        return section;
    }
    let values: Vec<f64> = columns.iter().flat_map(|(_, v)| v.iter().map(|x| x.2)).collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min).min(1.0);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let name = format!("{}-bound-ratio", ctx.id);
    let title = "Max weighted flow / lower bound".to_string();
    let strategies: Vec<_> = columns.iter().map(|(s, _)| view.strategies[*s].clone()).collect();
    let names: Vec<String> = strategies.iter().map(|s| ctx.styles.label(s)).collect();
    let mut fig = Figure::for_categories(&name, &title, &ctx.styles.swatch_legend(&strategies), WIDTH, &names);
    let y = if hi / lo > 20.0 { fig.y_log(lo, hi) } else { fig.y_linear(lo.min(1.0), hi + (hi - lo.min(1.0)) * 0.08) };
    let a = fig.area();
    let band = Band::new(columns.len(), a.left, a.right(), 0.3);
    let one = y.map(1.0);
    fig.svg().line(a.left, one, a.right(), one, &Stroke::dashed("#999999", 1.0, "4 3"));
    for (i, (s, vals)) in columns.iter().enumerate() {
        let strategy = &view.strategies[*s];
        let st = ctx.styles.get(strategy);
        let mut sorted: Vec<f64> = vals.iter().map(|x| x.2).collect();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        let my = y.map(median);
        fig.svg().line(band.start(i), my, band.start(i) + band.width(), my, &Stroke::solid("#444444", 2.0));
        for (j, (p, seed, v)) in vals.iter().enumerate() {
            // deterministic jitter so overlapping dots stay visible
            let jitter = ((j * 37 % 17) as f64 / 16.0 - 0.5) * band.width() * 0.6;
            let tip = format!(
                "{} at {}, seed {seed}: ratio {}",
                ctx.styles.label(strategy),
                view.point_label(*p),
                format_value(*v)
            );
            fig.svg().circle(band.center(i) + jitter, y.map(*v), 4.5, &fill(st), Some(&tip));
        }
    }
    let labels: Vec<(f64, String)> = columns
        .iter()
        .enumerate()
        .map(|(i, (s, _))| (band.center(i), ctx.styles.label(&view.strategies[*s])))
        .collect();
    fig.x_categories(&labels, "strategy");
    fig.y_axis(&y, "ratio to lower bound");
    section.plots.push(Plot { name, title, svg: fig.finish() });
    section
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{tests::results, View};
    use crate::plots::test_support::{check_svg, styles};
    use tailor_core::results::{BoundRatio, Weighting};

    #[test]
    fn dots_for_runs_with_a_bound() {
        let mut r = results("sim");
        for (i, run) in r.runs.iter_mut().enumerate().filter(|(_, run)| run.selector == "lor") {
            run.bound = Some(BoundRatio {
                weighting: Weighting::Flow,
                requests: 100,
                max_weighted_flow: 10.0,
                bound: 5.0,
                ratio: 1.5 + i as f64 / 10.0,
                solve_seconds: 0.1,
            });
        }
        let view = View::new(&r);
        let styles = styles(&view);
        let s = section(&Ctx { id: "sim".into(), view: &view, styles: &styles });
        assert_eq!(s.plots.len(), 1);
        let svg = &s.plots[0].svg;
        check_svg(svg, &["lor", "ratio to lower bound", "seed 2: ratio"]);
        assert_eq!(svg.matches("<circle").count(), 4);
        assert!(!svg.contains(">c3<"), "strategies without a bound are left out");
    }

    #[test]
    fn no_bound_no_plot() {
        let r = results("sim");
        let view = View::new(&r);
        let styles = styles(&view);
        let s = section(&Ctx { id: "sim".into(), view: &view, styles: &styles });
        assert!(s.plots.is_empty() && s.notes.len() == 1);
    }
}
