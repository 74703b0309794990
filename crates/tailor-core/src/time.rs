//! Time is an integer count of nanoseconds supplied by the engine.

/// Nanoseconds since an engine-chosen origin (virtual or monotonic).
pub type Nanos = u64;

/// One microsecond.
pub const US: Nanos = 1_000;
/// One millisecond.
pub const MS: Nanos = 1_000_000;
/// One second.
pub const SEC: Nanos = 1_000_000_000;

/// Milliseconds (possibly fractional) to nanoseconds, rounded to the nearest nanosecond.
pub fn from_ms(ms: f64) -> Nanos {
    round_nonneg(ms * MS as f64).max(0.0) as Nanos
}

/// `x.round()` (halves away from zero) for `x >= 0`, infinite or NaN; for `x < 0` a value in
/// `x.round()..=0`, which callers that clamp at zero cannot tell from `x.round()`.
///
/// Why not `f64::round`: on baseline x86-64 it is a libm call, and the simulator rounds several
/// times per request (nominal and real service times, arrival gaps, sizes, histogram values).
/// Exact: below 2^52 the truncation `t` and the fraction `x - t` are exact, and above it every
/// float is an integer.
#[inline]
pub fn round_nonneg(x: f64) -> f64 {
    const INTEGRAL: f64 = (1u64 << 52) as f64;
    if x.is_nan() || x >= INTEGRAL {
        return x;
    }
    // through i64, not u64: both conversions are then single instructions
    let t = x as i64 as f64;
    if x - t >= 0.5 {
        t + 1.0
    } else {
        t
    }
}

/// Nanoseconds to fractional milliseconds, the unit reports use.
pub fn to_ms(ns: Nanos) -> f64 {
    ns as f64 / MS as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_nonneg_is_round_for_non_negative_values() {
        let edges =
            [0.0, 0.49999999999999994, 0.5, 1.5, 2.5, 2.4999999999999996, 4503599627370495.5, 4503599627370497.0];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let random = (0..100_000).map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // uniform in [0, 1) times 10^0 ..= 10^17, across the exact and the integral range
            (x >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi(i % 18)
        });
        for v in edges.into_iter().chain(random).chain([f64::INFINITY, 1e300]) {
            assert_eq!(round_nonneg(v).to_bits(), v.round().to_bits(), "{v}");
        }
        assert!(round_nonneg(f64::NAN).is_nan());
        assert_eq!(round_nonneg(-2.7), -2.0);
    }
}
