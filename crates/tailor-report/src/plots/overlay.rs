//! Simulated versus measured: the same strategies from a `sim` and a `live` results file, as
//! tails (sim dashed, live solid) and p99 bars side by side.

use super::tail::{tail_figure, Line};
use super::{blend, Plot, Section, Styles};
use crate::chart::{Figure, LegendItem, Mark, WIDTH};
use crate::data::{mean, pool_cdf, View};
use crate::escape::slug;
use crate::scale::{format_value, Band};
use crate::svg::{with_mark, Stroke};
use crate::validity::mark;
use tailor_core::results::RunResult;

const SIM_DASH: &str = "6 4";

/// Points present in both views, as (sim index, live index). When they share none but each has
/// exactly one point, those two are paired: a live run usually cannot echo every swept value.
fn common_points(sim: &View, live: &View) -> Vec<(usize, usize)> {
    let pairs: Vec<(usize, usize)> =
        (0..sim.points.len()).filter_map(|p| live.point_index(&sim.points[p]).map(|q| (p, q))).collect();
    if pairs.is_empty() && sim.points.len() == 1 && live.points.len() == 1 {
        return vec![(0, 0)];
    }
    pairs
}

/// The overlay section for one sim/live pair; notes when they share no strategy or point.
pub fn section(id: &str, sim: &View, live: &View, styles: &Styles) -> Section {
    let mut section = Section::new(
        "Simulated versus measured",
        "The same strategies in the simulator (dashed) and on the real store (solid): where the lines part, \
         the simulator's model misses something. Bars: p99 read latency, simulated (light) beside measured (dark).",
    );
    let strategies: Vec<(usize, usize)> =
        (0..sim.strategies.len()).filter_map(|s| live.strategy_index(&sim.strategies[s]).map(|l| (s, l))).collect();
    let points = common_points(sim, live);
    if strategies.is_empty() || points.is_empty() {
        section.notes.push("The simulated and measured results share no strategy at a common parameter point.".into());
        return section;
    }
    for (p, q) in points {
        let point = sim.point_label(p);
        let present: Vec<(usize, usize)> = strategies
            .iter()
            .copied()
            .filter(|&(s, l)| !sim.runs(s, p).is_empty() && !live.runs(l, q).is_empty())
            .collect();
        if present.is_empty() {
            continue;
        }
        let mut legend =
            styles.line_legend(&present.iter().map(|(s, _)| sim.strategies[*s].clone()).collect::<Vec<_>>());
        for item in &mut legend {
            item.dash = None;
        }
        legend.push(LegendItem {
            label: "simulated".into(),
            color: "#666666".into(),
            dash: Some(SIM_DASH.into()),
            mark: Mark::Line,
        });
        legend.push(LegendItem { label: "measured".into(), color: "#666666".into(), dash: None, mark: Mark::Line });
        let mut lines = Vec::new();
        for &(s, l) in &present {
            let color = styles.get(&sim.strategies[s]).color.to_string();
            lines.push(Line {
                color: color.clone(),
                dash: Some(SIM_DASH.into()),
                cdf: pool_cdf(sim.runs(s, p), |r| &r.latency_cdf),
            });
            lines.push(Line { color, dash: None, cdf: pool_cdf(live.runs(l, q), |r| &r.latency_cdf) });
        }
        let first_plot = section.plots.len();
        let name = format!("{id}-sim-vs-live-{}", slug(&point));
        let title = format!("Simulated vs measured latency — {point}");
        match tail_figure(&name, &title, "read latency (ms)", &legend, &lines) {
            Some(svg) => section.plots.push(Plot { name, title, svg }),
            None => section.notes.push(format!("{point}: no latency distributions to overlay.")),
        }
        section.plots.push(p99_bars(id, &point, sim, live, p, q, &present, styles));
        // both figures of this point draw every measured run of its strategies
        let measured: Vec<&RunResult> = present.iter().flat_map(|&(_, l)| live.runs(l, q).iter().copied()).collect();
        let invalid = measured.iter().filter(|r| !r.is_valid()).count();
        if invalid > 0 {
            let text = mark(invalid, measured.iter().filter(|r| r.valid.is_some()).count());
            for plot in &mut section.plots[first_plot..] {
                plot.svg = with_mark(&plot.svg, &text);
            }
        }
    }
    section
}

