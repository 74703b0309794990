//! A figure: title, plot area, axes with ticks and labels, legend, and clipped series on top.

use crate::escape::slug;
use crate::scale::{format_tick, Scale};
use crate::svg::{Anchor, Stroke, Svg};

/// Default figure size in pixels.
pub const WIDTH: f64 = 560.0;
/// Default figure height in pixels (legend rows are added below).
pub const HEIGHT: f64 = 340.0;
const MARGIN_LEFT: f64 = 66.0;
const MARGIN_RIGHT: f64 = 18.0;
const MARGIN_TOP: f64 = 34.0;
const MARGIN_BOTTOM: f64 = 46.0;
const LEGEND_ROW: f64 = 18.0;
const FONT_SMALL: f64 = 11.0;

/// How a legend entry is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// A short line segment (line series).
    Line,
    /// A filled square (bars, dots).
    Swatch,
}

/// One legend entry.
#[derive(Clone, Debug, PartialEq)]
pub struct LegendItem {
    /// Label text (escaped when drawn).
    pub label: String,
    /// CSS colour.
    pub color: String,
    /// Dash pattern for line marks.
    pub dash: Option<String>,
    /// Line or swatch.
    pub mark: Mark,
}

/// The plot area inside a figure, in pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    /// Left edge.
    pub left: f64,
    /// Top edge.
    pub top: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

impl Area {
    /// Right edge.
    pub fn right(&self) -> f64 {
        self.left + self.width
    }

    /// Bottom edge.
    pub fn bottom(&self) -> f64 {
        self.top + self.height
    }
}

/// A figure being drawn: its SVG, plot area and the id used for its clip path.
pub struct Figure {
    svg: Svg,
    area: Area,
    clip: String,
}

/// Rough text width for layout: DejaVu Sans averages about 0.6 em per character.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}

/// Lay legend items out in rows across `width`; returns each item's (x, row).
fn legend_layout(items: &[LegendItem], width: f64) -> Vec<(f64, usize)> {
    let mut out = Vec::with_capacity(items.len());
    let (mut x, mut row) = (MARGIN_LEFT, 0usize);
    for item in items {
        let w = 26.0 + text_width(&item.label, FONT_SMALL) + 14.0;
        if x + w > width - MARGIN_RIGHT && x > MARGIN_LEFT {
            x = MARGIN_LEFT;
            row += 1;
        }
        out.push((x, row));
        x += w;
    }
    out
}

impl Figure {
    /// A figure named `id` (unique on the page: it prefixes clip-path ids) with a title, of the
    /// default size plus room for the legend rows below the plot.
    pub fn new(id: &str, title: &str, legend: &[LegendItem]) -> Figure {
        Figure::sized(id, title, legend, WIDTH, HEIGHT)
    }

    /// Like [`Figure::new`] with an explicit size (before legend rows).
    pub fn sized(id: &str, title: &str, legend: &[LegendItem], width: f64, height: f64) -> Figure {
        let layout = legend_layout(legend, width);
        let rows = layout.iter().map(|(_, r)| r + 1).max().unwrap_or(0);
        let total = height + rows as f64 * LEGEND_ROW + if rows > 0 { 4.0 } else { 0.0 };
        let mut svg = Svg::new(width, total);
        svg.text(width / 2.0, 20.0, title, 14.0, Anchor::Middle, true);
        let area = Area {
            left: MARGIN_LEFT,
            top: MARGIN_TOP,
            width: width - MARGIN_LEFT - MARGIN_RIGHT,
            height: height - MARGIN_TOP - MARGIN_BOTTOM,
        };
        for (item, (x, row)) in legend.iter().zip(&layout) {
            let y = height + 4.0 + *row as f64 * LEGEND_ROW + 6.0;
            match item.mark {
                Mark::Line => {
                    let stroke = Stroke { color: item.color.clone(), width: 2.5, dash: item.dash.clone() };
                    svg.line(*x, y, x + 22.0, y, &stroke);
                }
                Mark::Swatch => svg.rect(x + 5.0, y - 6.0, 12.0, 12.0, &item.color, None),
            }
            svg.text(x + 26.0, y + 4.0, &item.label, FONT_SMALL, Anchor::Start, false);
        }
        let clip = format!("clip-{}", slug(id));
        svg.clip_rect(&clip, area.left, area.top, area.width, area.height);
        Figure { svg, area, clip }
    }

