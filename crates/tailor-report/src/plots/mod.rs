//! One module per kind of plot; each turns a [`View`] into a [`Section`] of SVG figures.

pub mod bound;
pub mod cdf;
pub mod failover;
pub mod heatmap;
pub mod overlay;
pub mod percentiles;
pub mod sbl;
pub mod stretch;
pub mod tail;
pub mod timeseries;

use crate::chart::{LegendItem, Mark};
use crate::data::{Strategy, View};
use crate::palette::{series_style, CATEGORICAL};
use crate::svg::with_mark;
use crate::validity::Invalidity;

/// One rendered figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Plot {
    /// Page-unique, file-safe name (the PNG is `plots/<name>.png`).
    pub name: String,
    /// Caption shown under the figure.
    pub title: String,
    /// The standalone SVG document.
    pub svg: String,
}

/// A group of figures of one kind, with notes for what could not be drawn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Section {
    /// Heading.
    pub title: String,
    /// How to read the figures.
    pub caption: String,
    /// The figures.
    pub plots: Vec<Plot>,
    /// Why some or all figures were skipped.
    pub notes: Vec<String>,
    /// Why some figures must not be trusted (e.g. different specs overlaid), shown as banners.
    pub warnings: Vec<String>,
    /// The invalid live runs behind these figures, shown as one compact summary.
    pub invalidity: Option<Invalidity>,
}

impl Section {
    /// An empty section with its heading and caption.
    pub fn new(title: &str, caption: &str) -> Section {
        Section { title: title.into(), caption: caption.into(), ..Section::default() }
    }

    /// Stamp every figure with a red `text` band (see [`with_mark`]): their data include
    /// invalid live runs, and an exported PNG must say so.
    pub fn mark(&mut self, text: &str) {
        for plot in &mut self.plots {
            plot.svg = with_mark(&plot.svg, text);
        }
    }
}

/// How one strategy is drawn everywhere on the page.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Style {
    /// Line and fill colour.
    pub color: &'static str,
    /// Line dash pattern, if any.
    pub dash: Option<&'static str>,
    /// Fill opacity for bars and swatches (tells local policies apart when colour is per selector).
    pub opacity: f64,
}

/// Page-wide strategy styles, so a strategy keeps its colour across every figure and file.
#[derive(Clone, Debug)]
pub struct Styles {
    entries: Vec<(Strategy, Style)>,
    show_local: bool,
}

const LOCAL_DASHES: [Option<&str>; 4] = [None, Some("7 3"), Some("2 2"), Some("9 3 2 3")];
const LOCAL_OPACITY: [f64; 4] = [1.0, 0.55, 0.3, 0.75];

impl Styles {
    /// Styles for strategies in first-seen order. With at most 8 strategies each gets its own
    /// colour; with more, when selectors fit in 8 colours, the colour follows the selector and the
    /// dash (and bar opacity) follows the local policy, which reads better than cycling dashes.
    pub fn new(strategies: &[Strategy]) -> Styles {
        let mut selectors: Vec<&str> = Vec::new();
        let mut locals: Vec<&str> = Vec::new();
        for s in strategies {
            if !selectors.contains(&s.selector.as_str()) {
                selectors.push(&s.selector);
            }
            if !locals.contains(&s.local.as_str()) {
                locals.push(&s.local);
            }
        }
        let by_selector = strategies.len() > CATEGORICAL.len() && selectors.len() <= CATEGORICAL.len();
        let entries = strategies
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let style = if by_selector {
                    let si = selectors.iter().position(|x| *x == s.selector).unwrap_or(0);
                    let li = locals.iter().position(|x| *x == s.local).unwrap_or(0);
                    Style {
                        color: CATEGORICAL[si],
                        dash: LOCAL_DASHES[li % LOCAL_DASHES.len()],
                        opacity: LOCAL_OPACITY[li % LOCAL_OPACITY.len()],
                    }
                } else {
                    let (color, dash) = series_style(i);
                    Style { color, dash, opacity: 1.0 }
                };
                (s.clone(), style)
            })
            .collect();
        Styles { entries, show_local: locals.len() > 1 }
    }

    /// The style of a strategy (black, solid for one never registered).
    pub fn get(&self, s: &Strategy) -> Style {
        self.entries.iter().find(|(x, _)| x == s).map(|(_, st)| *st).unwrap_or(Style {
            color: "#000000",
            dash: None,
            opacity: 1.0,
        })
    }

    /// The label of a strategy (with its local policy only when the page compares several).
    pub fn label(&self, s: &Strategy) -> String {
        s.label(self.show_local)
    }

    /// Legend entries drawn as lines.
    pub fn line_legend(&self, strategies: &[Strategy]) -> Vec<LegendItem> {
        strategies
            .iter()
            .map(|s| {
                let st = self.get(s);
                LegendItem {
                    label: self.label(s),
                    color: st.color.into(),
                    dash: st.dash.map(str::to_string),
                    mark: Mark::Line,
                }
            })
            .collect()
    }

    /// Legend entries drawn as filled squares (colour with opacity baked in as a blend on white).
    pub fn swatch_legend(&self, strategies: &[Strategy]) -> Vec<LegendItem> {
        strategies
            .iter()
            .map(|s| {
                let st = self.get(s);
                LegendItem { label: self.label(s), color: fill(st), dash: None, mark: Mark::Swatch }
            })
            .collect()
    }
}

