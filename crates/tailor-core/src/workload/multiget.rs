//! Multi-get reads: which reads become one, of how many keys, and which keys. One rule for the
//! simulator and the load generator, so a live run's MGETs are the simulated run's multi-gets.
//!
//! A share `fraction` of reads are multi-gets (a coin from a stream of their own, so the rest of
//! a run draws exactly what it drew without them). A multi-get reads `keys` distinct keys, or,
//! when `keys_max` is above `keys`, a count drawn between the two by its [`KeyCountLaw`]. Rein
//! (EuroSys'17) found multi-get sizes in SoundCloud's trace heavily skewed, most small and a few
//! large, and its shortest-bottleneck-first queue gains only where sizes differ; the paper gives
//! no closed law, so the skewed choice here is the parameter-free log-uniform (our choice). The
//! read's own key comes first; the others come from the popularity law, a key drawn twice drawn
//! again.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::KeySampler;

/// How a multi-get's key count is drawn between `keys` and `keys_max`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyCountLaw {
    /// Every count equally likely.
    #[default]
    Uniform,
    /// A count `k` about as likely as `1/k`: most multi-gets small, a few large (continuous
    /// log-uniform on `[keys, keys_max + 1)`, rounded down).
    LogUniform,
}

impl KeyCountLaw {
    /// The probability of `k` keys when counts run from `lo` to `hi`.
    pub fn probability(self, k: u32, lo: u32, hi: u32) -> f64 {
        debug_assert!(1 <= lo && lo <= hi, "a count range [{lo}, {hi}]");
        if k < lo || k > hi {
            return 0.0;
        }
        match self {
            KeyCountLaw::Uniform => 1.0 / f64::from(hi - lo + 1),
            KeyCountLaw::LogUniform => {
                (f64::from(k + 1) / f64::from(k)).ln() / (f64::from(hi + 1) / f64::from(lo)).ln()
            }
        }
    }

    /// The mean count when counts run from `lo` to `hi` (what a request's work is measured by).
    pub fn mean(self, lo: u32, hi: u32) -> f64 {
        match self {
            KeyCountLaw::Uniform => (f64::from(lo) + f64::from(hi)) / 2.0,
            KeyCountLaw::LogUniform => (lo..=hi).map(|k| f64::from(k) * self.probability(k, lo, hi)).sum(),
        }
    }

    fn draw(self, rng: &mut SmallRng, lo: u32, hi: u32) -> u32 {
        let u: f64 = rng.random();
        let k = match self {
            KeyCountLaw::Uniform => f64::from(lo) + u * f64::from(hi - lo + 1),
            KeyCountLaw::LogUniform => f64::from(lo) * (f64::from(hi + 1) / f64::from(lo)).powf(u),
        };
        (k as u32).clamp(lo, hi)
    }
}

/// Draws a run's multi-gets.
pub struct MultigetDraws {
    rng: SmallRng,
    keys: u32,
    keys_max: u32,
    law: KeyCountLaw,
    fraction: f64,
}

impl MultigetDraws {
    /// Multi-gets of `keys` keys (up to `keys_max` by `law` when it is above `keys`) for a share
    /// `fraction` of reads, for the run of workload seed `seed`. The config is validated by the
    /// spec (`workload.multiget`): at least one key, a fraction in (0, 1].
    pub fn new(keys: u32, keys_max: u32, law: KeyCountLaw, fraction: f64, seed: u64) -> Self {
        assert!(keys >= 1 && fraction > 0.0 && fraction <= 1.0, "multi-gets of {keys} keys for a share {fraction}");
        let rng = SmallRng::seed_from_u64(seed ^ 0x4d55_4c54_4947_4554);
        MultigetDraws { rng, keys, keys_max: keys_max.max(keys), law, fraction }
    }

