//! Scales map data values to pixel positions and choose readable tick values.

/// A tick on an axis: its data value and whether it carries a label (minor log ticks do not).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tick {
    /// Data value of the tick.
    pub value: f64,
    /// Whether the tick is labelled and gets a grid line.
    pub major: bool,
}

/// A mapping from a data domain to a pixel range, linear or base-10 logarithmic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    d0: f64,
    d1: f64,
    r0: f64,
    r1: f64,
    log: bool,
}

impl Scale {
    /// A linear scale from `[d0, d1]` to `[r0, r1]`; a degenerate domain is widened so it maps.
    pub fn linear(d0: f64, d1: f64, r0: f64, r1: f64) -> Scale {
        let (d0, d1) = widen(d0, d1, false);
        Scale { d0, d1, r0, r1, log: false }
    }

    /// A linear scale whose domain is extended outwards to round tick values.
    pub fn linear_nice(d0: f64, d1: f64, r0: f64, r1: f64) -> Scale {
        let (d0, d1) = widen(d0, d1, false);
        let step = nice_step((d1 - d0) / 5.0);
        Scale::linear((d0 / step).floor() * step, (d1 / step).ceil() * step, r0, r1)
    }

    /// A log scale from `[d0, d1]` (both > 0; non-positive or reversed input is repaired) to `[r0, r1]`.
    pub fn log(d0: f64, d1: f64, r0: f64, r1: f64) -> Scale {
        let (d0, d1) = widen(d0, d1, true);
        Scale { d0, d1, r0, r1, log: true }
    }

    /// A log scale whose domain is extended outwards to the nearest 1, 2 or 5 times a power of
    /// ten: whole decades would leave up to 90% of an axis empty (data 1..120 on an axis to 1000).
    pub fn log_nice(d0: f64, d1: f64, r0: f64, r1: f64) -> Scale {
        let (d0, d1) = widen(d0, d1, true);
        Scale::log(round_125(d0, false), round_125(d1, true), r0, r1)
    }

    /// Whether the scale is logarithmic.
    pub fn is_log(&self) -> bool {
        self.log
    }

    /// The data domain `(low, high)`.
    pub fn domain(&self) -> (f64, f64) {
        (self.d0, self.d1)
    }

    /// The pixel range `(start, end)`.
    pub fn range(&self) -> (f64, f64) {
        (self.r0, self.r1)
    }

    /// Whether `v` can be placed on this scale (finite, and positive on a log scale).
    pub fn accepts(&self, v: f64) -> bool {
        v.is_finite() && (!self.log || v > 0.0)
    }

    /// Pixel position of `v`; values outside the domain map outside the range (clip when drawing).
    pub fn map(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.max(f64::MIN_POSITIVE).log10() - self.d0.log10()) / (self.d1.log10() - self.d0.log10())
        } else {
            (v - self.d0) / (self.d1 - self.d0)
        };
        self.r0 + t * (self.r1 - self.r0)
    }

    /// Pixel position of `v`, clamped into the range.
    pub fn map_clamped(&self, v: f64) -> f64 {
        let (lo, hi) = if self.r0 <= self.r1 { (self.r0, self.r1) } else { (self.r1, self.r0) };
        self.map(v).clamp(lo, hi)
    }

    /// Ticks inside the domain: about five round values on a linear scale; decades (plus 2…9
    /// minor ticks, or 2 and 5 labelled when the span is short) on a log scale.
    pub fn ticks(&self) -> Vec<Tick> {
        if self.log {
            log_ticks(self.d0, self.d1)
        } else {
            linear_ticks(self.d0, self.d1)
        }
    }
}

/// Repair a domain so it can be mapped: ordered, finite, non-empty, and positive for log scales.
fn widen(d0: f64, d1: f64, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = if d0 <= d1 { (d0, d1) } else { (d1, d0) };
    if !lo.is_finite() || !hi.is_finite() {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        if hi <= 0.0 {
            return (1.0, 10.0);
        }
        if lo <= 0.0 {
            lo = hi / 1000.0;
        }
        if hi / lo < 1.000001 {
            return (lo / 2.0, hi * 2.0);
        }
    } else if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        lo -= pad;
        hi += pad;
    }
    (lo, hi)
}

/// `v` (> 0) rounded down (or `up`) to 1, 2 or 5 times a power of ten.
fn round_125(v: f64, up: bool) -> f64 {
    let pow = 10f64.powf(v.log10().floor());
    let steps = [1.0, 2.0, 5.0, 10.0];
    let f = v / pow;
    let m = if up {
        steps.iter().copied().find(|m| *m >= f * (1.0 - 1e-9)).unwrap_or(10.0)
    } else {
        steps.iter().copied().rev().find(|m| *m <= f * (1.0 + 1e-9)).unwrap_or(1.0)
    };
    m * pow
}

