//! Latency percentiles against the swept parameter: one panel per percentile, one line per strategy.

use super::{fill, Ctx, Plot, Section};
use crate::chart::{Figure, WIDTH};
use crate::data::{spread, Spread};
use crate::scale::{format_value, Band, Scale};
use crate::svg::{Stroke, Svg};
use tailor_core::results::RunResult;

/// One dot of a line: swept point index, median, spread across seeds.
type Dot = (usize, f64, Spread);

/// The percentiles drawn, with their labels and name suffixes.
/// A percentile panel: label, file-name suffix, getter.
type Panel = (&'static str, &'static str, fn(&RunResult) -> f64);

const PANELS: [Panel; 4] = [
    ("p50", "p50", |r| r.read_latency_ms.p50),
    ("p95", "p95", |r| r.read_latency_ms.p95),
    ("p99", "p99", |r| r.read_latency_ms.p99),
    ("p99.9", "p999", |r| r.read_latency_ms.p999),
];

/// The percentile-versus-sweep section (seed means); skipped with a note when nothing was swept.
pub fn section(ctx: &Ctx) -> Section {
    let mut section = Section::new(
        "Percentiles versus the swept parameter",
        "Read latency percentiles (median over seeds, bars from the lowest to the highest seed) at each swept \
         point; one panel per percentile, logarithmic y when values span more than a decade.",
    );
    let view = ctx.view;
    if view.points.len() < 2 {
        section.notes.push("Only one parameter point: nothing swept to plot against (see the table).".into());
        return section;
    }
    let numeric = view.numeric_sweep();
    let x_title = match &numeric {
        Some((name, _)) => name.clone(),
        None => "swept point".to_string(),
    };
    for (label, suffix, get) in PANELS {
        // (strategy, [(point, median, spread)])
        let series: Vec<(usize, Vec<Dot>)> = (0..view.strategies.len())
            .map(|s| {
                let vals = (0..view.points.len())
                    .filter(|&p| !view.runs(s, p).is_empty())
                    .map(|p| {
                        let sp = spread(view.runs(s, p), get);
                        (p, sp.median, sp)
                    })
                    .filter(|(_, v, _)| v.is_finite())
                    .collect();
                (s, vals)
            })
            .filter(|(_, v): &(usize, Vec<Dot>)| !v.is_empty())
            .collect();
        let values: Vec<f64> = series.iter().flat_map(|(_, v)| v.iter().flat_map(|p| [p.2.min, p.2.max])).collect();
        if values.is_empty() {
            section.notes.push(format!("{label}: no values."));
            continue;
        }
        let strategies: Vec<_> = series.iter().map(|(s, _)| view.strategies[*s].clone()).collect();
        let name = format!("{}-{suffix}-vs-sweep", ctx.id);
        let title = format!("{label} read latency vs {x_title}");
        let legend = ctx.styles.line_legend(&strategies);
        let mut fig = match &numeric {
            Some(_) => Figure::new(&name, &title, &legend),
            None => {
                let names: Vec<String> = (0..view.points.len()).map(|p| view.point_label(p)).collect();
                Figure::for_categories(&name, &title, &legend, WIDTH, &names)
            }
        };
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(0.0, f64::max);
        let y = if lo > 0.0 && hi / lo > 10.0 {
            // a little headroom rather than whole decades, which would squash the lines
            Scale::log(lo / 1.25, hi * 1.25, fig.area().bottom(), fig.area().top)
        } else {
            fig.y_linear(0.0, hi)
        };
        let a = fig.area();
        // the x position of each point: numeric value, or evenly spaced categories
        let xpos: Vec<f64> = match &numeric {
            Some((_, vals)) => {
                let (vlo, vhi) =
                    vals.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(*v), h.max(*v)));
                let pad = (vhi - vlo) * 0.04;
                let x = if vlo > 0.0 && vhi / vlo >= 20.0 {
                    Scale::log(vlo / 1.2, vhi * 1.2, a.left, a.right())
                } else {
                    Scale::linear(vlo - pad, vhi + pad, a.left, a.right())
                };
                fig.x_axis(&x, &x_title);
                vals.iter().map(|v| x.map(*v)).collect()
            }
            None => {
                let band = Band::new(view.points.len(), a.left, a.right(), 0.0);
                let labels: Vec<(f64, String)> =
                    (0..view.points.len()).map(|p| (band.center(p), view.point_label(p))).collect();
                fig.x_categories(&labels, &x_title);
                labels.iter().map(|(x, _)| *x).collect()
            }
        };
        fig.y_axis(&y, &format!("{label} latency (ms)"));
        for (s, vals) in &series {
            let strategy = &view.strategies[*s];
            let st = ctx.styles.get(strategy);
            let placed: Vec<&Dot> = vals.iter().filter(|(_, v, _)| y.accepts(*v)).collect();
            let pts: Vec<(f64, f64)> = placed.iter().map(|(p, v, _)| (xpos[*p], y.map(*v))).collect();
            let stroke = Stroke { color: st.color.into(), width: 1.8, dash: st.dash.map(str::to_string) };
            fig.svg().polyline(&pts, &stroke, None);
            for ((p, v, sp), (px, py)) in placed.iter().zip(&pts) {
                if sp.n > 1 && sp.max > sp.min && y.accepts(sp.min) {
                    // strategies' bars at one point side by side, not on top of each other
                    let dodge = (*s as f64 - (view.strategies.len() as f64 - 1.0) / 2.0) * 2.5;
                    error_bar(fig.svg(), px + dodge, y.map(sp.min), y.map(sp.max), st.color);
                }
                let range = if sp.n > 1 {
                    format!(" (seeds {}–{})", format_value(sp.min), format_value(sp.max))
                } else {
                    String::new()
                };
                let tip = format!(
                    "{} at {}: {label} {} ms{range}",
                    ctx.styles.label(strategy),
                    view.point_label(*p),
                    format_value(*v)
                );
                fig.svg().circle(*px, *py, 3.0, &fill(st), Some(&tip));
            }
        }
        section.plots.push(Plot { name, title, svg: fig.finish() });
    }
    section
}

