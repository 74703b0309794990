//! Emulation knobs: an emulated service-time model, bimodal fluctuation, stall injection, a
//! gray failure (`hang`: jobs wait until it is cleared while the node answers everything else)
//! and a slow coordinator (`coordinator_delay_ms`: each request the node coordinates waits that
//! long first), changeable at runtime (`TAILOR.SET knob value`).
//!
//! Every knob has an allowed range ([`RANGES`]), checked on `TAILOR.SET` and in the config, so
//! no value a client sends can make the workers' arithmetic overflow; the arithmetic saturates
//! besides, so even an unchecked value could not panic a worker.

use crate::config::EmulationConfig;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tailor_core::time::{Nanos, MS};

pub use crate::knobs::{check, KNOBS, RANGES};

/// Live emulation settings of one node (lock-free: workers read them on every request).
#[derive(Debug)]
pub struct Emulation {
    alpha: AtomicU64,
    beta_us: AtomicU64,
    fluct_factor: AtomicU64,
    fluct_period_ms: AtomicU64,
    stall_every_ms: AtomicU64,
    stall_ms: AtomicU64,
    shared_capacity: AtomicU64,
    hang: AtomicU64,
    coordinator_delay_ms: AtomicU64,
    seed: u64,
}

fn f(a: &AtomicU64) -> f64 {
    f64::from_bits(a.load(Ordering::Relaxed))
}

impl Emulation {
    /// Settings from the config; `seed` decorrelates nodes' fluctuation draws.
    pub fn new(cfg: &EmulationConfig, seed: u64) -> Emulation {
        Emulation {
            alpha: AtomicU64::new(cfg.alpha_ns_per_byte.to_bits()),
            beta_us: AtomicU64::new(cfg.beta_us.to_bits()),
            fluct_factor: AtomicU64::new(cfg.fluct_factor.to_bits()),
            fluct_period_ms: AtomicU64::new(cfg.fluct_period_ms),
            stall_every_ms: AtomicU64::new(cfg.stall_every_ms),
            stall_ms: AtomicU64::new(cfg.stall_ms),
            shared_capacity: AtomicU64::new(cfg.shared_capacity),
            hang: AtomicU64::new(0),
            coordinator_delay_ms: AtomicU64::new(0f64.to_bits()),
            seed,
        }
    }

    /// Set a knob (not `workers`, which the replica owns) after checking it against its range;
    /// errors name the knob and the allowed values.
    pub fn set(&self, knob: &str, value: &str) -> Result<(), String> {
        let num = check(knob, value)?;
        let cell = match knob {
            "alpha_ns_per_byte" => &self.alpha,
            "beta_us" => &self.beta_us,
            "fluct_factor" => &self.fluct_factor,
            "fluct_period_ms" => &self.fluct_period_ms,
            "stall_every_ms" => &self.stall_every_ms,
            "stall_ms" => &self.stall_ms,
            "shared_capacity" => &self.shared_capacity,
            "hang" => &self.hang,
            "coordinator_delay_ms" => &self.coordinator_delay_ms,
            _ => unreachable!("check() knows only these knobs"),
        };
        let floating = matches!(knob, "alpha_ns_per_byte" | "beta_us" | "fluct_factor" | "coordinator_delay_ms");
        cell.store(if floating { num.to_bits() } else { num as u64 }, Ordering::Relaxed);
        Ok(())
    }

    /// A knob's current value as text.
    pub fn get(&self, knob: &str) -> Option<String> {
        Some(match knob {
            "alpha_ns_per_byte" => f(&self.alpha).to_string(),
            "beta_us" => f(&self.beta_us).to_string(),
            "fluct_factor" => f(&self.fluct_factor).to_string(),
            "fluct_period_ms" => self.fluct_period_ms.load(Ordering::Relaxed).to_string(),
            "stall_every_ms" => self.stall_every_ms.load(Ordering::Relaxed).to_string(),
            "stall_ms" => self.stall_ms.load(Ordering::Relaxed).to_string(),
            "shared_capacity" => self.shared_capacity.load(Ordering::Relaxed).to_string(),
            "hang" => self.hang.load(Ordering::Relaxed).to_string(),
            "coordinator_delay_ms" => f(&self.coordinator_delay_ms).to_string(),
            _ => return None,
        })
    }