/// The style's colour blended with white by its opacity, as `#rrggbb` (SVG fills stay opaque,
/// so overlapping marks and the PNG export look the same as in the browser).
pub fn fill(style: Style) -> String {
    blend(style.color, style.opacity)
}

/// `color` (`#rrggbb`) blended with white: `opacity` 1 keeps it, 0 gives white.
pub fn blend(color: &str, opacity: f64) -> String {
    let hex = color.trim_start_matches('#');
    let parse = |i: usize| hex.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()).unwrap_or(0) as f64;
    let o = opacity.clamp(0.0, 1.0);
    let mix = |c: f64| (255.0 - (255.0 - c) * o).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(parse(0)), mix(parse(2)), mix(parse(4)))
}

/// What every plot module needs: the view of one results file, its page-unique id and styles.
pub struct Ctx<'a> {
    /// Page-unique prefix for figure names (from the results file).
    pub id: String,
    /// The runs, grouped.
    pub view: &'a View<'a>,
    /// Page-wide strategy styles.
    pub styles: &'a Styles,
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;
    use crate::svg::balanced;

    /// Assert an SVG is balanced, standalone, and names every expected label.
    pub fn check_svg(svg: &str, labels: &[&str]) {
        balanced(svg).unwrap_or_else(|e| panic!("unbalanced SVG ({e}):\n{svg}"));
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        for l in labels {
            assert!(svg.contains(l), "missing {l:?}");
        }
    }

    /// Styles for every strategy of a view.
    pub fn styles(view: &View) -> Styles {
        Styles::new(&view.strategies)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strat(sel: &str, local: &str) -> Strategy {
        Strategy { selector: sel.into(), local: local.into() }
    }

    #[test]
    fn few_strategies_get_distinct_colours() {
        let s = Styles::new(&[strat("c3", "fcfs"), strat("lor", "fcfs")]);
        assert_ne!(s.get(&strat("c3", "fcfs")).color, s.get(&strat("lor", "fcfs")).color);
        assert_eq!(s.label(&strat("c3", "fcfs")), "c3");
        assert_eq!(s.get(&strat("x", "y")).color, "#000000");
    }

    #[test]
    fn many_strategies_colour_by_selector_and_dash_by_local() {
        let mut all = Vec::new();
        for sel in ["a", "b", "c", "d", "e"] {
            for local in ["fcfs", "sjf"] {
                all.push(strat(sel, local));
            }
        }
        let s = Styles::new(&all);
        let (a1, a2) = (s.get(&strat("a", "fcfs")), s.get(&strat("a", "sjf")));
        assert_eq!(a1.color, a2.color);
        assert_ne!(a1.dash, a2.dash);
        assert_ne!(s.get(&strat("b", "fcfs")).color, a1.color);
        assert_eq!(s.label(&strat("a", "sjf")), "a + sjf");
    }

    #[test]
    fn blending_with_white() {
        assert_eq!(blend("#000000", 1.0), "#000000");
        assert_eq!(blend("#000000", 0.0), "#ffffff");
        assert_eq!(blend("#0072B2", 0.5), "#80b9d9");
        assert_eq!(blend("bad", 1.0).len(), 7, "malformed colours do not panic");
    }
}