/// The round step (1, 2 or 5 times a power of ten) nearest above `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let pow = 10f64.powf(raw.log10().floor());
    let f = raw / pow;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * pow
}

fn linear_ticks(d0: f64, d1: f64) -> Vec<Tick> {
    let step = nice_step((d1 - d0) / 5.0);
    let first = (d0 / step - 1e-9).ceil() as i64;
    let last = (d1 / step + 1e-9).floor() as i64;
    (first..=last)
        .map(|i| {
            // snap float noise (0.30000000000000004) to the step's decimals
            let decimals = (-step.log10().floor()).max(0.0) as i32;
            let unit = 10f64.powi(decimals);
            let v = (i as f64 * step * unit).round() / unit;
            Tick { value: if v == 0.0 { 0.0 } else { v }, major: true }
        })
        .collect()
}

fn log_ticks(d0: f64, d1: f64) -> Vec<Tick> {
    let lo = d0.log10();
    let hi = d1.log10();
    let inside = |v: f64| v >= d0 * (1.0 - 1e-9) && v <= d1 * (1.0 + 1e-9);
    let span = hi - lo;
    let first = lo.floor() as i32;
    let last = hi.ceil() as i32;
    let mut ticks = Vec::new();
    if span <= 2.2 {
        // up to about two decades: label 1, 2, 5 multiples and mark the rest as minor
        for e in first..=last {
            let p = 10f64.powi(e);
            for m in 1..=9 {
                let v = m as f64 * p;
                if inside(v) {
                    ticks.push(Tick { value: v, major: matches!(m, 1 | 2 | 5) });
                }
            }
        }
        if ticks.iter().filter(|t| t.major).count() < 2 {
            // too narrow even for that: fall back to linear-looking round values
            return linear_ticks(d0, d1);
        }
        return ticks;
    }
    // many decades: label every other (or third) one so labels don't collide
    let every = if span > 12.0 {
        3
    } else if span > 7.0 {
        2
    } else {
        1
    };
    for e in first..=last {
        let p = 10f64.powi(e);
        if inside(p) {
            ticks.push(Tick { value: p, major: e.rem_euclid(every) == 0 });
        }
        if span <= 7.0 {
            for m in 2..=9 {
                let v = m as f64 * p;
                if inside(v) {
                    ticks.push(Tick { value: v, major: false });
                }
            }
        }
    }
    ticks
}

/// A short human label for a tick value: no trailing zeros, `1e-4` style for tiny or huge values.
pub fn format_tick(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        let e = a.log10().floor() as i32;
        let m = v / 10f64.powi(e);
        if (m.abs() - 1.0).abs() < 1e-9 {
            return format!("{}1e{e}", if v < 0.0 { "-" } else { "" });
        }
        return format!("{}e{e}", trim(format!("{m:.2}")));
    }
    if a >= 1000.0 {
        // thousands read better with a k suffix on crowded axes
        if (a / 1000.0).fract().abs() < 1e-9 && a < 1e6 {
            return format!("{}k", trim(format!("{:.3}", v / 1000.0)));
        }
    }
    trim(format!("{v:.4}"))
}

