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
    (ms * MS as f64).round().max(0.0) as Nanos
}

/// Nanoseconds to fractional milliseconds, the unit reports use.
pub fn to_ms(ns: Nanos) -> f64 {
    ns as f64 / MS as f64
}