    /// The keys of the multi-get that the read of `first` starts, `first` first, or `None` when
    /// it stays a single read. `sampler` must hold at least the largest count of keys.
    pub fn draw(&mut self, first: u64, sampler: &KeySampler) -> Option<Vec<u64>> {
        if self.fraction < 1.0 && self.rng.random::<f64>() >= self.fraction {
            return None;
        }
        // a fixed count draws nothing here: runs of fixed multi-gets keep their streams
        let n =
            if self.keys_max > self.keys { self.law.draw(&mut self.rng, self.keys, self.keys_max) } else { self.keys };
        let mut seen = std::collections::HashSet::with_capacity(n as usize);
        seen.insert(first);
        let mut keys = Vec::with_capacity(n as usize);
        keys.push(first);
        while keys.len() < n as usize {
            let key = sampler.sample(&mut self.rng);
            if seen.insert(key) {
                keys.push(key);
            }
        }
        debug_assert!((self.keys..=self.keys_max).contains(&(keys.len() as u32)), "{} keys", keys.len());
        Some(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::PopularityConfig;

    fn counts(law: KeyCountLaw, lo: u32, hi: u32, n: usize) -> Vec<u32> {
        let sampler = KeySampler::new(&PopularityConfig::Uniform, 10_000).unwrap();
        let mut d = MultigetDraws::new(lo, hi, law, 1.0, 5);
        (0..n).map(|i| d.draw(i as u64, &sampler).unwrap().len() as u32).collect()
    }

    #[test]
    fn counts_follow_their_law_and_its_mean() {
        for law in [KeyCountLaw::Uniform, KeyCountLaw::LogUniform] {
            let (lo, hi, n) = (2, 64, 20_000);
            let c = counts(law, lo, hi, n);
            assert!(c.iter().all(|k| (lo..=hi).contains(k)), "{law:?}");
            let mean = c.iter().map(|&k| f64::from(k)).sum::<f64>() / n as f64;
            let expected = law.mean(lo, hi);
            assert!((mean / expected - 1.0).abs() < 0.03, "{law:?}: drawn mean {mean}, law's {expected}");
            let total: f64 = (lo..=hi).map(|k| law.probability(k, lo, hi)).sum();
            assert!((total - 1.0).abs() < 1e-9, "{law:?}: probabilities sum to {total}");
            for k in [lo, hi / 2, hi] {
                let share = c.iter().filter(|&&x| x == k).count() as f64 / n as f64;
                let p = law.probability(k, lo, hi);
                assert!((share - p).abs() < 4.0 * (p / n as f64).sqrt() + 1e-3, "{law:?} k={k}: {share} vs {p}");
            }
        }
        // log-uniform: most multi-gets small, a few large
        let c = counts(KeyCountLaw::LogUniform, 1, 1000, 20_000);
        let small = c.iter().filter(|&&k| k <= 10).count() as f64 / c.len() as f64;
        assert!(small > 0.3 && c.iter().any(|&k| k > 500), "{small} at most 10 keys");
    }

    #[test]
    fn keys_are_distinct_first_first_and_a_fixed_count_is_fixed() {
        let sampler = KeySampler::new(&PopularityConfig::Uniform, 20).unwrap();
        let mut d = MultigetDraws::new(20, 0, KeyCountLaw::Uniform, 1.0, 1);
        for first in 0..20 {
            let keys = d.draw(first, &sampler).unwrap();
            assert_eq!(keys[0], first);
            let distinct: std::collections::HashSet<_> = keys.iter().collect();
            assert_eq!((keys.len(), distinct.len()), (20, 20));
        }
    }

    #[test]
    fn a_share_of_reads_and_the_same_draws_for_a_seed() {
        let sampler = KeySampler::new(&PopularityConfig::Uniform, 1000).unwrap();
        let run = || {
            let mut d = MultigetDraws::new(3, 9, KeyCountLaw::LogUniform, 0.25, 42);
            (0..4000).map(|i| d.draw(i, &sampler)).collect::<Vec<_>>()
        };
        let a = run();
        assert_eq!(a, run(), "a pure function of the seed");
        let share = a.iter().filter(|m| m.is_some()).count() as f64 / a.len() as f64;
        assert!((share - 0.25).abs() < 0.03, "{share}");
    }
}