    /// The plot area.
    pub fn area(&self) -> Area {
        self.area
    }

    /// A horizontal scale spanning the plot area.
    pub fn x_linear(&self, d0: f64, d1: f64) -> Scale {
        Scale::linear_nice(d0, d1, self.area.left, self.area.right())
    }

    /// A horizontal log scale spanning the plot area, extended to whole decades.
    pub fn x_log(&self, d0: f64, d1: f64) -> Scale {
        Scale::log_nice(d0, d1, self.area.left, self.area.right())
    }

    /// A vertical scale spanning the plot area (larger values up).
    pub fn y_linear(&self, d0: f64, d1: f64) -> Scale {
        Scale::linear_nice(d0, d1, self.area.bottom(), self.area.top)
    }

    /// A vertical log scale spanning the plot area, extended to whole decades.
    pub fn y_log(&self, d0: f64, d1: f64) -> Scale {
        Scale::log_nice(d0, d1, self.area.bottom(), self.area.top)
    }

    /// Draw the grid, frame, ticks and tick labels of both axes and their titles.
    pub fn axes(&mut self, x: &Scale, y: &Scale, x_label: &str, y_label: &str) {
        self.x_axis(x, x_label);
        self.y_axis(y, y_label);
    }

    /// Draw the horizontal axis (ticks, labels, vertical grid lines) and its title.
    pub fn x_axis(&mut self, x: &Scale, label: &str) {
        self.x_axis_grid(x, label, true);
    }

    /// [`Figure::x_axis`], with or without grid lines (a heatmap has none: they would hide cells).
    pub fn x_axis_grid(&mut self, x: &Scale, label: &str, with_grid: bool) {
        let a = self.area;
        let grid = Stroke::solid("#e6e6e6", 1.0);
        let tick = Stroke::solid("#555555", 1.0);
        for t in x.ticks() {
            let px = x.map(t.value);
            if px < a.left - 0.5 || px > a.right() + 0.5 {
                continue;
            }
            if t.major {
                if with_grid {
                    self.svg.line(px, a.top, px, a.bottom(), &grid);
                }
                self.svg.line(px, a.bottom(), px, a.bottom() + 5.0, &tick);
                self.svg.text(px, a.bottom() + 17.0, &format_tick(t.value), FONT_SMALL, Anchor::Middle, false);
            } else {
                self.svg.line(px, a.bottom(), px, a.bottom() + 3.0, &tick);
            }
        }
        self.svg.frame(a.left, a.top, a.width, a.height, &Stroke::solid("#888888", 1.0));
        self.svg.text(a.left + a.width / 2.0, a.bottom() + 36.0, label, 12.0, Anchor::Middle, false);
    }

    /// Draw the vertical axis (ticks, labels, horizontal grid lines) and its title.
    pub fn y_axis(&mut self, y: &Scale, label: &str) {
        self.y_axis_fmt(y, label, &format_tick);
    }

    /// Like [`Figure::y_axis`] with a custom tick label format.
    pub fn y_axis_fmt(&mut self, y: &Scale, label: &str, fmt: &dyn Fn(f64) -> String) {
        let a = self.area;
        let grid = Stroke::solid("#e6e6e6", 1.0);
        let tick = Stroke::solid("#555555", 1.0);
        for t in y.ticks() {
            let py = y.map(t.value);
            if py < a.top - 0.5 || py > a.bottom() + 0.5 {
                continue;
            }
            if t.major {
                self.svg.line(a.left, py, a.right(), py, &grid);
                self.svg.line(a.left - 5.0, py, a.left, py, &tick);
                self.svg.text(a.left - 8.0, py + 4.0, &fmt(t.value), FONT_SMALL, Anchor::End, false);
            } else {
                self.svg.line(a.left - 3.0, py, a.left, py, &tick);
            }
        }
        self.svg.frame(a.left, a.top, a.width, a.height, &Stroke::solid("#888888", 1.0));
        let cy = a.top + a.height / 2.0;
        self.svg.text_styled(16.0, cy, label, 12.0, Anchor::Middle, false, "#222222", -90.0);
    }

