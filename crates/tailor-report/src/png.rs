//! PNG export of the figures with resvg, using system fonts when there are any.

use crate::error::ReportError;
use crate::plots::Plot;
use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg::{fontdb, Options, Tree};
use std::path::{Path, PathBuf};

/// Pixels per SVG unit: 2 gives crisp text on high-density screens and in documents.
const SCALE: f32 = 2.0;

/// What an export wrote and what it had to warn about.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PngExport {
    /// Files written, in plot order.
    pub written: Vec<PathBuf>,
    /// Warnings (e.g. no fonts, so no text in the images).
    pub warnings: Vec<String>,
}

/// Load the system fonts, preferring DejaVu Sans for the generic sans-serif family.
/// Returns the database and a warning when it is empty.
pub fn system_fonts() -> (fontdb::Database, Option<String>) {
    let mut db = fontdb::Database::new();
    db.load_system_fonts();
    let warning = if db.is_empty() {
        Some(
            "no system fonts found: PNG plots are written without text (install a font package such as \
             fonts-dejavu-core)"
                .to_string(),
        )
    } else {
        let families: Vec<String> = db.faces().flat_map(|f| f.families.iter().map(|(name, _)| name.clone())).collect();
        let pick = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans"]
            .iter()
            .find(|want| families.iter().any(|f| f == *want))
            .map(|s| s.to_string())
            .or_else(|| families.first().cloned());
        if let Some(family) = pick {
            db.set_sans_serif_family(family);
        }
        None
    };
    (db, warning)
}

/// Rasterise one SVG document to PNG bytes with the given fonts (text is dropped without fonts).
pub fn render_png(svg: &str, fonts: &fontdb::Database) -> Result<Vec<u8>, String> {
    let mut opt = Options::default();
    *opt.fontdb_mut() = fonts.clone();
    opt.font_family = "sans-serif".into();
    let tree = Tree::from_str(svg, &opt).map_err(|e| e.to_string())?;
    let size = tree.size();
    let w = (size.width() * SCALE).ceil() as u32;
    let h = (size.height() * SCALE).ceil() as u32;
    let mut pixmap = Pixmap::new(w.max(1), h.max(1)).ok_or_else(|| format!("cannot allocate a {w}x{h} image"))?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(&tree, Transform::from_scale(SCALE, SCALE), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| e.to_string())
}

/// Write `dir/<name>.png` for every plot, creating `dir`.
pub fn write_pngs(plots: &[Plot], dir: &Path) -> Result<PngExport, ReportError> {
    let (fonts, warning) = system_fonts();
    write_pngs_with(plots, dir, &fonts, warning)
}

/// [`write_pngs`] with a given font database (tests use an empty one to check the fallback).
pub fn write_pngs_with(
    plots: &[Plot],
    dir: &Path,
    fonts: &fontdb::Database,
    warning: Option<String>,
) -> Result<PngExport, ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Write { path: dir.to_path_buf(), source })?;
    let mut export = PngExport { written: Vec::new(), warnings: warning.into_iter().collect() };
    for plot in plots {
        let bytes =
            render_png(&plot.svg, fonts).map_err(|reason| ReportError::Png { name: plot.name.clone(), reason })?;
        let path = dir.join(format!("{}.png", plot.name));
        std::fs::write(&path, bytes).map_err(|source| ReportError::Write { path: path.clone(), source })?;
        export.written.push(path);
    }
    Ok(export)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::{line_legend, Figure};
    use crate::svg::Stroke;

    const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];

    fn plot() -> Plot {
        let mut f = Figure::new("p", "A plot", &line_legend(&[("c3".into(), "#0072B2", None)]));
        let x = f.x_linear(0.0, 10.0);
        let y = f.y_linear(0.0, 1.0);
        f.axes(&x, &y, "x", "y");
        f.series(&x, &y, &[(0.0, 0.0), (10.0, 1.0)], &Stroke::solid("#0072B2", 2.0));
        Plot { name: "test-plot".into(), title: "A plot".into(), svg: f.finish() }
    }

    #[test]
    fn renders_png_without_fonts() {
        let dir = std::env::temp_dir().join(format!("tailor-report-png-{}", std::process::id()));
        let warning = Some("no fonts".to_string());
        let export = write_pngs_with(&[plot()], &dir, &fontdb::Database::new(), warning).unwrap();
        assert_eq!(export.warnings, ["no fonts"]);
        let bytes = std::fs::read(&export.written[0]).unwrap();
        assert_eq!(bytes[..8], PNG_SIGNATURE);
        assert!(export.written[0].ends_with("test-plot.png"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn renders_png_with_system_fonts_when_present() {
        let (fonts, warning) = system_fonts();
        assert_eq!(warning.is_some(), fonts.is_empty());
        let bytes = render_png(&plot().svg, &fonts).unwrap();
        assert_eq!(bytes[..8], PNG_SIGNATURE);
    }

    #[test]
    fn the_invalid_mark_survives_rasterising() {
        let marked = crate::svg::with_mark(&plot().svg, "INVALID runs included (1 of 2 live runs invalid)");
        let png = Pixmap::decode_png(&render_png(&marked, &fontdb::Database::new()).unwrap()).unwrap();
        let plain = Pixmap::decode_png(&render_png(&plot().svg, &fontdb::Database::new()).unwrap()).unwrap();
        assert_eq!(
            png.height(),
            plain.height() + (crate::svg::MARK_BAND as f32 * SCALE) as u32,
            "the band is added on top"
        );
        // a pixel at the band's right end, away from its text: the mark's red
        let px = png.pixel(png.width() - 4, 4).unwrap();
        assert_eq!((px.red(), px.green(), px.blue()), (0xb0, 0x00, 0x20));
    }

    #[test]
    fn invalid_svg_is_an_error() {
        assert!(render_png("<svg", &fontdb::Database::new()).is_err());
    }
}