/// A number for tables and tooltips: 3 significant digits, thousands without decimals.
pub fn format_value(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 || a == 0.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(t: &[Tick]) -> Vec<f64> {
        t.iter().map(|t| t.value).collect()
    }

    #[test]
    fn linear_maps_ends_and_middle() {
        let s = Scale::linear(0.0, 10.0, 100.0, 200.0);
        assert_eq!(s.map(0.0), 100.0);
        assert_eq!(s.map(10.0), 200.0);
        assert_eq!(s.map(5.0), 150.0);
        // inverted pixel range, as on a y axis
        let y = Scale::linear(0.0, 1.0, 300.0, 0.0);
        assert_eq!(y.map(0.25), 225.0);
        assert_eq!(y.map_clamped(2.0), 0.0);
    }

    #[test]
    fn linear_ticks_are_round() {
        assert_eq!(values(&Scale::linear(0.0, 10.0, 0.0, 1.0).ticks()), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(values(&Scale::linear(0.13, 0.61, 0.0, 1.0).ticks()), [0.2, 0.3, 0.4, 0.5, 0.6]);
        assert_eq!(values(&Scale::linear(-3.0, 3.0, 0.0, 1.0).ticks()), [-2.0, 0.0, 2.0]);
        assert_eq!(values(&Scale::linear(0.0, 0.0007, 0.0, 1.0).ticks()), [0.0, 0.0002, 0.0004, 0.0006]);
        let nice = Scale::linear_nice(3.2, 97.0, 0.0, 1.0);
        assert_eq!(nice.domain(), (0.0, 100.0));
    }

    #[test]
    fn degenerate_domains_do_not_break() {
        let s = Scale::linear(5.0, 5.0, 0.0, 100.0);
        assert!(s.map(5.0).is_finite());
        assert_eq!(s.map(5.0), 50.0);
        let l = Scale::log(0.0, 0.0, 0.0, 100.0);
        assert_eq!(l.domain(), (1.0, 10.0));
        let l = Scale::log(-1.0, 100.0, 0.0, 100.0);
        assert_eq!(l.domain(), (0.1, 100.0));
        assert!(!l.accepts(0.0) && !l.accepts(f64::NAN) && l.accepts(1e-9));
        let n = Scale::linear(f64::NAN, 1.0, 0.0, 1.0);
        assert_eq!(n.domain(), (0.0, 1.0));
    }

    #[test]
    fn log_maps_decades_evenly() {
        let s = Scale::log(1.0, 1000.0, 0.0, 300.0);
        assert!((s.map(10.0) - 100.0).abs() < 1e-9);
        assert!((s.map(100.0) - 200.0).abs() < 1e-9);
        let n = Scale::log_nice(0.3, 420.0, 0.0, 1.0);
        assert_eq!(n.domain(), (0.2, 500.0));
        let n = Scale::log_nice(1.0, 100.0, 0.0, 1.0);
        assert_eq!(n.domain(), (1.0, 100.0));
    }

    #[test]
    fn log_ticks_mark_decades_major_and_multiples_minor() {
        let t = Scale::log(1.0, 1000.0, 0.0, 1.0).ticks();
        let major: Vec<f64> = t.iter().filter(|t| t.major).map(|t| t.value).collect();
        assert_eq!(major, [1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(t.iter().filter(|t| !t.major).count(), 24);
        assert!(t.iter().any(|t| (t.value - 50.0).abs() < 1e-9 && !t.major));
        // short spans label 1, 2, 5
        let short = Scale::log(1.5, 9.0, 0.0, 1.0).ticks();
        let major: Vec<f64> = short.iter().filter(|t| t.major).map(|t| t.value).collect();
        assert_eq!(major, [2.0, 5.0]);
        let two = Scale::log(40.0, 700.0, 0.0, 1.0).ticks();
        let major: Vec<f64> = two.iter().filter(|t| t.major).map(|t| t.value).collect();
        assert_eq!(major, [50.0, 100.0, 200.0, 500.0]);
        // long spans thin the labels out
        let long = Scale::log(1e-10, 1.0, 0.0, 1.0).ticks();
        assert_eq!(long.len(), 11);
        assert_eq!(long.iter().filter(|t| t.major).count(), 6);
        // tail fractions, as on the 1-F axis
        let tail = Scale::log(1e-4, 1.0, 0.0, 1.0).ticks();
        let major: Vec<f64> = tail.iter().filter(|t| t.major).map(|t| t.value).collect();
        assert_eq!(major.len(), 5);
        assert!((major[0] - 1e-4).abs() < 1e-15);
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(format_tick(0.0), "0");
        assert_eq!(format_tick(2.5), "2.5");
        assert_eq!(format_tick(10.0), "10");
        assert_eq!(format_tick(0.001), "0.001");
        assert_eq!(format_tick(0.0001), "1e-4");
        assert_eq!(format_tick(20000.0), "20k");
        assert_eq!(format_tick(1e7), "1e7");
        assert_eq!(format_tick(0.30000000000000004), "0.3");
        assert_eq!(format_value(1234.56), "1235");
        assert_eq!(format_value(12.345), "12.35");
        assert_eq!(format_value(f64::NAN), "–");
    }
}

/// Equal bands for categories (bars, strips) across a pixel range, with padding between them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Band {
    r0: f64,
    step: f64,
    inner: f64,
}

impl Band {
    /// `n` bands across `[r0, r1]`; `padding` is the fraction of each step left empty (0..1).
    pub fn new(n: usize, r0: f64, r1: f64, padding: f64) -> Band {
        let step = (r1 - r0) / n.max(1) as f64;
        let padding = padding.clamp(0.0, 0.95);
        Band { r0: r0 + step * padding / 2.0, step, inner: step * (1.0 - padding) }
    }

    /// Left edge of band `i`.
    pub fn start(&self, i: usize) -> f64 {
        self.r0 + i as f64 * self.step
    }

    /// Width of a band (without padding).
    pub fn width(&self) -> f64 {
        self.inner
    }

    /// Centre of band `i`.
    pub fn center(&self, i: usize) -> f64 {
        self.start(i) + self.inner / 2.0
    }
}

#[cfg(test)]
mod band_tests {
    use super::*;

    #[test]
    fn bands_split_the_range() {
        let b = Band::new(4, 0.0, 400.0, 0.2);
        assert_eq!(b.width(), 80.0);
        assert_eq!(b.start(0), 10.0);
        assert_eq!(b.center(3), 350.0);
        let one = Band::new(0, 0.0, 100.0, 0.0);
        assert_eq!(one.width(), 100.0);
    }
}