    /// The emulated model `p = alpha * size + beta` as the size oracle's service model (`None`
    /// when off), so hints carry each request's own estimate (EFT).
    pub fn service_model(&self) -> Option<tailor_core::oracle::size::ServiceModel> {
        let (alpha, beta_us) = (f(&self.alpha), f(&self.beta_us));
        (alpha > 0.0 || beta_us > 0.0).then(|| tailor_core::oracle::size::ServiceModel {
            alpha_ns_per_byte: alpha,
            beta_ns: (beta_us * 1000.0).round() as Nanos,
        })
    }

    /// The replica core's service-time estimate on this node: the emulated model when on, else
    /// the core's estimate for an engine with no model of its device.
    pub fn estimate(&self) -> tailor_core::replica::ServiceEstimate {
        use tailor_core::replica::ServiceEstimate;
        let (alpha, beta_us) = (f(&self.alpha), f(&self.beta_us));
        if alpha > 0.0 || beta_us > 0.0 {
            ServiceEstimate { alpha_ns_per_byte: alpha, beta_ns: beta_us * 1000.0 }
        } else {
            ServiceEstimate::UNMODELLED
        }
    }

    /// Units of device capacity the jobs in service share (0: each worker its own).
    pub fn shared_capacity(&self) -> usize {
        self.shared_capacity.load(Ordering::Relaxed) as usize
    }

    /// Emulated processing time `alpha * size + beta` of a value of `size` bytes (0 when off).
    pub fn model_time(&self, size: u64) -> Nanos {
        (f(&self.alpha) * size as f64 + f(&self.beta_us) * 1000.0).max(0.0) as Nanos
    }

    /// Whether the node is in its slow state at `now`: each period of `T` ms it is slow with
    /// probability 1/2 (a deterministic hash of the seed and the period index); `T = 0` with a
    /// factor above 1 means always slow.
    pub fn slow_at(&self, now: Nanos) -> bool {
        if f(&self.fluct_factor) <= 1.0 {
            return false;
        }
        let period = self.fluct_period_ms.load(Ordering::Relaxed);
        if period == 0 {
            return true;
        }
        tailor_core::ring::hash_key(self.seed ^ (now / period.saturating_mul(MS))) & 1 == 1
    }

    /// How long a request whose real execution took `real` and whose value has `size` bytes must
    /// additionally wait so that it takes `(real + model) * D` while slow, `real + model` otherwise.
    pub fn extra_delay(&self, now: Nanos, real: Nanos, size: u64) -> Duration {
        let base = real.saturating_add(self.model_time(size));
        let total = if self.slow_at(now) { (base as f64 * f(&self.fluct_factor)) as Nanos } else { base };
        Duration::from_nanos(total.saturating_sub(real))
    }

    /// Whether every knob is off, so a request takes exactly its real time: the replica may
    /// then run it on the caller's thread, which no emulated sleep may block.
    pub fn off(&self) -> bool {
        self.model_time(u64::MAX) == 0
            && f(&self.fluct_factor) <= 1.0
            && !self.hanging()
            && (self.stall_every_ms.load(Ordering::Relaxed) == 0 || self.stall_ms.load(Ordering::Relaxed) == 0)
    }

    /// Whether jobs hang (a gray failure injected with `TAILOR.SET hang 1`): the replica's
    /// workers wait before each job until it is cleared, while heartbeats and every other
    /// message are answered as usual.
    pub fn hanging(&self) -> bool {
        self.hang.load(Ordering::Relaxed) != 0
    }

    /// How long each request this node coordinates waits before its coordinator core takes it
    /// (a slow coordinator, `TAILOR.SET coordinator_delay_ms`; `None`: no wait).
    pub fn coordinator_delay(&self) -> Option<Duration> {
        let ms = f(&self.coordinator_delay_ms);
        (ms > 0.0).then(|| Duration::from_secs_f64(ms / 1e3))
    }

