//! `popularity-aware`: Hector's Popularity-Aware selection, which trades load balance for cache
//! locality according to key popularity.
//!
//! Every request is first recorded in the popularity oracle ([`PopularityCounter`]); then, if the
//! key's share of all accesses exceeds `threshold`, the key is hot (likely cached everywhere) and
//! the request is spread over its replicas, tagged priority 0; otherwise it always goes to the
//! first (primary) replica, so cold keys stay cached in one place, tagged priority 1. Hector's
//! code spreads uniformly at random (the default); its paper says round-robin, offered as
//! `spread = "round-robin"` (rotation per replica set, keyed by its primary). Counts are
//! cumulative, as in Hector: early on every key is "hot" until the total grows past
//! `1 / threshold`. The size class tag is left at 0.

use super::{Decision, ReplicaSelector, Rng, SelectorEnv, World};
use crate::model::{NodeId, RequestView, Tags};
use crate::oracle::popularity::{PopularityCounter, PopularityTable};
use crate::time::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use super::registry::{Needs, Registration, tunable};

/// How a hot key's replica is chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Spread {
    /// Uniformly at random (Hector's code).
    #[default]
    Random,
    /// Rotate through the replica set (Hector's paper).
    RoundRobin,
}

/// Tunables of `popularity-aware`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PopularityConfig {
    /// Share of all accesses above which a key is hot (Hector: 1e-5).
    pub threshold: f64,
    /// How a hot key's replica is chosen ("random" or "round-robin").
    pub spread: Spread,
    /// Size of the hashed counter table each selector builds for itself.
    pub table: PopularityTable,
}

impl PopularityConfig {
    /// Reject values the strategy cannot run with, naming the field.
    pub fn validate(&self) -> Result<(), super::c3::InvalidConfig> {
        use super::c3::check;
        check("threshold", self.threshold, "in [0, 1]", |v| (0.0..=1.0).contains(&v))?;
        // the table is allocated up front: bound it so a typo cannot exhaust memory
        check("table.buckets", self.table.buckets as f64, "in 1..=2^26", |v| (1.0..=(1u64 << 26) as f64).contains(&v))?;
        check("table.rows", self.table.rows as f64, "in 1..=8", |v| (1.0..=8.0).contains(&v))
    }
}

impl Default for PopularityConfig {
    fn default() -> Self {
        PopularityConfig { threshold: 1e-5, spread: Spread::Random, table: PopularityTable::default() }
    }
}

/// Priority tag of requests for hot keys.
pub const HOT_PRIORITY: u8 = 0;
/// Priority tag of requests for cold keys.
pub const COLD_PRIORITY: u8 = 1;

/// `popularity-aware` selector.
pub struct PopularityAware {
    counter: Arc<PopularityCounter>,
    threshold: f64,
    spread: Spread,
    turns: HashMap<NodeId, usize>,
    rng: Rng,
}

impl PopularityAware {
    /// Build for one coordinator, with its own popularity counter.
    pub fn new(cfg: &PopularityConfig, env: &SelectorEnv) -> Self {
        Self::with_counter(cfg, env, Arc::new(PopularityCounter::new(cfg.table)))
    }

    /// Build for one coordinator sharing `counter` (e.g. one per store node, or one for every
    /// simulated coordinator to save memory); `cfg.table` is then unused.
    pub fn with_counter(cfg: &PopularityConfig, env: &SelectorEnv, counter: Arc<PopularityCounter>) -> Self {
        PopularityAware {
            counter,
            threshold: cfg.threshold,
            spread: cfg.spread,
            turns: HashMap::new(),
            rng: Rng::new(env.seed, 0x0050_4f50 + env.coordinator as u64),
        }
    }

    /// The popularity oracle this selector records into.
    pub fn counter(&self) -> &Arc<PopularityCounter> {
        &self.counter
    }
}

