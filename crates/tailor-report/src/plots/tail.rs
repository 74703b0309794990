//! The tail view of a distribution shared by the latency, stretch and overlay plots:
//! x = value (log), y = fraction of requests above it, 1 − F (log), so p99 and p99.9 stand apart.

use crate::chart::{declutter, Figure, LegendItem};
use crate::scale::format_tick;
use crate::svg::{Anchor, Stroke};

/// One line of a tail plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// CSS colour.
    pub color: String,
    /// Dash pattern, if any.
    pub dash: Option<String>,
    /// CDF points `(value, F(value))`.
    pub cdf: Vec<(f64, f64)>,
}

/// Tail fractions below this are rounding noise of a CDF that reached 1 (0.9999999999999999),
/// not data: no run counts 10^12 requests. Left in, they stretched the y axis down to 1e-15.
const TAIL_NOISE: f64 = 1e-12;

/// `(value, 1 − F)` points placeable on log axes: positive value, tail fraction above noise.
pub fn tail_points(cdf: &[(f64, f64)]) -> Vec<(f64, f64)> {
    cdf.iter()
        .filter(|(x, f)| x.is_finite() && f.is_finite() && *x > 0.0)
        .map(|(x, f)| (*x, 1.0 - f.clamp(0.0, 1.0)))
        .filter(|(_, t)| *t > TAIL_NOISE)
        .collect()
}

/// Draw a tail figure; `None` when no line has a placeable point.
pub fn tail_figure(id: &str, title: &str, x_label: &str, legend: &[LegendItem], lines: &[Line]) -> Option<String> {
    let tails: Vec<Vec<(f64, f64)>> = lines.iter().map(|l| tail_points(&l.cdf)).collect();
    let all: Vec<(f64, f64)> = tails.iter().flatten().copied().collect();
    if all.is_empty() {
        return None;
    }
    let x_min = all.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x_max = all.iter().map(|p| p.0).fold(0.0, f64::max);
    let t_min = all.iter().map(|p| p.1).fold(1.0, f64::min);
    let mut fig = Figure::new(id, title, legend);
    let x = fig.x_log(x_min, x_max);
    let y = fig.y_log(t_min, 1.0);
    fig.x_axis(&x, x_label);
    fig.y_axis_fmt(&y, "fraction of reads above x (1 − F)", &format_fraction);
    // mark where the usual percentiles sit so the eye can read p99 straight off the plot
    let a = fig.area();
    let (lo, hi) = y.domain();
    let guides: Vec<(f64, &str)> =
        [(0.5, "p50"), (0.1, "p90"), (0.01, "p99"), (0.001, "p99.9"), (0.0001, "p99.99"), (0.00001, "p99.999")]
            .into_iter()
            .filter(|(q, _)| *q >= lo && *q <= hi)
            .collect();
    let rows: Vec<f64> = guides.iter().map(|(q, _)| y.map(*q)).collect();
    for ((_, label), (py, keep)) in guides.iter().zip(rows.iter().zip(declutter(&rows, 13.0))) {
        if keep {
            fig.svg().text_styled(a.right() - 4.0, py - 3.0, label, 10.0, Anchor::End, false, "#999999", 0.0);
        }
    }
    for (line, pts) in lines.iter().zip(&tails) {
        let stroke = Stroke { color: line.color.clone(), width: 1.8, dash: line.dash.clone() };
        fig.series(&x, &y, pts, &stroke);
    }
    Some(fig.finish())
}

/// Tail fractions read better as plain decimals down to 0.001, then as powers of ten.
fn format_fraction(v: f64) -> String {
    format_tick(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::line_legend;
    use crate::plots::test_support::check_svg;

    #[test]
    fn tail_points_drop_the_unplaceable() {
        let cdf = [(0.0, 0.0), (1.0, 0.0), (2.0, 0.9), (2.5, 1.0 - 1e-16), (3.0, 1.0), (f64::NAN, 0.5)];
        assert_eq!(tail_points(&cdf), vec![(1.0, 1.0), (2.0, 0.09999999999999998)]);
    }

    #[test]
    fn tail_figure_renders_and_skips_empty() {
        let legend = line_legend(&[("a".into(), "#000", None)]);
        let line = Line { color: "#000".into(), dash: None, cdf: vec![(1.0, 0.0), (10.0, 0.99), (100.0, 1.0)] };
        let svg = tail_figure("t", "Title", "latency (ms)", &legend, &[line]).unwrap();
        check_svg(&svg, &["Title", "latency (ms)", "p99", "1 − F"]);
        let empty = Line { color: "#000".into(), dash: None, cdf: vec![(5.0, 1.0)] };
        assert!(tail_figure("t", "Title", "x", &legend, &[empty]).is_none());
        assert!(tail_figure("t", "Title", "x", &legend, &[]).is_none());
    }
}