    /// If a stall covers `now()`, how long remains of it (the clock is read only when stalls
    /// are configured: a read costs about 1 % of a GET's CPU).
    pub fn stall_remaining(&self, now: impl FnOnce() -> Nanos) -> Option<Duration> {
        let every = self.stall_every_ms.load(Ordering::Relaxed).saturating_mul(MS);
        let len = self.stall_ms.load(Ordering::Relaxed).saturating_mul(MS);
        if every == 0 || len == 0 {
            return None;
        }
        let into = now() % every;
        (into < len).then(|| Duration::from_nanos(len - into))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_fluctuation_and_stalls() {
        let e = Emulation::new(&EmulationConfig::default(), 1);
        assert_eq!(e.model_time(1000), 0);
        assert_eq!(e.extra_delay(0, 500, 10), Duration::ZERO);
        e.set("alpha_ns_per_byte", "80").unwrap();
        e.set("beta_us", "1000").unwrap();
        assert_eq!(e.model_time(1000), 80_000 + 1_000_000);
        e.set("fluct_factor", "3").unwrap();
        assert!(e.slow_at(123), "period 0 means always slow");
        assert_eq!(e.extra_delay(0, 0, 0), Duration::from_millis(3));
        e.set("fluct_period_ms", "10").unwrap();
        let slow = (0..1000u64).filter(|i| e.slow_at(i * 10 * MS)).count();
        assert!((400..600).contains(&slow), "{slow}");
        e.set("stall_every_ms", "100").unwrap();
        e.set("stall_ms", "10").unwrap();
        assert_eq!(e.stall_remaining(|| 204 * MS), Some(Duration::from_millis(6)));
        assert_eq!(e.stall_remaining(|| 250 * MS), None);
        assert!(e.set("fluct_factor", "0.5").is_err());
        assert!(e.set("nope", "1").unwrap_err().contains("unknown knob"));
        assert!(e.set("beta_us", "x").is_err());
        assert_eq!(e.get("stall_ms").as_deref(), Some("10"));
        assert!(!e.hanging());
        e.set("hang", "1").unwrap();
        assert!(e.hanging() && !e.off(), "a hanging node never runs jobs on the caller's thread");
        assert!(e.set("hang", "2").unwrap_err().contains("hang"));
        e.set("hang", "0").unwrap();
        assert!(!e.hanging());
        assert_eq!(e.coordinator_delay(), None);
        e.set("coordinator_delay_ms", "2.5").unwrap();
        assert_eq!(e.coordinator_delay(), Some(Duration::from_micros(2500)));
        assert_eq!(e.get("coordinator_delay_ms").as_deref(), Some("2.5"));
        assert!(e.set("coordinator_delay_ms", "60001").unwrap_err().contains("coordinator_delay_ms"));
    }

    #[test]
    fn out_of_range_knobs_are_refused_by_name_and_nothing_overflows() {
        let e = Emulation::new(&EmulationConfig::default(), 1);
        e.set("fluct_factor", "2").unwrap();
        let err = e.set("fluct_period_ms", "288230376151711744").unwrap_err();
        assert_eq!(
            err,
            "invalid value '288230376151711744' for knob 'fluct_period_ms': must be an integer in 0..=86400000"
        );
        for (k, v) in [
            ("fluct_period_ms", "1.5"),
            ("stall_ms", "-1"),
            ("beta_us", "inf"),
            ("alpha_ns_per_byte", "NaN"),
            ("fluct_factor", "1e300"),
        ] {
            assert!(e.set(k, v).unwrap_err().contains(k), "{k} {v}");
        }
        // the largest allowed values: every computation stays finite and nothing panics
        for (k, _, most, _) in RANGES {
            e.set(k, &most.to_string()).unwrap();
        }
        for now in [0, 1, u64::MAX / 2, u64::MAX] {
            let _ = e.slow_at(now);
            let _ = e.extra_delay(now, u64::MAX, u32::MAX as u64);
            let _ = e.stall_remaining(|| now);
        }
        assert!(e.model_time(u32::MAX as u64) > 0);
    }
}
