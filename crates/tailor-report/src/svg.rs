//! A small SVG writer: a document with a white background and primitives that escape their text.

use crate::escape::escape;
use std::fmt::Write;

/// Font stack for every text element; DejaVu first because it is what the PNG export finds on Debian.
pub const FONT: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";

/// An SVG document being built, in pixel units.
#[derive(Clone, Debug)]
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
}

/// Horizontal anchor of a text element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// Text starts at x.
    Start,
    /// Text is centred on x.
    Middle,
    /// Text ends at x.
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// Stroke style of a line or polyline.
#[derive(Clone, Debug, PartialEq)]
pub struct Stroke {
    /// CSS colour.
    pub color: String,
    /// Width in pixels.
    pub width: f64,
    /// `stroke-dasharray` value, when dashed.
    pub dash: Option<String>,
}

impl Stroke {
    /// A solid stroke.
    pub fn solid(color: &str, width: f64) -> Stroke {
        Stroke { color: color.to_string(), width, dash: None }
    }

    /// A dashed stroke with the given `stroke-dasharray`.
    pub fn dashed(color: &str, width: f64, dash: &str) -> Stroke {
        Stroke { color: color.to_string(), width, dash: Some(dash.to_string()) }
    }

    fn attrs(&self) -> String {
        let mut s = format!(r#"stroke="{}" stroke-width="{}""#, escape(&self.color), num(self.width));
        if let Some(d) = &self.dash {
            let _ = write!(s, r#" stroke-dasharray="{}""#, escape(d));
        }
        s
    }
}

/// Round to 0.01 px: plenty for screens and keeps files small.
pub fn num(v: f64) -> String {
    let r = (v * 100.0).round() / 100.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r}")
    }
}

impl Svg {
    /// An empty document of `width` × `height` pixels with a white background.
    pub fn new(width: f64, height: f64) -> Svg {
        let mut svg = Svg { width, height, body: String::new() };
        svg.rect(0.0, 0.0, width, height, "#ffffff", None);
        svg
    }

    /// Width in pixels.
    pub fn width(&self) -> f64 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> f64 {
        self.height
    }

    /// A straight line.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &Stroke) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" {}/>"#,
            num(x1),
            num(y1),
            num(x2),
            num(y2),
            stroke.attrs()
        );
    }

    /// An open polyline through `points`, clipped to the clip path `clip` when given; skipped when
    /// it has fewer than two points.
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &Stroke, clip: Option<&str>) {
        if points.len() < 2 {
            return;
        }
        let pts: Vec<String> = points.iter().map(|(x, y)| format!("{},{}", num(*x), num(*y))).collect();
        let clip = clip.map(|c| format!(r#" clip-path="url(#{})""#, escape(c))).unwrap_or_default();
        let _ = writeln!(
            self.body,
            r#"<polyline points="{}" fill="none" {} stroke-linejoin="round"{clip}/>"#,
            pts.join(" "),
            stroke.attrs()
        );
    }

    /// A filled rectangle, optionally with a tooltip title.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, title: Option<&str>) {
        let open = format!(
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}""#,
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0)),
            escape(fill)
        );
        match title {
            Some(t) => {
                let _ = writeln!(self.body, "{open}><title>{}</title></rect>", escape(t));
            }
            None => {
                let _ = writeln!(self.body, "{open}/>");
            }
        }
    }

    /// An outlined, unfilled rectangle.
    pub fn frame(&mut self, x: f64, y: f64, w: f64, h: f64, stroke: &Stroke) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="none" {}/>"#,
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0)),
            stroke.attrs()
        );
    }

    /// A filled circle, optionally with a tooltip title.
    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, fill: &str, title: Option<&str>) {
        let open = format!(
            r##"<circle cx="{}" cy="{}" r="{}" fill="{}" fill-opacity="0.85" stroke="#ffffff" stroke-width="0.5""##,
            num(cx),
            num(cy),
            num(r),
            escape(fill)
        );
        match title {
            Some(t) => {
                let _ = writeln!(self.body, "{open}><title>{}</title></circle>", escape(t));
            }
            None => {
                let _ = writeln!(self.body, "{open}/>");
            }
        }
    }

    /// Text at (x, y) (baseline), escaped, in `size` px, optionally bold.
    pub fn text(&mut self, x: f64, y: f64, text: &str, size: f64, anchor: Anchor, bold: bool) {
        self.text_styled(x, y, text, size, anchor, bold, "#222222", 0.0);
    }

    /// Text with colour and rotation (degrees, around its anchor point).
    #[allow(clippy::too_many_arguments)]
    pub fn text_styled(
        &mut self,
        x: f64,
        y: f64,
        text: &str,
        size: f64,
        anchor: Anchor,
        bold: bool,
        color: &str,
        rotate: f64,
    ) {
        let weight = if bold { r#" font-weight="bold""# } else { "" };
        let rot = if rotate != 0.0 {
            format!(r#" transform="rotate({} {} {})""#, num(rotate), num(x), num(y))
        } else {
            String::new()
        };
        let _ = writeln!(
            self.body,
            r#"<text x="{}" y="{}" font-size="{}" text-anchor="{}" fill="{}"{weight}{rot}>{}</text>"#,
            num(x),
            num(y),
            num(size),
            anchor.as_str(),
            escape(color),
            escape(text)
        );
    }

    /// Define a rectangular clip path named `id` (for lines that leave the plot area).
    pub fn clip_rect(&mut self, id: &str, x: f64, y: f64, w: f64, h: f64) {
        let _ = writeln!(
            self.body,
            r#"<defs><clipPath id="{}"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath></defs>"#,
            escape(id),
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0))
        );
    }

    /// The finished document as standalone SVG text (also valid inline in HTML).
    pub fn finish(self) -> String {
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{font}" role="img">
{body}</svg>
"#,
            w = num(self.width),
            h = num(self.height),
            font = FONT,
            body = self.body
        )
    }
}

