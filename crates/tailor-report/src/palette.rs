//! Colour-blind-safe colours: Okabe–Ito for categories, viridis for heatmaps.

/// Okabe & Ito's eight colours, reordered so the first ones contrast most on white
/// (yellow, the weakest on white, comes last).
pub const CATEGORICAL: [&str; 8] =
    ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442"];

/// Dash patterns cycled after the colours run out, so the 9th strategy is still distinct.
const DASHES: [Option<&str>; 3] = [None, Some("7 3"), Some("2 2")];

/// The colour and dash of the `i`-th series in a page-wide order.
pub fn series_style(i: usize) -> (&'static str, Option<&'static str>) {
    (CATEGORICAL[i % CATEGORICAL.len()], DASHES[(i / CATEGORICAL.len()) % DASHES.len()])
}

/// Viridis sampled at nine stops (from matplotlib's published table).
const VIRIDIS: [(u8, u8, u8); 9] = [
    (68, 1, 84),
    (71, 44, 122),
    (59, 81, 139),
    (44, 113, 142),
    (33, 144, 141),
    (39, 173, 129),
    (92, 200, 99),
    (170, 220, 50),
    (253, 231, 37),
];

/// A viridis colour for `t` in [0, 1] (clamped; NaN maps to the low end), as `#rrggbb`.
pub fn viridis(t: f64) -> String {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let pos = t * (VIRIDIS.len() - 1) as f64;
    let i = (pos.floor() as usize).min(VIRIDIS.len() - 2);
    let f = pos - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |x: u8, y: u8| (x as f64 + (y as f64 - x as f64) * f).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_styles_cycle_colours_then_dashes() {
        assert_eq!(series_style(0), ("#0072B2", None));
        assert_eq!(series_style(8), ("#0072B2", Some("7 3")));
        assert_eq!(series_style(17).1, Some("2 2"));
    }

    #[test]
    fn viridis_ends_and_clamps() {
        assert_eq!(viridis(0.0), "#440154");
        assert_eq!(viridis(1.0), "#fde725");
        assert_eq!(viridis(2.0), "#fde725");
        assert_eq!(viridis(f64::NAN), "#440154");
        assert_eq!(viridis(0.5), "#21908d");
    }
}
