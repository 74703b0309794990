//! The emulation knobs' names and allowed ranges, and the check of a value against them: what
//! `TAILOR.SET` (`emulation.rs`) and the configuration (`config.rs`) both accept.

/// The knobs' names as `TAILOR.SET` accepts them.
pub const KNOBS: &[&str] = &[
    "alpha_ns_per_byte",
    "beta_us",
    "fluct_factor",
    "fluct_period_ms",
    "stall_every_ms",
    "stall_ms",
    "shared_capacity",
    "hang",
    "coordinator_delay_ms",
    "workers",
];

/// A knob's allowed values: `(name, least, most, whole numbers only)`. The bounds keep every
/// product in nanoseconds far inside `u64` (a day is 8.64e13 ns).
pub const RANGES: &[(&str, f64, f64, bool)] = &[
    ("alpha_ns_per_byte", 0.0, 1e6, false),
    ("beta_us", 0.0, 60e6, false),
    ("fluct_factor", 1.0, 1000.0, false),
    ("fluct_period_ms", 0.0, DAY_MS, true),
    ("stall_every_ms", 0.0, DAY_MS, true),
    ("stall_ms", 0.0, DAY_MS, true),
    ("shared_capacity", 0.0, 4096.0, true),
    ("hang", 0.0, 1.0, true),
    ("coordinator_delay_ms", 0.0, 60_000.0, false),
];

/// Longest period or stall a knob may ask for: one day, in ms.
const DAY_MS: f64 = 86_400_000.0;

/// Parse `value` for `knob` and check it against the knob's range; errors name both.
pub fn check(knob: &str, value: &str) -> Result<f64, String> {
    let Some(&(_, least, most, whole)) = RANGES.iter().find(|r| r.0 == knob) else {
        return Err(format!("unknown knob '{knob}' (known: {})", KNOBS.join(", ")));
    };
    let kind = if whole { "an integer" } else { "a number" };
    let allowed = || format!("invalid value '{value}' for knob '{knob}': must be {kind} in {least}..={most}");
    let num: f64 = value.trim().parse().map_err(|_| allowed())?;
    if !num.is_finite() || num < least || num > most || (whole && num.fract() != 0.0) {
        return Err(allowed());
    }
    Ok(num)
}
