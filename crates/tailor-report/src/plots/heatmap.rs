//! Requests served per server per window as heatmaps (servers × time), one per strategy, to show
//! herd behaviour (one server hot while others idle) and oscillations (hot spots moving).

use super::{Ctx, Plot, Section};
use crate::chart::{Figure, LegendItem, Mark};
use crate::escape::slug;
use crate::palette::viridis;
use crate::scale::Scale;
use crate::svg::Anchor;
use tailor_core::results::RunResult;

/// Most time columns drawn; longer runs sum adjacent windows.
const MAX_COLUMNS: usize = 300;
/// Most heatmaps per results file before only the last swept point is shown.
const MAX_FIGURES: usize = 24;
/// Colour levels: cells are quantised so neighbouring equal cells merge into one rectangle.
const LEVELS: f64 = 24.0;

/// The load heatmap section. Uses each strategy's lowest seed (one run shows dynamics; averaging
/// would blur them) and a colour scale shared by all strategies at a point so they compare.
/// When there are more than 24 strategy × point figures, only the last swept point (usually the
/// heaviest load) is drawn.
pub fn section(ctx: &Ctx) -> Section {
    let mut section = Section::new(
        "Load per server over time",
        "Requests served by each server in each time window (first seed). Bright cells are busy servers: \
         a bright band hopping between rows is herding; stripes in time are oscillations. \
         The colour scale is shared by all strategies at a point.",
    );
    let view = ctx.view;
    let n_points = view.points.len();
    let points: Vec<usize> = if n_points * view.strategies.len() > MAX_FIGURES && n_points > 0 {
        section.notes.push(format!(
            "Showing only the last swept point ({}) to keep the page light.",
            view.point_label(n_points - 1)
        ));
        vec![n_points - 1]
    } else {
        (0..n_points).collect()
    };
    for p in points {
        let runs: Vec<(usize, &RunResult)> = (0..view.strategies.len())
            .filter_map(|s| view.runs(s, p).first().map(|r| (s, *r)))
            .filter(|(_, r)| r.per_server_load.iter().any(|row| !row.is_empty()))
            .collect();
        if runs.is_empty() {
            section.notes.push(format!("{}: no per-server load recorded.", view.point_label(p)));
            continue;
        }
        let max = runs
            .iter()
            .map(|(_, r)| {
                let k = merge_factor(r);
                columns(r, k).iter().flatten().copied().max().unwrap_or(0)
            })
            .max()
            .unwrap_or(0);
        for (s, run) in runs {
            let label = ctx.styles.label(&view.strategies[s]);
            let point = view.point_label(p);
            let name = format!("{}-load-{}-{}", ctx.id, slug(&point), slug(&label));
            let title = format!("Load per server: {label} — {point}");
            let svg = figure(&name, &title, run, max);
            section.plots.push(Plot { name, title, svg });
        }
    }
    section
}

/// How many windows are summed per column.
fn merge_factor(run: &RunResult) -> usize {
    let windows = run.per_server_load.iter().map(Vec::len).max().unwrap_or(0);
    windows.div_ceil(MAX_COLUMNS).max(1)
}

/// Per-server rows with `k` adjacent windows summed.
fn columns(run: &RunResult, k: usize) -> Vec<Vec<u64>> {
    run.per_server_load
        .iter()
        .map(|row| row.chunks(k.max(1)).map(|c| c.iter().map(|v| *v as u64).sum()).collect())
        .collect()
}

