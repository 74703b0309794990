//! `rml`: Random Multi-Level (Hector, §3.2). `n` FIFO sub-queues; sub-queue `q` (1-based) has
//! weight `alpha^(n-q+1)`, so the first is the most favoured. On pop, draw `x` uniformly in
//! `[0, W)`, `W` the summed weight of the non-empty sub-queues, and serve the first non-empty
//! sub-queue whose cumulative weight exceeds `x`.
//!
//! Hector draws over all sub-queues and redraws when it hits an empty one; restricting the draw
//! to the non-empty ones gives the same distribution without a loop. Choices made here:
//! - a job goes to sub-queue `meta.tags.size_class + 1`, clamped to `n`; the coordinator core's
//!   tag rule sets the size class from its oracle's large threshold (`workload.large_threshold`
//!   in a spec, `large_value_bytes` in the store: Hector's 1 kB items are small at 1024);
//! - with one non-empty sub-queue no number is drawn (the answer is forced), so the random
//!   stream advances only on real choices;
//! - [`Rml::new`] cannot fail (the registry calls it as is): it clamps `levels` into
//!   `1..=256` (a `u8` size class reaches at most 256) and replaces a non-finite or
//!   non-positive `alpha` by 10; engines should call [`RmlConfig::validate`] when loading a
//!   configuration to report such values instead. If the weights still overflow (huge `alpha`
//!   and many levels), the non-empty sub-queue with the largest weight is served.

use super::{fifo, LocalQueue};
use crate::model::JobMeta;
use crate::selector::Rng;
use crate::time::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Most sub-queues a tag can address (`size_class` is a `u8`).
pub const MAX_LEVELS: usize = 256;

/// Salt that separates RML's random stream from the selectors' streams built from the same seed.
const RNG_SALT: u64 = 0x524D_4C00;

/// Tunables of Random Multi-Level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RmlConfig {
    /// Number of sub-queues `n` (Hector's experiment: 2).
    pub levels: usize,
    /// Priority coefficient: sub-queue `q` has weight `alpha^(n-q+1)` (Hector's experiment: 10).
    pub alpha: f64,
}

impl Default for RmlConfig {
    fn default() -> Self {
        RmlConfig { levels: 2, alpha: 10.0 }
    }
}

/// A Random Multi-Level configuration that cannot work as written.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RmlConfigError {
    /// `levels` outside `1..=256`.
    #[error("rml.levels must be in 1..={MAX_LEVELS}, got {0}")]
    Levels(usize),
    /// `alpha` not a positive finite number.
    #[error("rml.alpha must be a positive finite number, got {0}")]
    Alpha(f64),
    /// `alpha^levels` does not fit in a floating-point number.
    #[error("rml.alpha^rml.levels overflows (alpha {alpha}, levels {levels})")]
    Overflow {
        /// The configured alpha.
        alpha: f64,
        /// The configured number of levels.
        levels: usize,
    },
}

impl RmlConfig {
    /// Check the configuration; [`Rml::new`] silently repairs what this reports.
    pub fn validate(&self) -> Result<(), RmlConfigError> {
        if !(1..=MAX_LEVELS).contains(&self.levels) {
            return Err(RmlConfigError::Levels(self.levels));
        }
        if !(self.alpha.is_finite() && self.alpha > 0.0) {
            return Err(RmlConfigError::Alpha(self.alpha));
        }
        let total: f64 = weights(self.levels, self.alpha).iter().sum();
        if !(total.is_finite() && total > 0.0) {
            return Err(RmlConfigError::Overflow { alpha: self.alpha, levels: self.levels });
        }
        Ok(())
    }
}

/// Weights of sub-queues 1..=n, i.e. `alpha^n, alpha^(n-1), ..., alpha`.
fn weights(levels: usize, alpha: f64) -> Vec<f64> {
    (0..levels).map(|i| alpha.powi((levels - i) as i32)).collect()
}

/// Random Multi-Level queue.
pub struct Rml<T> {
    queues: Vec<VecDeque<(JobMeta, T)>>,
    weights: Vec<f64>,
    len: usize,
    rng: Rng,
}

impl<T> Rml<T> {
    /// An empty queue with `cfg`'s levels and alpha (repaired if invalid, see the module doc);
    /// `seed` feeds its draws.
    pub fn new(cfg: &RmlConfig, seed: u64) -> Self {
        let levels = cfg.levels.clamp(1, MAX_LEVELS);
        let alpha = if cfg.alpha.is_finite() && cfg.alpha > 0.0 { cfg.alpha } else { RmlConfig::default().alpha };
        Rml {
            queues: (0..levels).map(|_| VecDeque::new()).collect(),
            weights: weights(levels, alpha),
            len: 0,
            rng: Rng::new(seed, RNG_SALT),
        }
    }