    /// Category labels under the plot at the given pixel centres, with the axis title.
    pub fn x_categories(&mut self, labels: &[(f64, String)], title: &str) {
        let a = self.area;
        // shrink labels that would overlap their neighbours
        let slot = if labels.len() > 1 { a.width / labels.len() as f64 } else { a.width };
        for (px, label) in labels {
            let mut size = FONT_SMALL;
            while size > 7.0 && text_width(label, size) > slot - 4.0 {
                size -= 0.5;
            }
            self.svg.text(*px, a.bottom() + 16.0, label, size, Anchor::Middle, false);
        }
        self.svg.frame(a.left, a.top, a.width, a.height, &Stroke::solid("#888888", 1.0));
        self.svg.text(a.left + a.width / 2.0, a.bottom() + 36.0, title, 12.0, Anchor::Middle, false);
    }

    /// A data series as a clipped polyline; points that the scales cannot place are dropped.
    pub fn series(&mut self, x: &Scale, y: &Scale, points: &[(f64, f64)], stroke: &Stroke) {
        let px: Vec<(f64, f64)> = points
            .iter()
            .filter(|(a, b)| x.accepts(*a) && y.accepts(*b))
            .map(|(a, b)| (x.map(*a), y.map(*b)))
            .collect();
        let clip = self.clip.clone();
        self.svg.polyline(&px, stroke, Some(&clip));
    }

    /// Direct access to the SVG for marks the figure does not know (bars, cells, dots).
    pub fn svg(&mut self) -> &mut Svg {
        &mut self.svg
    }

    /// A note centred in the plot area (e.g. why a panel is empty).
    pub fn note(&mut self, text: &str) {
        let a = self.area;
        self.svg.text_styled(
            a.left + a.width / 2.0,
            a.top + a.height / 2.0,
            text,
            12.0,
            Anchor::Middle,
            false,
            "#777777",
            0.0,
        );
    }

    /// The finished SVG text.
    pub fn finish(self) -> String {
        self.svg.finish()
    }
}

/// Legend entries for line series.
pub fn line_legend(items: &[(String, &str, Option<&str>)]) -> Vec<LegendItem> {
    items
        .iter()
        .map(|(label, color, dash)| LegendItem {
            label: label.clone(),
            color: color.to_string(),
            dash: dash.map(str::to_string),
            mark: Mark::Line,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::svg::balanced;

    #[test]
    fn figure_draws_axes_legend_and_series() {
        let legend = line_legend(&[("c3 <fcfs>".into(), "#0072B2", None), ("lor".into(), "#E69F00", Some("7 3"))]);
        let mut f = Figure::new("t1", "A title", &legend);
        let x = f.x_log(0.5, 200.0);
        let y = f.y_linear(0.0, 1.0);
        f.axes(&x, &y, "latency (ms)", "fraction");
        f.series(&x, &y, &[(1.0, 0.1), (10.0, 0.5), (0.0, 0.7), (100.0, 0.9)], &Stroke::solid("#0072B2", 2.0));
        let svg = f.finish();
        balanced(&svg).unwrap();
        assert!(svg.contains("c3 &lt;fcfs&gt;"));
        assert!(svg.contains(">latency (ms)<"));
        assert!(svg.contains(">100<") && svg.contains(">0.1<"), "decade labels present");
        assert!(svg.contains(r#"clip-path="url(#clip-t1)""#));
        // the zero x value cannot sit on a log axis and is dropped: 3 points remain
        let line = svg.lines().find(|l| l.starts_with("<polyline")).unwrap();
        assert_eq!(line.split("points=\"").nth(1).unwrap().split('"').next().unwrap().split(' ').count(), 3);
    }

    #[test]
    fn long_legends_wrap_into_rows() {
        let items: Vec<LegendItem> = (0..12)
            .map(|i| LegendItem {
                label: format!("strategy-number-{i}"),
                color: "#000".into(),
                dash: None,
                mark: Mark::Swatch,
            })
            .collect();
        let rows = legend_layout(&items, WIDTH).iter().map(|(_, r)| *r).max().unwrap();
        assert!(rows >= 2);
        let f = Figure::new("t2", "t", &items);
        assert!(f.svg.height() > HEIGHT + 2.0 * LEGEND_ROW);
    }
}
