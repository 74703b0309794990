//! Key popularity: which key a request touches.

use super::{fraction, WorkloadError};
use rand::Rng;
use rand_distr::{Distribution, Zipf};
use serde::{Deserialize, Serialize};

/// How keys are chosen, over a key space `0..keys`.
///
/// Keys are small integers here; the ring hashes them again, so hot keys land on pseudo-random
/// nodes and `key 0` being the hottest key does not make node 0 the hottest node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum PopularityConfig {
    /// Every key equally likely.
    #[default]
    Uniform,
    /// Zipf with exponent `s >= 0`: key `r` is the rank-`r` key (key 0 hottest), with probability
    /// proportional to `1 / (r + 1)^s`. `s = 0` is uniform; Héron used 0.99, Hector 0.1 and 1.5.
    Zipf {
        /// Exponent.
        s: f64,
    },
    /// A hot set: the first `hot_fraction` of the keys receive `hot_probability` of the requests,
    /// uniformly among them; the other keys share the rest uniformly.
    Hotspot {
        /// Share of the key space that is hot, in `(0, 1]`.
        hot_fraction: f64,
        /// Share of the requests that go to the hot set, in `[0, 1]`.
        hot_probability: f64,
    },
    /// YCSB's "latest": Zipf with exponent `s` over recency, the newest key being the hottest.
    ///
    /// The key space does not grow here, so the newest key is taken to be `keys - 1` and the
    /// rank-`r` key is `keys - 1 - r`.
    Latest {
        /// Exponent.
        s: f64,
    },
}

/// Draws keys according to a [`PopularityConfig`].
#[derive(Clone, Debug, PartialEq)]
pub struct KeySampler {
    keys: u64,
    dist: Dist,
}

#[derive(Clone, Debug, PartialEq)]
enum Dist {
    Uniform,
    /// Rank distribution over `1..=keys`; `latest` reverses the ranks.
    Zipf {
        zipf: Zipf<f64>,
        latest: bool,
    },
    /// Keys `0..hot` are hot; `hot < keys`, otherwise the sampler is uniform.
    Hotspot {
        hot: u64,
        probability: f64,
    },
}

/// Checks a Zipf exponent and builds the rank distribution over `keys` ranks.
fn zipf(field: &str, s: f64, keys: u64) -> Result<Zipf<f64>, WorkloadError> {
    if !(s.is_finite() && s >= 0.0) {
        return Err(WorkloadError::invalid_f64(field, s, "must be a finite number >= 0"));
    }
    Zipf::new(keys as f64, s).map_err(|e| WorkloadError::invalid_f64(field, s, e.to_string()))
}

impl KeySampler {
    /// A sampler over keys `0..keys` (`keys >= 1`).
    pub fn new(cfg: &PopularityConfig, keys: u64) -> Result<KeySampler, WorkloadError> {
        if keys == 0 {
            return Err(WorkloadError::invalid("keys", keys, "the key space needs at least one key"));
        }
        let dist = match *cfg {
            PopularityConfig::Uniform => Dist::Uniform,
            PopularityConfig::Zipf { s } => Dist::Zipf { zipf: zipf("zipf.s", s, keys)?, latest: false },
            PopularityConfig::Latest { s } => Dist::Zipf { zipf: zipf("latest.s", s, keys)?, latest: true },
            PopularityConfig::Hotspot { hot_fraction, hot_probability } => {
                if !(hot_fraction > 0.0 && hot_fraction <= 1.0) {
                    return Err(WorkloadError::invalid_f64("hotspot.hot_fraction", hot_fraction, "must be in (0, 1]"));
                }
                let probability = fraction("hotspot.hot_probability", hot_probability)?;
                // At least one hot key, so a tiny fraction of a small key space still means something.
                let hot = ((hot_fraction * keys as f64).round() as u64).clamp(1, keys);
                debug_assert!((1..=keys).contains(&hot), "{hot} hot keys of {keys}");
                if hot == keys {
                    Dist::Uniform
                } else {
                    Dist::Hotspot { hot, probability }
                }
            }
        };
        Ok(KeySampler { keys, dist })
    }