/// Height of the band [`with_mark`] adds above a figure.
pub const MARK_BAND: f64 = 22.0;

/// A finished document (as [`Svg::finish`] writes it) with a red band and `text` in white on
/// top, the figure moved down beneath it: a mark drawn into the image, so a PNG of the figure
/// carries it too. A document it cannot read is returned unchanged.
pub fn with_mark(doc: &str, text: &str) -> String {
    let attr = |tag: &str, name: &str| -> Option<f64> {
        let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        tag[start..].split('"').next()?.parse().ok()
    };
    let Some(open_end) = doc.find('>') else { return doc.to_string() };
    let (open, rest) = (&doc[..open_end], &doc[open_end + 1..]);
    let (Some(w), Some(h), Some(close)) = (attr(open, "width"), attr(open, "height"), rest.rfind("</svg>")) else {
        return doc.to_string();
    };
    let mut band = Svg::new(w, h + MARK_BAND);
    band.rect(0.0, 0.0, w, MARK_BAND, "#b00020", None);
    band.text_styled(8.0, MARK_BAND - 7.0, text, 12.0, Anchor::Start, true, "#ffffff", 0.0);
    let _ = writeln!(band.body, r#"<g transform="translate(0 {})">{}</g>"#, num(MARK_BAND), &rest[..close]);
    band.finish()
}

/// Check that `text` is well-formed enough for our own output: every tag closes in order.
/// Used by tests across the crate; accepts self-closing tags and skips `<?`/`<!` declarations.
pub fn balanced(text: &str) -> Result<(), String> {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        rest = &rest[start + 1..];
        let end = rest.find('>').ok_or("unterminated tag")?;
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') || tag.starts_with('?') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().ok_or(format!("close </{name}> without open"))?;
            if open != name.trim() {
                return Err(format!("<{open}> closed by </{name}>"));
            }
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().unwrap_or("").to_string();
            // HTML void elements never close
            if !matches!(name.as_str(), "meta" | "br" | "hr" | "img" | "link" | "input" | "col") {
                stack.push(name);
            }
        }
    }
    match stack.pop() {
        Some(open) => Err(format!("<{open}> never closed")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_is_balanced_and_escapes_text() {
        let mut s = Svg::new(100.0, 50.0);
        s.text(10.0, 10.0, "a<b & \"c\"", 12.0, Anchor::Start, true);
        s.rect(0.0, 0.0, 5.0, 5.0, "#000", Some("tip <x>"));
        s.polyline(&[(0.0, 0.0), (1.234567, 2.0)], &Stroke::dashed("#f00", 2.0, "6 3"), Some("c1"));
        s.polyline(&[(0.0, 0.0)], &Stroke::solid("#f00", 2.0), None);
        s.clip_rect("c1", 0.0, 0.0, 10.0, 10.0);
        let out = s.finish();
        balanced(&out).unwrap();
        assert!(out.contains("a&lt;b &amp; &quot;c&quot;"));
        assert!(out.contains("tip &lt;x&gt;"));
        assert!(out.contains("1.23,2"));
        assert!(out.contains(r#"stroke-dasharray="6 3""#));
        assert_eq!(out.matches("<polyline").count(), 1, "single-point lines are skipped");
    }

    #[test]
    fn balance_check_catches_errors() {
        assert!(balanced("<a><b></b></a>").is_ok());
        assert!(balanced("<a><b></a></b>").is_err());
        assert!(balanced("<a>").is_err());
        assert!(balanced("</a>").is_err());
        assert!(balanced("<!DOCTYPE html><meta charset=\"utf-8\"><p>x</p>").is_ok());
    }

    #[test]
    fn a_mark_is_a_red_band_above_the_figure() {
        let mut s = Svg::new(100.0, 50.0);
        s.text(10.0, 10.0, "plot", 12.0, Anchor::Start, false);
        let marked = with_mark(&s.finish(), "INVALID <runs>");
        balanced(&marked).unwrap();
        assert!(marked
            .starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="72" viewBox="0 0 100 72""#));
        assert!(marked.contains(r##"fill="#b00020""##) && marked.contains(">INVALID &lt;runs&gt;</text>"));
        assert!(marked.contains(r#"<g transform="translate(0 22)">"#) && marked.contains(">plot</text>"));
        assert_eq!(with_mark("not svg", "x"), "not svg");
    }

    #[test]
    fn numbers_are_rounded() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(1.006), "1.01");
        assert_eq!(num(-2.5), "-2.5");
    }
}
