//! Timelines of runs with injected faults: the p99 of each window's reads and the faulty
//! server's share of the reads sent, one line per strategy (first seed), the fault shaded, so
//! how fast each strategy leaves a failing node and how its tail recovers shows at a glance.

use super::{Ctx, Plot, Section};
use crate::chart::Figure;
use crate::escape::slug;
use crate::scale::Scale;
use crate::svg::Stroke;
use tailor_core::results::{Failover, RunResult};

/// A panel: file-name suffix, title, y-axis label, and the value of window `w` of a run whose
/// faulty server is `server`.
type Panel = (&'static str, &'static str, &'static str, fn(&Failover, usize, u32) -> f64);

const PANELS: [Panel; 2] = [
    ("p99", "p99 latency per window", "p99 latency (ms)", |f, w, _| f.timeline[w].p99_ms),
    ("share", "Faulty server's share of reads sent", "share of reads", |f, w, s| {
        f.timeline[w].share.get(s as usize).copied().unwrap_or(0.0)
    }),
];

/// The failover section: two figures per swept point whose runs had faults (nothing, and no
/// heading, when none had).
pub fn section(ctx: &Ctx) -> Option<Section> {
    let view = ctx.view;
    let mut section = Section::new(
        "Failover timeline",
        "Each strategy's first seed, window by window: the p99 of the reads released in the window, and \
         the share of the reads sent that went to the faulty server (the dotted line is its fair share \
         1/servers; for a slow coordinator, its share as a replica, which it keeps). The shaded band is the fault.",
    );
    for p in 0..view.points.len() {
        let runs: Vec<(usize, &RunResult)> = (0..view.strategies.len())
            .filter_map(|s| view.runs(s, p).first().map(|r| (s, *r)))
            .filter(|(_, r)| r.failover.as_ref().is_some_and(|f| !f.timeline.is_empty()))
            .collect();
        if runs.is_empty() {
            continue;
        }
        let legend = ctx.styles.line_legend(&runs.iter().map(|(s, _)| view.strategies[*s].clone()).collect::<Vec<_>>());
        for (suffix, title, y_label, get) in PANELS {
            let point = view.point_label(p);
            let name = format!("{}-failover-{suffix}-{}", ctx.id, slug(&point));
            let title = format!("{title} — {point}");
            let mut fig = Figure::new(&name, &title, &legend);
            draw(&mut fig, ctx, &runs, y_label, get);
            section.plots.push(Plot { name, title, svg: fig.finish() });
        }
    }
    (!section.plots.is_empty()).then_some(section)
}

/// The faulty server of a run's first fault and the number of servers.
fn faulty(f: &Failover) -> (u32, usize) {
    let server = f.faults.first().map_or(0, |o| o.server);
    (server, f.timeline.first().map_or(1, |w| w.share.len().max(1)))
}

fn draw(
    fig: &mut Figure,
    ctx: &Ctx,
    runs: &[(usize, &RunResult)],
    y_label: &str,
    get: fn(&Failover, usize, u32) -> f64,
) {
    let failovers: Vec<(usize, &Failover)> =
        runs.iter().filter_map(|(s, r)| r.failover.as_ref().map(|f| (*s, f))).collect();
    let points = |f: &Failover| -> Vec<(f64, f64)> {
        let half = f.window_ms / 2.0;
        (0..f.timeline.len()).map(|w| ((f.timeline[w].start_ms + half) / 1e3, get(f, w, faulty(f).0))).collect()
    };
    let all: Vec<(f64, f64)> = failovers.iter().flat_map(|(_, f)| points(f)).collect();
    let t_max = all.iter().map(|p| p.0).fold(1.0, f64::max);
    let (lo, hi) = all.iter().filter(|p| p.1 > 0.0).fold((f64::INFINITY, 0.0f64), |(l, h), p| (l.min(p.1), h.max(p.1)));
    let x = fig.x_linear(0.0, t_max);
    let a = fig.area();
    let log = y_label.contains("latency") && lo.is_finite() && hi / lo > 30.0;
    let y = if log { Scale::log_nice(lo, hi, a.bottom(), a.top) } else { fig.y_linear(0.0, hi.max(1e-3)) };
    if let Some((_, f)) = failovers.first() {
        for o in &f.faults {
            let (x0, x1) = (x.map_clamped(o.start_ms / 1e3), x.map_clamped(o.end_ms / 1e3));
            let what = format!("{} fault on server {}", o.kind, o.server);
            fig.svg().rect(x0, a.top, x1 - x0, a.height, "#f4dede", Some(&what));
        }
        if !y_label.contains("latency") {
            let fair = 1.0 / faulty(f).1 as f64;
            let line = [(0.0, fair), (t_max, fair)];
            fig.series(&x, &y, &line, &Stroke { color: "#777777".into(), width: 1.0, dash: Some("2 3".into()) });
        }
    }
    fig.axes(&x, &y, "second of the run", y_label);
    for (s, f) in &failovers {
        let st = ctx.styles.get(&ctx.view.strategies[*s]);
        fig.series(
            &x,
            &y,
            &points(f),
            &Stroke { color: st.color.into(), width: 1.4, dash: st.dash.map(str::to_string) },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{tests::results, View};
    use crate::plots::test_support::{check_svg, styles};
    use tailor_core::results::{FaultOutcome, TimelineWindow};

    fn with_faults(mut r: tailor_core::results::Results) -> tailor_core::results::Results {
        for run in &mut r.runs {
            let timeline = (0..40)
                .map(|w| TimelineWindow {
                    start_ms: w as f64 * 100.0,
                    reads: 100,
                    p99_ms: if (20..30).contains(&w) { 80.0 } else { 8.0 },
                    share: vec![if (20..30).contains(&w) { 0.05 } else { 0.25 }, 0.25, 0.25, 0.25],
                })
                .collect();
            let fault =
                FaultOutcome { kind: "slow".into(), start_ms: 2000.0, end_ms: 3000.0, ..FaultOutcome::default() };
            run.failover = Some(Failover { window_ms: 100.0, faults: vec![fault], timeline });
        }
        r
    }

    #[test]
    fn two_figures_per_point_with_the_fault_shaded_and_none_without_faults() {
        let r = with_faults(results("sim"));
        let view = View::new(&r);
        let styles = styles(&view);
        let ctx = Ctx { id: "sim".into(), view: &view, styles: &styles };
        let s = section(&ctx).unwrap();
        assert_eq!(s.plots.len(), 2 * view.points.len());
        check_svg(&s.plots[0].svg, &["slow fault on server 0", "second of the run", "p99 latency (ms)"]);
        assert!(s.plots[1].svg.contains("share of reads"));
        let plain = results("sim");
        let view = View::new(&plain);
        assert!(section(&Ctx { id: "sim".into(), view: &view, styles: &styles }).is_none());
    }
}