    /// Size of the key space.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// A key in `0..keys`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        debug_assert!(self.keys >= 1, "a key space has a key");
        let key = self.draw(rng);
        debug_assert!(key < self.keys, "key {key} outside the key space of {}", self.keys);
        key
    }

    /// A key drawn from the configured distribution.
    fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match self.dist {
            Dist::Uniform => rng.random_range(0..self.keys),
            Dist::Zipf { ref zipf, latest } => {
                // Samples are ranks 1..=keys as floats; clamp in case `keys` exceeds f64 precision.
                let rank = (zipf.sample(rng) as u64).saturating_sub(1).min(self.keys - 1);
                if latest {
                    self.keys - 1 - rank
                } else {
                    rank
                }
            }
            Dist::Hotspot { hot, probability } => {
                debug_assert!(hot >= 1 && hot < self.keys, "a hotspot of {hot} keys leaves a cold one");
                if rng.random::<f64>() < probability {
                    rng.random_range(0..hot)
                } else {
                    rng.random_range(hot..self.keys)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn counts(cfg: &PopularityConfig, keys: u64, n: usize) -> Vec<u64> {
        let sampler = KeySampler::new(cfg, keys).unwrap();
        let mut rng = SmallRng::seed_from_u64(11);
        let mut c = vec![0u64; keys as usize];
        for _ in 0..n {
            c[sampler.sample(&mut rng) as usize] += 1;
        }
        c
    }

    #[test]
    fn zipf_rank_ratio_follows_exponent() {
        let keys = 1000;
        let n = 400_000;
        let c = counts(&PopularityConfig::Zipf { s: 0.99 }, keys, n);
        let ratio = c[0] as f64 / c[1] as f64;
        assert!((ratio - 2f64.powf(0.99)).abs() < 0.08, "rank 0 / rank 1 = {ratio}");
        let ratio2 = c[0] as f64 / c[3] as f64;
        assert!((ratio2 - 4f64.powf(0.99)).abs() < 0.2, "rank 0 / rank 3 = {ratio2}");
        // Rank 0's share is 1 / H(keys, s).
        let h: f64 = (1..=keys).map(|r| (r as f64).powf(-0.99)).sum();
        let share = c[0] as f64 / n as f64;
        assert!((share - 1.0 / h).abs() < 0.005, "rank 0 share {share} vs {}", 1.0 / h);
    }

    #[test]
    fn latest_makes_the_newest_key_hottest() {
        let keys = 500;
        let c = counts(&PopularityConfig::Latest { s: 0.99 }, keys, 200_000);
        let newest = c[keys as usize - 1] as f64;
        let ratio = newest / c[keys as usize - 2] as f64;
        assert!((ratio - 2f64.powf(0.99)).abs() < 0.12, "newest / second newest = {ratio}");
        assert!(c[0] < c[keys as usize - 1] / 100);
    }

    #[test]
    fn uniform_spreads_evenly() {
        let c = counts(&PopularityConfig::Uniform, 10, 100_000);
        for x in c {
            assert!((9_500..10_500).contains(&x), "uneven {x}");
        }
        // Zipf with s = 0 is uniform too.
        let c = counts(&PopularityConfig::Zipf { s: 0.0 }, 10, 100_000);
        for x in c {
            assert!((9_500..10_500).contains(&x), "uneven {x}");
        }
    }

    #[test]
    fn hotspot_gives_the_hot_set_its_share() {
        let cfg = PopularityConfig::Hotspot { hot_fraction: 0.2, hot_probability: 0.8 };
        let c = counts(&cfg, 1000, 200_000);
        let hot: u64 = c[..200].iter().sum();
        let share = hot as f64 / 200_000.0;
        assert!((share - 0.8).abs() < 0.01, "hot share {share}");
        // Within the hot set, keys are uniform: about 0.8 * 200000 / 200 = 800 each.
        assert!(c[..200].iter().all(|&x| (650..950).contains(&x)));
        assert!(c[200..].iter().all(|&x| (20..85).contains(&x)), "cold keys get about 0.2 * 200000 / 800 = 50 each");
    }

    #[test]
    fn samples_stay_in_range_for_huge_and_tiny_key_spaces() {
        let mut rng = SmallRng::seed_from_u64(3);
        for cfg in [
            PopularityConfig::Uniform,
            PopularityConfig::Zipf { s: 1.5 },
            PopularityConfig::Latest { s: 0.5 },
            PopularityConfig::Hotspot { hot_fraction: 0.01, hot_probability: 0.9 },
        ] {
            for keys in [1u64, 2, 1 << 40] {
                let s = KeySampler::new(&cfg, keys).unwrap();
                for _ in 0..1000 {
                    assert!(s.sample(&mut rng) < keys);
                }
            }
        }
    }

    #[test]
    fn invalid_configs_name_the_field() {
        let err = |cfg: PopularityConfig, keys| KeySampler::new(&cfg, keys).unwrap_err().to_string();
        assert!(err(PopularityConfig::Uniform, 0).contains("keys = 0"));
        assert!(err(PopularityConfig::Zipf { s: -0.5 }, 10).contains("zipf.s = -0.5"));
        assert!(err(PopularityConfig::Zipf { s: f64::NAN }, 10).contains("zipf.s = NaN"));
        assert!(err(PopularityConfig::Latest { s: f64::INFINITY }, 10).contains("latest.s = inf"));
        let hot = |f, p| err(PopularityConfig::Hotspot { hot_fraction: f, hot_probability: p }, 10);
        assert!(hot(0.0, 0.5).contains("hotspot.hot_fraction = 0"));
        assert!(hot(1.5, 0.5).contains("hotspot.hot_fraction = 1.5"));
        assert!(hot(0.2, -0.1).contains("hotspot.hot_probability = -0.1"));
        assert!(hot(0.2, f64::NAN).contains("hotspot.hot_probability = NaN"));
    }

    #[test]
    fn config_serde_uses_kind_tags_and_rejects_unknown_fields() {
        let cfg: PopularityConfig = serde_json::from_str(r#"{"kind":"zipf","s":0.99}"#).unwrap();
        assert_eq!(cfg, PopularityConfig::Zipf { s: 0.99 });
        let cfg: PopularityConfig =
            serde_json::from_str(r#"{"kind":"hotspot","hot_fraction":0.2,"hot_probability":0.8}"#).unwrap();
        assert_eq!(cfg, PopularityConfig::Hotspot { hot_fraction: 0.2, hot_probability: 0.8 });
        let cfg: PopularityConfig = serde_json::from_str(r#"{"kind":"uniform"}"#).unwrap();
        assert_eq!(cfg, PopularityConfig::Uniform);
        assert!(serde_json::from_str::<PopularityConfig>(r#"{"kind":"zipf","s":1,"x":2}"#).is_err());
        assert!(serde_json::from_str::<PopularityConfig>(r#"{"kind":"pareto"}"#).is_err());
        let json = serde_json::to_string(&PopularityConfig::Latest { s: 0.5 }).unwrap();
        assert_eq!(json, r#"{"kind":"latest","s":0.5}"#);
    }
}