/// One heatmap figure with a colour key in the legend.
fn figure(name: &str, title: &str, run: &RunResult, max: u64) -> String {
    let k = merge_factor(run);
    let rows = columns(run, k);
    let servers = rows.len();
    let windows = rows.iter().map(Vec::len).max().unwrap_or(0);
    let window_ms = if run.window_ms.is_finite() && run.window_ms > 0.0 { run.window_ms } else { 100.0 };
    let col_ms = window_ms * k as f64;
    let cell_h = (150.0 / servers.max(1) as f64).clamp(4.0, 16.0);
    let height = 34.0 + cell_h * servers as f64 + 46.0;
    let legend: Vec<LegendItem> = (0..=4)
        .map(|i| {
            let v = max as f64 * i as f64 / 4.0;
            LegendItem { label: format!("{v:.0}"), color: viridis(i as f64 / 4.0), dash: None, mark: Mark::Swatch }
        })
        .chain(std::iter::once(LegendItem {
            label: format!("requests per {} ms", crate::scale::format_tick(col_ms)),
            color: "#ffffff".into(),
            dash: None,
            mark: Mark::Swatch,
        }))
        .collect();
    let mut fig = Figure::sized(name, title, &legend, crate::chart::WIDTH, height);
    let a = fig.area();
    let seconds = windows as f64 * col_ms / 1000.0;
    let x = Scale::linear(0.0, seconds, a.left, a.right());
    let col_w = a.width / windows.max(1) as f64;
    for (si, row) in rows.iter().enumerate() {
        let y0 = a.top + si as f64 * cell_h;
        // merge runs of cells with the same quantised colour into one rectangle
        let mut c = 0;
        while c < row.len() {
            let level = quantise(row[c], max);
            let mut end = c + 1;
            while end < row.len() && quantise(row[end], max) == level {
                end += 1;
            }
            let x0 = a.left + c as f64 * col_w;
            // a hair of overlap hides anti-aliasing seams between cells
            fig.svg().rect(x0, y0, (end - c) as f64 * col_w + 0.3, cell_h + 0.3, &viridis(level / LEVELS), None);
            c = end;
        }
    }
    fig.x_axis_grid(&x, "time (s)", false);
    // server labels: all when they fit, else every few
    let every = ((11.0 / cell_h).ceil() as usize).max(1);
    for si in (0..servers).step_by(every) {
        let y = a.top + (si as f64 + 0.5) * cell_h + 3.5;
        fig.svg().text(a.left - 6.0, y, &format!("s{si}"), 10.0, Anchor::End, false);
    }
    let cy = a.top + a.height / 2.0;
    fig.svg().text_styled(16.0, cy, "server", 12.0, Anchor::Middle, false, "#222222", -90.0);
    fig.finish()
}

fn quantise(v: u64, max: u64) -> f64 {
    if max == 0 {
        return 0.0;
    }
    (v as f64 / max as f64 * LEVELS).round()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{tests::results, View};
    use crate::plots::test_support::{check_svg, styles};

    #[test]
    fn one_heatmap_per_strategy_and_point() {
        let r = results("sim");
        let view = View::new(&r);
        let styles = styles(&view);
        let s = section(&Ctx { id: "sim".into(), view: &view, styles: &styles });
        assert_eq!(s.plots.len(), 4);
        assert_eq!(s.plots[0].name, "sim-load-interval-ms-100-c3");
        check_svg(&s.plots[0].svg, &["c3", "time (s)", "s0", "s2", "requests per 100 ms", "#440154"]);
    }

    #[test]
    fn long_runs_merge_windows_and_empty_loads_are_noted() {
        let mut r = results("sim");
        r.runs[0].per_server_load = vec![vec![1; 1000], vec![3; 1000]];
        assert_eq!(merge_factor(&r.runs[0]), 4);
        assert_eq!(columns(&r.runs[0], 4)[1][0], 12);
        let view = View::new(&r);
        let styles = styles(&view);
        let s = section(&Ctx { id: "sim".into(), view: &view, styles: &styles });
        check_svg(&s.plots[0].svg, &["requests per 400 ms"]);
        for run in &mut r.runs {
            run.per_server_load = vec![vec![]];
        }
        let view = View::new(&r);
        let s = section(&Ctx { id: "sim".into(), view: &view, styles: &styles });
        assert!(s.plots.is_empty());
        assert_eq!(s.notes.len(), 2);
    }

    #[test]
    fn uniform_rows_merge_into_one_rect_each() {
        let mut run = crate::data::tests::run("c3", "fcfs", &[], 1, 1.0);
        run.per_server_load = vec![vec![5; 50], vec![0; 50]];
        let svg = figure("h", "t", &run, 5);
        // background + legend swatches (6) + one rect per server row
        let cells = svg.lines().filter(|l| l.starts_with("<rect") && l.contains("fill=\"#fde725\"")).count();
        assert_eq!(cells, 2, "one legend swatch and one merged row at the top colour");
    }
}