/// A vertical min–max bar with caps at `x`, from pixel row `y0` to `y1`.
fn error_bar(svg: &mut Svg, x: f64, y0: f64, y1: f64, color: &str) {
    let stroke = Stroke::solid(color, 1.2);
    svg.line(x, y0, x, y1, &stroke);
    svg.line(x - 3.5, y0, x + 3.5, y0, &stroke);
    svg.line(x - 3.5, y1, x + 3.5, y1, &stroke);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{tests::results, View};
    use crate::plots::test_support::{check_svg, styles};

    #[test]
    fn four_panels_with_a_line_per_strategy() {
        let r = results("sim");
        let view = View::new(&r);
        let styles = styles(&view);
        let s = section(&Ctx { id: "sim".into(), view: &view, styles: &styles });
        assert_eq!(s.plots.len(), 4);
        let names: Vec<&str> = s.plots.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["sim-p50-vs-sweep", "sim-p95-vs-sweep", "sim-p99-vs-sweep", "sim-p999-vs-sweep"]);
        for p in &s.plots {
            check_svg(&p.svg, &["c3", "lor", "interval_ms"]);
            assert_eq!(p.svg.matches("<polyline").count(), 2);
            assert_eq!(p.svg.matches("<circle").count(), 4);
        }
        // the p99 of c3 at interval 100 is the median of seeds 1 and 2: 4.6 * (1.1 + 1.2) / 2
        assert!(s.plots[2].svg.contains("c3 at interval_ms=100: p99 5.29 ms (seeds 5.06–5.52)"));
        // one min–max bar (3 lines) per strategy and point
        assert_eq!(s.plots[2].svg.matches("stroke-width=\"1.2\"").count(), 4 * 3);
    }

    #[test]
    fn categorical_sweeps_and_single_points() {
        let mut r = results("sim");
        for run in &mut r.runs {
            let v = run.params.values().next().cloned().unwrap_or_default();
            run.params.clear();
            run.params.insert("workload.mode".into(), format!("m<{v}>"));
        }
        let view = View::new(&r);
        let styles = styles(&view);
        let s = section(&Ctx { id: "sim".into(), view: &view, styles: &styles });
        check_svg(&s.plots[0].svg, &["mode=m&lt;100&gt;", "swept point"]);
        r.runs.retain(|run| run.params.values().any(|v| v == "m<100>"));
        let view = View::new(&r);
        let s = section(&Ctx { id: "sim".into(), view: &view, styles: &styles });
        assert!(s.plots.is_empty());
        assert_eq!(s.notes.len(), 1);
    }
}
