//! The per-second view of live runs (`timeseries.csv`): throughput, errors and p99 over the run,
//! so a stall, a warm-up that never settles or a burst of timeouts shows where a summary hides it.

use super::{Ctx, Plot, Section};
use crate::chart::{Figure, LegendItem, Mark};
use crate::input::{Second, Series};
use crate::scale::Scale;
use crate::svg::Stroke;

/// A panel: file-name suffix, title, y-axis label, value of a second.
type Panel = (&'static str, &'static str, &'static str, fn(&Second) -> f64);

const PANELS: [Panel; 3] = [
    ("completed", "Completed reads and writes per second", "requests / s", |s| s.completed),
    ("p99", "p99 latency per second", "p99 latency (ms)", |s| s.p99_ms),
    ("errors", "Errors and timeouts per second", "requests / s", |s| s.errors),
];

/// The time-series section; a note when the file has no series (simulated, or CSVs not found).
pub fn section(ctx: &Ctx, series: &[Series]) -> Section {
    let mut section = Section::new(
        "Per second",
        "Each live run second by second (timeseries.csv): completed requests, the p99 of the requests \
         completed in that second, and errors. The grey band is the warm-up, not measured in the table.",
    );
    if series.is_empty() {
        section.notes.push("No per-second series: simulated runs write none, and no timeseries.csv was found.".into());
        return section;
    }
    let legend: Vec<LegendItem> = series
        .iter()
        .map(|s| {
            let st = ctx.styles.get(&s.strategy);
            LegendItem {
                label: format!("{} (seed {})", ctx.styles.label(&s.strategy), s.seed),
                color: st.color.into(),
                dash: st.dash.map(str::to_string),
                mark: Mark::Line,
            }
        })
        .collect();
    for (suffix, title, y_label, get) in PANELS {
        if suffix == "errors" && series.iter().all(|s| s.rows.iter().all(|r| get(r) <= 0.0)) {
            section.notes.push("No errors or timeouts in any second.".into());
            continue;
        }
        let name = format!("{}-per-second-{suffix}", ctx.id);
        section.plots.push(Plot {
            name: name.clone(),
            title: title.into(),
            svg: figure(&name, title, y_label, &legend, ctx, series, get),
        });
    }
    section
}

fn figure(
    name: &str,
    title: &str,
    y_label: &str,
    legend: &[LegendItem],
    ctx: &Ctx,
    series: &[Series],
    get: fn(&Second) -> f64,
) -> String {
    let rows = series.iter().flat_map(|s| s.rows.iter());
    let (mut t_max, mut v_lo, mut v_hi) = (1.0f64, f64::INFINITY, 0.0f64);
    for r in rows.clone() {
        t_max = t_max.max(r.second + 1.0);
        let v = get(r);
        if v.is_finite() {
            v_hi = v_hi.max(v);
            if v > 0.0 {
                v_lo = v_lo.min(v);
            }
        }
    }
    let mut fig = Figure::new(name, title, legend);
    let x = fig.x_linear(0.0, t_max);
    let log = v_lo.is_finite() && v_hi / v_lo > 30.0 && y_label.contains("latency");
    let a = fig.area();
    let y = if log { Scale::log_nice(v_lo, v_hi, a.bottom(), a.top) } else { fig.y_linear(0.0, v_hi.max(1.0)) };
    let warm = rows.filter(|r| r.warmup).map(|r| r.second + 1.0).fold(0.0, f64::max);
    if warm > 0.0 {
        let x1 = x.map_clamped(warm);
        fig.svg().rect(a.left, a.top, x1 - a.left, a.height, "#eeeeee", Some("warm-up"));
    }
    fig.axes(&x, &y, "second of the run", y_label);
    for s in series {
        let st = ctx.styles.get(&s.strategy);
        // a second's value is drawn at its middle
        let pts: Vec<(f64, f64)> = s.rows.iter().map(|r| (r.second + 0.5, get(r))).collect();
        fig.series(&x, &y, &pts, &Stroke { color: st.color.into(), width: 1.6, dash: st.dash.map(str::to_string) });
    }
    fig.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{tests::results, View};
    use crate::plots::test_support::{check_svg, styles};

    fn series(view: &View, s: usize, errors: f64) -> Series {
        let rows = (0..10)
            .map(|i| Second {
                second: i as f64,
                warmup: i < 2,
                completed: 900.0 + i as f64,
                errors,
                p99_ms: 5.0 + i as f64,
            })
            .collect();
        Series { strategy: view.strategies[s].clone(), seed: 1, rows }
    }

    #[test]
    fn a_line_per_run_and_errors_only_when_there_are_some() {
        let r = results("live");
        let view = View::new(&r);
        let styles = styles(&view);
        let ctx = Ctx { id: "live".into(), view: &view, styles: &styles };
        let s = section(&ctx, &[series(&view, 0, 0.0), series(&view, 1, 0.0)]);
        assert_eq!(s.plots.len(), 2);
        assert_eq!(s.notes, ["No errors or timeouts in any second."]);
        check_svg(&s.plots[0].svg, &["c3 (seed 1)", "lor (seed 1)", "second of the run", "warm-up"]);
        assert_eq!(s.plots[0].svg.matches("<polyline").count(), 2);
        let s = section(&ctx, &[series(&view, 0, 3.0)]);
        assert_eq!(s.plots.len(), 3);
        assert_eq!(s.plots[2].name, "live-per-second-errors");
        assert_eq!(section(&ctx, &[]).notes.len(), 1);
    }
}