/// p99 side by side per strategy: simulated (light) and measured (dark).
#[allow(clippy::too_many_arguments)]
fn p99_bars(
    id: &str,
    point: &str,
    sim: &View,
    live: &View,
    p: usize,
    q: usize,
    present: &[(usize, usize)],
    styles: &Styles,
) -> Plot {
    let values: Vec<(f64, f64)> = present
        .iter()
        .map(|&(s, l)| {
            (mean(sim.runs(s, p), |r| r.read_latency_ms.p99), mean(live.runs(l, q), |r| r.read_latency_ms.p99))
        })
        .collect();
    let max = values.iter().map(|(a, b)| a.max(*b)).fold(0.0, f64::max);
    let name = format!("{id}-p99-sim-vs-live-{}", slug(point));
    let title = format!("p99 simulated vs measured — {point}");
    let legend = vec![
        LegendItem { label: "simulated".into(), color: blend("#666666", 0.5), dash: None, mark: Mark::Swatch },
        LegendItem { label: "measured".into(), color: "#666666".into(), dash: None, mark: Mark::Swatch },
    ];
    let names: Vec<String> = present.iter().map(|(s, _)| styles.label(&sim.strategies[*s])).collect();
    let mut fig = Figure::for_categories(&name, &title, &legend, WIDTH, &names);
    let a = fig.area();
    let y = fig.y_linear(0.0, max);
    let groups = Band::new(present.len(), a.left, a.right(), 0.3);
    let bars = Band::new(2, 0.0, groups.width(), 0.08);
    for (i, (&(s, _), (vs, vl))) in present.iter().zip(&values).enumerate() {
        let strategy = &sim.strategies[s];
        let color = styles.get(strategy).color;
        let label = styles.label(strategy);
        for (j, (v, opacity, kind)) in [(*vs, 0.5, "simulated"), (*vl, 1.0, "measured")].into_iter().enumerate() {
            let top = y.map(v);
            let tip = format!("{label} {kind}: p99 {} ms", format_value(v));
            let (x0, h) = (groups.start(i) + bars.start(j), a.bottom() - top);
            fig.svg().rect(x0, top, bars.width(), h, &blend(color, opacity), Some(&tip));
            if j == 0 {
                // a light fill alone vanished next to the dark bar: outline it in the full colour
                fig.svg().frame(x0, top, bars.width(), h, &Stroke::solid(color, 1.5));
            }
        }
    }
    let labels: Vec<(f64, String)> =
        present.iter().enumerate().map(|(i, (s, _))| (groups.center(i), styles.label(&sim.strategies[*s]))).collect();
    fig.x_categories(&labels, "strategy");
    fig.y_axis(&y, "p99 read latency (ms)");
    Plot { name, title, svg: fig.finish() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::tests::results;
    use crate::plots::test_support::check_svg;

    #[test]
    fn overlays_common_strategies_and_points() {
        let sim = results("sim");
        let mut live = results("live");
        live.runs.retain(|r| r.selector == "c3");
        for r in &mut live.runs {
            r.read_latency_ms.p99 *= 2.0;
        }
        let (sv, lv) = (View::new(&sim), View::new(&live));
        let styles = Styles::new(&sv.strategies);
        let s = section("x", &sv, &lv, &styles);
        assert_eq!(s.plots.len(), 4, "a tail and a bar chart per common point");
        let tail = &s.plots[0].svg;
        check_svg(tail, &["c3", "simulated", "measured", SIM_DASH]);
        assert!(!tail.contains(">lor<"));
        assert_eq!(tail.matches("<polyline").count(), 2);
        check_svg(&s.plots[1].svg, &["c3 simulated: p99 5.29 ms", "c3 measured: p99 10.58 ms"]);
    }

    #[test]
    fn only_the_figures_of_a_point_with_an_invalid_measured_run_are_marked() {
        let sim = results("sim");
        let mut live = results("live");
        for r in &mut live.runs {
            r.valid = Some(true);
        }
        // lor, interval 500, seed 2
        live.runs[7].valid = Some(false);
        let (sv, lv) = (View::new(&sim), View::new(&live));
        let s = section("x", &sv, &lv, &Styles::new(&sv.strategies));
        let marked: Vec<bool> = s.plots.iter().map(|p| p.svg.contains("INVALID runs included")).collect();
        assert_eq!(marked, [false, false, true, true], "the tail and bars of interval 500 only");
        check_svg(&s.plots[2].svg, &[">INVALID runs included (1 of 4 live runs invalid)</text>"]);
    }

    #[test]
    fn nothing_in_common_is_a_note() {
        let sim = results("sim");
        let mut live = results("live");
        for r in &mut live.runs {
            r.selector = "other".into();
        }
        let (sv, lv) = (View::new(&sim), View::new(&live));
        let s = section("x", &sv, &lv, &Styles::new(&sv.strategies));
        assert!(s.plots.is_empty());
        assert_eq!(s.notes.len(), 1);
    }

    #[test]
    fn single_points_pair_even_if_params_differ() {
        let mut sim = results("sim");
        sim.runs.retain(|r| r.params.values().any(|v| v == "100"));
        let mut live = sim.clone();
        for r in &mut live.runs {
            r.params.clear();
        }
        let (sv, lv) = (View::new(&sim), View::new(&live));
        assert_eq!(common_points(&sv, &lv), vec![(0, 0)]);
    }
}
