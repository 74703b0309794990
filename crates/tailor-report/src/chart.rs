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
    /// Extra room under the plot area reserved for rotated category labels.
    room: f64,
}

/// Rotation of category labels that do not fit their slot side by side, degrees (clockwise
/// from horizontal in SVG's y-down frame, so the text runs down-left from its tick).
const ROTATE: f64 = -40.0;
/// Rotated labels are cut to this many characters (the full text stays in the table).
const MAX_ROTATED_CHARS: usize = 28;
const MIN_FONT: f64 = 8.0;

/// One category label as laid out: anchor point, text, size and rotation (0 or [`ROTATE`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    /// Anchor x (the tick).
    pub x: f64,
    /// Anchor y (baseline).
    pub y: f64,
    /// The text drawn (possibly shortened).
    pub text: String,
    /// Font size.
    pub size: f64,
    /// Rotation in degrees.
    pub angle: f64,
}

impl Placed {
    /// The label's box in its own rotated frame, as (x0, y0, x1, y1) of the anchor rotated back by
    /// the label's angle: labels of one layout share an angle, so two labels overlap exactly when
    /// these boxes do.
    pub fn frame_box(&self) -> (f64, f64, f64, f64) {
        let (sin, cos) = (-self.angle).to_radians().sin_cos();
        let (u, v) = (self.x * cos - self.y * sin, self.x * sin + self.y * cos);
        let w = text_width(&self.text, self.size);
        let h = self.size * 1.2;
        if self.angle == 0.0 {
            (u - w / 2.0, v - h, u + w / 2.0, v)
        } else {
            (u - w, v - h, u, v)
        }
    }
}

/// Lay category labels (tick x, text) out under a plot whose bottom is at `bottom`, each tick
/// owning `slot` pixels: side by side, shrunk down to 8 px, when they fit; otherwise rotated,
/// cut to [`MAX_ROTATED_CHARS`] and thinned to every k-th label so that none overlaps the next.
pub fn category_layout(labels: &[(f64, String)], slot: f64, bottom: f64) -> Vec<Placed> {
    let widest = |size: f64| labels.iter().map(|(_, l)| text_width(l, size)).fold(0.0, f64::max);
    let mut size = FONT_SMALL;
    while size > MIN_FONT && widest(size) > slot - 4.0 {
        size -= 0.5;
    }
    if widest(size) <= slot - 4.0 {
        return labels
            .iter()
            .map(|(x, l)| Placed { x: *x, y: bottom + 16.0, text: l.clone(), size, angle: 0.0 })
            .collect();
    }
    let size = 10.0;
    // parallel rotated baselines `slot` apart horizontally lie slot·sin(angle) apart
    let gap = slot.max(1e-9) * ROTATE.to_radians().sin().abs();
    let every = ((size * 1.25) / gap).ceil().max(1.0) as usize;
    labels
        .iter()
        .enumerate()
        .filter(|(i, _)| i % every == 0)
        .map(|(_, (x, l))| Placed { x: *x, y: bottom + 12.0, text: shorten(l, MAX_ROTATED_CHARS), size, angle: ROTATE })
        .collect()
}

/// Extra room below a plot `plot_width` wide that `labels` (one per equal slot) need.
pub fn category_room(labels: &[String], plot_width: f64) -> f64 {
    let slot = plot_width / labels.len().max(1) as f64;
    let tagged: Vec<(f64, String)> = labels.iter().map(|l| (0.0, l.clone())).collect();
    let placed = category_layout(&tagged, slot, 0.0);
    let depth = placed
        .iter()
        .map(|p| if p.angle == 0.0 { 0.0 } else { text_width(&p.text, p.size) * p.angle.to_radians().sin().abs() })
        .fold(0.0, f64::max);
    depth.ceil()
}