impl ReplicaSelector for PopularityAware {
    fn select(&mut self, _now: Nanos, req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        let Some(&primary) = replicas.first() else {
            return Decision::Wait { retry_at: None };
        };
        self.counter.record(req.key);
        let frequency = self.counter.frequency(req.key);
        debug_assert!(frequency > 0.0 && frequency <= 1.0, "a key just counted has a share in (0, 1]: {frequency}");
        if frequency <= self.threshold {
            return Decision::Send { replica: primary, tags: Tags { priority: COLD_PRIORITY, ..Tags::default() } };
        }
        let i = match self.spread {
            Spread::Random => self.rng.below(replicas.len()),
            Spread::RoundRobin => {
                let turn = self.turns.entry(primary).or_insert(0);
                let i = *turn % replicas.len();
                *turn = turn.wrapping_add(1);
                i
            }
        };
        Decision::Send { replica: replicas[i], tags: Tags { priority: HOT_PRIORITY, ..Tags::default() } }
    }
}


/// `popularity-aware`: Hector-style popularity-aware selection.
pub const REGISTRATION: Registration = Registration {
    name: "popularity-aware",
    source: "Hector-style popularity-aware selection",
    needs: Needs::NOTHING,
    build: |cfg, env| Box::new(PopularityAware::new(&cfg.popularity_aware, env)),
    validate: |cfg| cfg.popularity_aware.validate().map_err(|e| tunable("popularity_aware", e)),
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::model::SizeHint;

    fn cfg(spread: Spread) -> PopularityConfig {
        PopularityConfig { threshold: 0.01, spread, table: PopularityTable { buckets: 1 << 12, rows: 2 } }
    }

    fn pick(s: &mut PopularityAware, key: u64) -> (NodeId, u8) {
        let req = RequestView { key, ..read(key, 0, SizeHint::default()) };
        match s.select(0, &req, &[3, 4, 5], &Blind) {
            Decision::Send { replica, tags } => (replica, tags.priority),
            d => panic!("unexpected {d:?}"),
        }
    }

    /// Warm the oracle with 1 000 accesses to distinct cold keys.
    fn warmed(spread: Spread) -> PopularityAware {
        let mut s = PopularityAware::new(&cfg(spread), &env(6));
        for key in 10_000..11_000 {
            pick(&mut s, key);
        }
        s
    }

    #[test]
    fn hot_key_is_spread_and_cold_key_goes_to_primary() {
        let mut s = warmed(Spread::Random);
        // Key 1 becomes hot (> 1 % of accesses) after ~11 accesses; then it is spread.
        let mut seen = HashMap::new();
        for _ in 0..20 {
            pick(&mut s, 1);
        }
        for _ in 0..600 {
            let (r, prio) = pick(&mut s, 1);
            assert_eq!(prio, HOT_PRIORITY);
            *seen.entry(r).or_insert(0) += 1;
        }
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen.values().all(|&c| c > 120), "{seen:?}");
        // A key seen once among ~1 600 accesses is cold.
        assert_eq!(pick(&mut s, 2), (3, COLD_PRIORITY));
        assert!(s.counter().frequency(1) > 0.3);
    }

    #[test]
    fn round_robin_variant_rotates_hot_keys() {
        let mut s = warmed(Spread::RoundRobin);
        for _ in 0..20 {
            pick(&mut s, 1);
        }
        let picks: Vec<_> = (0..4).map(|_| pick(&mut s, 1)).collect();
        let first = picks[0].0;
        let expected: Vec<_> = (0..4).map(|i| ((first - 3 + i) % 3 + 3, HOT_PRIORITY)).collect();
        assert_eq!(picks, expected);
        assert_eq!(pick(&mut s, 2), (3, COLD_PRIORITY));
    }

    #[test]
    fn shared_counter_sees_every_coordinator() {
        let counter = Arc::new(PopularityCounter::new(PopularityTable { buckets: 1 << 10, rows: 1 }));
        let mut a = PopularityAware::with_counter(&cfg(Spread::Random), &env(6), Arc::clone(&counter));
        let mut b = PopularityAware::with_counter(&cfg(Spread::Random), &env(6), Arc::clone(&counter));
        pick(&mut a, 7);
        pick(&mut b, 8);
        assert_eq!(counter.total(), 2);
    }

    #[test]
    fn config_parses_spread_names() {
        let c: PopularityConfig = serde_json::from_str(r#"{"spread": "round-robin"}"#).expect("config");
        assert_eq!(c.spread, Spread::RoundRobin);
        assert_eq!(c.threshold, 1e-5);
        assert!(serde_json::from_str::<PopularityConfig>(r#"{"spread": "zigzag"}"#).is_err());
    }
}