    /// Number of sub-queues.
    pub fn levels(&self) -> usize {
        self.queues.len()
    }

    /// Jobs waiting in sub-queue `level` (1-based), 0 for a level that does not exist.
    pub fn level_len(&self, level: usize) -> usize {
        level.checked_sub(1).and_then(|i| self.queues.get(i)).map_or(0, VecDeque::len)
    }

    /// The count is the sub-queues' and the weights are usable (debug builds).
    #[inline]
    fn check_invariants(&self) {
        debug_assert_eq!(self.len, self.queues.iter().map(VecDeque::len).sum::<usize>(), "the count is the levels'");
        debug_assert_eq!(self.weights.len(), self.queues.len(), "a weight per level");
        debug_assert!(self.weights.iter().all(|w| *w >= 0.0), "weights are not negative: {:?}", self.weights);
    }

    /// Index (0-based) of the sub-queue to serve; `None` when all are empty.
    fn choose(&mut self) -> Option<usize> {
        let mut non_empty = self.queues.iter().enumerate().filter(|(_, q)| !q.is_empty()).map(|(i, _)| i);
        let first = non_empty.next()?;
        let Some(second) = non_empty.next() else {
            return Some(first);
        };
        let candidates = [first, second].into_iter().chain(non_empty);
        let total: f64 = candidates.clone().map(|i| self.weights[i]).sum();
        if !(total.is_finite() && total > 0.0) {
            // Degenerate weights: fall back to strict priority by weight (first on ties).
            return candidates.fold(None, |best: Option<usize>, i| match best {
                Some(b) if self.weights[b] >= self.weights[i] => Some(b),
                _ => Some(i),
            });
        }
        let x = self.rng.unit() * total;
        debug_assert!((0.0..total).contains(&x), "a draw {x} below the total weight {total}");
        let mut cumulative = 0.0;
        let mut last = first;
        for i in candidates {
            cumulative += self.weights[i];
            if x < cumulative {
                return Some(i);
            }
            last = i;
        }
        // Only reachable through rounding in the running sum: x is below the total.
        Some(last)
    }
}

impl<T: Send> LocalQueue<T> for Rml<T> {
    fn push(&mut self, _now: Nanos, meta: JobMeta, payload: T) {
        debug_assert!(!self.queues.is_empty() && self.queues.len() <= MAX_LEVELS, "1..={MAX_LEVELS} levels");
        let level = (meta.tags.size_class as usize).min(self.queues.len() - 1);
        fifo::push_back(&mut self.queues[level], (meta, payload));
        self.len += 1;
        self.check_invariants();
    }

    fn pop(&mut self, _now: Nanos) -> Option<(JobMeta, T)> {
        let Some(level) = self.choose() else {
            debug_assert_eq!(self.len, 0, "no level chosen while jobs wait");
            return None;
        };
        let job = self.queues[level].pop_front();
        debug_assert!(job.is_some(), "the chosen level {level} has a job");
        if job.is_some() {
            self.len -= 1;
        }
        self.check_invariants();
        job
    }

    fn len(&self) -> usize {
        self.len
    }
}


/// `rml`: Random Multi-Level (Hector).
pub const REGISTRATION: super::LocalRegistration = super::LocalRegistration { name: "rml", source: "Random Multi-Level (Hector)" };