/// `text` cut to `max` characters with an ellipsis.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// Keep labels at pixel positions `pos` (in drawing order of priority) no closer than `gap` to one
/// already kept: the p50 … p99.99 guides of a tail plot squeeze together on short axes.
pub fn declutter(pos: &[f64], gap: f64) -> Vec<bool> {
    let mut kept: Vec<f64> = Vec::new();
    pos.iter()
        .map(|p| {
            let free = kept.iter().all(|k| (k - p).abs() >= gap);
            if free {
                kept.push(*p);
            }
            free
        })
        .collect()
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
        Figure::sized_room(id, title, legend, width, height, 0.0)
    }

    /// A figure for category labels: the room rotated labels need is added under the plot.
    pub fn for_categories(id: &str, title: &str, legend: &[LegendItem], width: f64, labels: &[String]) -> Figure {
        let room = category_room(labels, width - MARGIN_LEFT - MARGIN_RIGHT);
        Figure::sized_room(id, title, legend, width, HEIGHT, room)
    }

    /// Like [`Figure::sized`] with `room` extra pixels between the plot and the legend.
    pub fn sized_room(id: &str, title: &str, legend: &[LegendItem], width: f64, height: f64, room: f64) -> Figure {
        let layout = legend_layout(legend, width);
        let rows = layout.iter().map(|(_, r)| r + 1).max().unwrap_or(0);
        let height = height + room;
        let total = height + rows as f64 * LEGEND_ROW + if rows > 0 { 4.0 } else { 0.0 };
        let mut svg = Svg::new(width, total);
        svg.text(width / 2.0, 20.0, title, 14.0, Anchor::Middle, true);
        let area = Area {
            left: MARGIN_LEFT,
            top: MARGIN_TOP,
            width: width - MARGIN_LEFT - MARGIN_RIGHT,
            height: height - room - MARGIN_TOP - MARGIN_BOTTOM,
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
        Figure { svg, area, clip, room }
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

    /// Category labels under the plot at the given pixel centres (see [`category_layout`]), with
    /// the axis title below them.
    pub fn x_categories(&mut self, labels: &[(f64, String)], title: &str) {
        let a = self.area;
        let slot = if labels.len() > 1 { a.width / labels.len() as f64 } else { a.width };
        for p in category_layout(labels, slot, a.bottom()) {
            let anchor = if p.angle == 0.0 { Anchor::Middle } else { Anchor::End };
            self.svg.text_styled(p.x, p.y, &p.text, p.size, anchor, false, "#222222", p.angle);
        }
        self.svg.frame(a.left, a.top, a.width, a.height, &Stroke::solid("#888888", 1.0));
        self.svg.text(a.left + a.width / 2.0, a.bottom() + self.room + 36.0, title, 12.0, Anchor::Middle, false);
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
        assert!(svg.contains(">100<") && svg.contains(">1<") && !svg.contains(">1k<"), "decades inside the data");
        assert!(svg.contains(r#"clip-path="url(#clip-t1)""#));
        // the zero x value cannot sit on a log axis and is dropped: 3 points remain
        let line = svg.lines().find(|l| l.starts_with("<polyline")).unwrap();
        assert_eq!(line.split("points=\"").nth(1).unwrap().split('"').next().unwrap().split(' ').count(), 3);
    }

    fn overlap(a: (f64, f64, f64, f64), b: (f64, f64, f64, f64)) -> bool {
        a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
    }

    fn assert_no_overlap(placed: &[Placed]) {
        for (i, a) in placed.iter().enumerate() {
            for b in &placed[i + 1..] {
                assert!(!overlap(a.frame_box(), b.frame_box()), "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn category_labels_never_overlap_with_long_names_and_many_points() {
        let width = WIDTH - MARGIN_LEFT - MARGIN_RIGHT;
        for (n, name) in
            [(3, "c3"), (7, "dynamic-snitch + max-stretch"), (40, "p"), (60, "interval_ms=500.0, load=0.9")]
        {
            let labels: Vec<(f64, String)> =
                (0..n).map(|i| (MARGIN_LEFT + width * (i as f64 + 0.5) / n as f64, format!("{name}-{i}"))).collect();
            let placed = category_layout(&labels, width / n as f64, 300.0);
            assert!(!placed.is_empty());
            assert_no_overlap(&placed);
            for p in &placed {
                assert!(p.text.chars().count() <= MAX_ROTATED_CHARS + 4);
            }
        }
        // few short labels stay horizontal and all present
        let few: Vec<(f64, String)> = (0..3).map(|i| (100.0 * i as f64, format!("s{i}"))).collect();
        let placed = category_layout(&few, 100.0, 0.0);
        assert!(placed.iter().all(|p| p.angle == 0.0) && placed.len() == 3);
        // long labels get room under the plot so the rotated text stays above the axis title
        let long = vec!["dynamic-snitch + max-stretch".to_string(); 7];
        assert!(category_room(&long, width) > 40.0);
        assert_eq!(category_room(&["a".to_string()], width), 0.0);
    }

    #[test]
    fn decluttered_guides_keep_their_distance() {
        let keep = declutter(&[10.0, 14.0, 30.0, 41.0, 60.0], 12.0);
        assert_eq!(keep, [true, false, true, false, true]);
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