/// Build a `rml` queue.
pub fn build<T: Send + 'static>(cfg: &super::LocalConfig, seed: u64) -> Box<dyn LocalQueue<T>> {
    Box::new(Rml::new(&cfg.rml, seed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Tags;

    /// A job tagged with `size_class`.
    fn tagged(id: u64, size_class: u8) -> JobMeta {
        JobMeta { id, release: 0, enqueued: 0, service: 1, size: 1, tags: Tags { size_class, ..Tags::default() } }
    }

    /// Pop `pops` times from a queue of `levels` levels whose levels `active` (1-based) are kept
    /// non-empty by refilling the level just served; returns how often each level was served.
    fn frequencies(levels: usize, active: &[usize], pops: usize, seed: u64) -> Vec<usize> {
        let cfg = RmlConfig { levels, ..RmlConfig::default() };
        let mut q = Rml::new(&cfg, seed);
        let mut id = 0;
        for &l in active {
            q.push(0, tagged(id, (l - 1) as u8), ());
            id += 1;
        }
        let mut counts = vec![0; levels];
        for _ in 0..pops {
            let (meta, ()) = q.pop(0).expect("never empty");
            let level = meta.tags.size_class as usize;
            counts[level] += 1;
            q.push(0, tagged(id, level as u8), ());
            id += 1;
        }
        counts
    }

    fn assert_near(observed: usize, expected: f64, rel: f64) {
        let diff = (observed as f64 - expected).abs();
        assert!(diff <= expected * rel, "observed {observed}, expected {expected} ± {}", expected * rel);
    }

    #[test]
    fn two_levels_draw_ten_to_one() {
        let counts = frequencies(2, &[1, 2], 110_000, 42);
        // Weights 100 and 10: level 1 with probability 10/11.
        assert_near(counts[0], 100_000.0, 0.01);
        assert_near(counts[1], 10_000.0, 0.05);
    }

    #[test]
    fn three_levels_draw_by_weight() {
        let counts = frequencies(3, &[1, 2, 3], 111_000, 7);
        // Weights 1000, 100, 10 out of 1110.
        assert_near(counts[0], 100_000.0, 0.01);
        assert_near(counts[1], 10_000.0, 0.05);
        assert_near(counts[2], 1_000.0, 0.15);
        // Only the non-empty levels take part in the draw: 100 vs 10.
        let counts = frequencies(3, &[2, 3], 110_000, 9);
        assert_eq!(counts[0], 0);
        assert_near(counts[1], 100_000.0, 0.01);
        assert_near(counts[2], 10_000.0, 0.05);
    }

    #[test]
    fn fifo_within_each_level_and_tags_clamped() {
        let mut q = Rml::new(&RmlConfig::default(), 3);
        // Level 2 gets class 1 and every class above it.
        for (id, class) in [(1, 0), (2, 1), (3, 0), (4, 7), (5, 0), (6, 1)] {
            q.push(0, tagged(id, class), id);
        }
        assert_eq!((q.level_len(1), q.level_len(2), q.level_len(3)), (3, 3, 0));
        let mut small = Vec::new();
        let mut large = Vec::new();
        while let Some((meta, id)) = q.pop(0) {
            assert_eq!(meta.id, id);
            if meta.tags.size_class == 0 {
                small.push(id)
            } else {
                large.push(id)
            }
        }
        assert_eq!(small, vec![1, 3, 5]);
        assert_eq!(large, vec![2, 4, 6]);
        assert!(q.is_empty());
    }

    #[test]
    fn same_seed_same_order() {
        let run = |seed| {
            let mut q = Rml::new(&RmlConfig::default(), seed);
            for id in 0..200 {
                q.push(0, tagged(id, (id % 2) as u8), ());
            }
            std::iter::from_fn(|| q.pop(0).map(|j| j.0.id)).collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
    }

    #[test]
    fn config_defaults_validation_and_repair() {
        let cfg = RmlConfig::default();
        assert_eq!((cfg.levels, cfg.alpha), (2, 10.0));
        assert_eq!(cfg.validate(), Ok(()));
        assert_eq!(RmlConfig { levels: 0, ..cfg.clone() }.validate(), Err(RmlConfigError::Levels(0)));
        assert!(matches!(RmlConfig { alpha: -1.0, ..cfg.clone() }.validate(), Err(RmlConfigError::Alpha(_))));
        let huge = RmlConfig { levels: 256, alpha: 1e10 };
        assert!(matches!(huge.validate(), Err(RmlConfigError::Overflow { .. })));
        // Repaired or degenerate configurations still serve every job.
        for bad in [RmlConfig { levels: 0, alpha: f64::NAN }, huge] {
            let mut q = Rml::new(&bad, 1);
            q.push(0, tagged(1, 1), ());
            q.push(0, tagged(2, 0), ());
            let mut ids: Vec<u64> = std::iter::from_fn(|| q.pop(0).map(|j| j.0.id)).collect();
            ids.sort();
            assert_eq!(ids, vec![1, 2]);
        }
        let parsed: RmlConfig = serde_json::from_str(r#"{"levels": 3}"#).expect("valid");
        assert_eq!(parsed, RmlConfig { levels: 3, ..RmlConfig::default() });
        assert!(serde_json::from_str::<RmlConfig>(r#"{"level": 3}"#).is_err());
    }
}
