//! `prequal`: Prequal (Wydrowski, Kleinberg, Rumble, Hoffman; "Load is not what you should
//! balance: Introducing Prequal", NSDI 2024), the probing balancer YouTube runs.
//!
//! Rules, as this implementation reads the paper:
//! - **Asynchronous probes.** Every query triggers probes (`probes_per_query` on average: the
//!   whole part always, one more with the fractional part's probability) to distinct replicas
//!   chosen at random. A probe travels like a request but the replica answers at once, without
//!   queueing it, with its requests in flight (RIF) and its latency estimate at that RIF (the
//!   replica core's [`crate::replica::RifLatency`]: an EWMA of arrival-to-completion time per RIF
//!   level at arrival). The query itself never waits for its probes: it is routed from the
//!   pool, and the probes feed later queries.
//! - **Restricted to the key's replicas.** Prequal probes any server of a stateless service; a
//!   read here can only go to its key's replicas, so a query probes among the replicas it was
//!   offered, and only probes of those replicas are candidates for it.
//! - **Bounded pool with ageing.** At most `pool_size` probes; a new
//!   probe from a replica replaces that replica's older one (choice: the newest says more), else
//!   the oldest probe leaves a full pool. Probes older than `max_age_ms` are dropped before
//!   every choice.
//! - **Reuse limit.** A probe serves at most `reuse_limit` queries, then leaves the pool; each
//!   use raises its RIF by one (the query just sent is in flight there now), so a burst does not
//!   all follow one cold probe.
//! - **Hot-cold rule.** A probe is hot when its RIF is above the `q_rif` quantile of the RIFs of
//!   the whole pool. Among the cold candidates the lowest latency estimate wins; when every
//!   candidate is hot, the lowest RIF. Ties are broken at random.
//! - **Fallback.** No candidate in the pool (start, all aged out or used up): a replica at
//!   random, as Prequal does with an empty pool.
//!
//! Constants (choices, written down because the paper's tunables are per deployment and were
//! not at hand): `q_rif` 0.75 (the paper leaves the quantile a tunable; a third-party
//! reimplementation cites 0.6–0.9; we take the middle); reuse limit 2. Pool size 64, 3 probes
//! per query (every replica of a k = 3 key) and a maximum age of 100 ms were chosen on the
//! `c3` setup (seed 1, T = 500 ms; docs/strategies.md): with the paper's pool of 16 and 2
//! probes per query, p99 was 187 ms against C3's 50 ms, because a pool of 16 probes over 50
//! servers seldom holds more than one of a key's three replicas, and a lone candidate is
//! followed even when hot. A pool larger than the cluster holds one probe per server (pool 64:
//! 78 ms; with 3 probes per query: 52 ms; with 100 ms ageing: 45 ms; 20 ms ageing: 109 ms;
//! reuse limit 1: 77 ms, 3: 55 ms). The paper's removal of the worst probe on each query and its
//! idle-time probing are not modelled.

use super::c3::{check, InvalidConfig};
use super::prequal_pool::{Pool, Probe};
use super::{argmin_random_ties, Decision, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::ProbeReply;
use crate::model::{NodeId, RequestView};
use crate::time::{from_ms, Nanos};
use serde::{Deserialize, Serialize};
use super::registry::{Needs, Registration, tunable};

/// Prequal's tunables.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PrequalConfig {
    /// Probes sent per query, on average (≥ 0).
    pub probes_per_query: f64,
    /// Most probes kept.
    pub pool_size: usize,
    /// Oldest probe used, in ms.
    pub max_age_ms: f64,
    /// Most queries one probe routes.
    pub reuse_limit: u32,
    /// Quantile of the pool's RIFs above which a probe is hot, in (0, 1].
    pub q_rif: f64,
}

impl Default for PrequalConfig {
    fn default() -> Self {
        PrequalConfig { probes_per_query: 3.0, pool_size: 64, max_age_ms: 100.0, reuse_limit: 2, q_rif: 0.75 }
    }
}

impl PrequalConfig {
    /// Check the ranges the types cannot express.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        check("probes_per_query", self.probes_per_query, "in [0, 16]", |v| (0.0..=16.0).contains(&v))?;
        check("pool_size", self.pool_size as f64, "in 1..=1024", |v| (1.0..=1024.0).contains(&v))?;
        check("max_age_ms", self.max_age_ms, "> 0", |v| v > 0.0)?;
        check("reuse_limit", self.reuse_limit as f64, "≥ 1", |v| v >= 1.0)?;
        check("q_rif", self.q_rif, "in (0, 1]", |v| v > 0.0 && v <= 1.0)
    }
}

/// Prequal for one coordinator.
pub struct Prequal {
    cfg: PrequalConfig,
    max_age: Nanos,
    pool: Pool,
    /// Probes asked for by the last `select`, not yet handed to the core.
    outbox: Vec<NodeId>,
    rng: Rng,
    /// Scratch buffers reused by every `select` (it runs for every read): replicas left to
    /// probe, the candidates and the cold ones among them.
    left: Vec<NodeId>,
    candidates: Vec<usize>,
    cold: Vec<usize>,
}

impl Prequal {
    /// Prequal for one coordinator.
    pub fn new(cfg: &PrequalConfig, env: &SelectorEnv) -> Self {
        Prequal {
            cfg: cfg.clone(),
            max_age: from_ms(cfg.max_age_ms),
            pool: Pool::default(),
            outbox: Vec::new(),
            rng: Rng::new(env.seed, 0x5052_4551 + env.coordinator as u64),
            left: Vec::new(),
            candidates: Vec::new(),
            cold: Vec::new(),
        }
    }

    /// Probes in the pool.
    pub fn pool_len(&self) -> usize {
        self.pool.len()
    }

    /// Pick this query's probes among `replicas` (distinct, at random).
    fn plan_probes(&mut self, replicas: &[NodeId]) {
        let whole = self.cfg.probes_per_query.floor();
        let extra = self.rng.unit() < self.cfg.probes_per_query - whole;
        let n = (whole as usize + extra as usize).min(replicas.len());
        self.left.clear();
        self.left.extend_from_slice(replicas);
        for _ in 0..n {
            let i = self.rng.below(self.left.len());
            self.outbox.push(self.left.swap_remove(i));
        }
        debug_assert_eq!(self.left.len(), replicas.len() - n, "each probe goes to a distinct replica");
    }
}

impl ReplicaSelector for Prequal {
    fn select(&mut self, now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        let max_age = self.max_age;
        self.pool.retain_fresh(now, max_age);
        self.plan_probes(replicas);
        let (mut candidates, mut cold) = (std::mem::take(&mut self.candidates), std::mem::take(&mut self.cold));
        candidates.clear();
        // in pool order, as a pass over the pool would list them
        candidates.extend(replicas.iter().filter_map(|&r| self.pool.find(r)));
        candidates.sort_unstable();
        if candidates.is_empty() {
            self.candidates = candidates;
            return Decision::to(replicas[self.rng.below(replicas.len())]);
        }
        debug_assert!(candidates.windows(2).all(|w| w[0] < w[1]), "candidates are distinct pool slots");
        debug_assert!(candidates.iter().all(|&i| replicas.contains(&self.pool.probes()[i].replica)), "only probes of the offered replicas");
        let hot = self.pool.rif_quantile(self.cfg.q_rif);
        let pool = self.pool.probes();
        cold.clear();
        cold.extend(candidates.iter().copied().filter(|&i| pool[i].rif <= hot));
        let i = if cold.is_empty() {
            candidates[argmin_random_ties(&candidates, &mut self.rng, |&i| pool[i].rif as f64).expect("not empty")]
        } else {
            cold[argmin_random_ties(&cold, &mut self.rng, |&i| pool[i].latency as f64).expect("not empty")]
        };
        (self.candidates, self.cold) = (candidates, cold);
        let p = self.pool.used(i);
        debug_assert!(p.uses >= 1 && p.uses <= self.cfg.reuse_limit.max(1), "a probe used {} times, limit {}", p.uses, self.cfg.reuse_limit);
        if p.uses >= self.cfg.reuse_limit {
            self.pool.swap_remove(i);
        }
        debug_assert!(self.pool.probes().iter().all(|q| q.uses < self.cfg.reuse_limit), "a used-up probe leaves the pool");
        Decision::to(p.replica)
    }

    fn probes(&mut self, out: &mut Vec<NodeId>) {
        out.append(&mut self.outbox);
    }

    fn on_probe(&mut self, now: Nanos, replica: NodeId, reply: &ProbeReply) {
        let probe = Probe { replica, rif: reply.rif, latency: reply.latency, at: now, uses: 0 };
        if let Some(i) = self.pool.find(replica) {
            return self.pool.replace(i, probe);
        }
        let probes = self.pool.probes();
        if probes.len() >= self.cfg.pool_size {
            let oldest = (0..probes.len()).min_by_key(|&i| probes[i].at).expect("a full pool is not empty");
            self.pool.swap_remove(oldest);
        }
        self.pool.push(probe);
        debug_assert!(self.pool.len() <= self.cfg.pool_size.max(1), "pool {} over its size {}", self.pool.len(), self.cfg.pool_size);
    }
}


/// `prequal`: Prequal (NSDI 2024).
pub const REGISTRATION: Registration = Registration {
    name: "prequal",
    source: "Prequal (NSDI 2024)",
    needs: Needs { probes: true, ..Needs::NOTHING },
    build: |cfg, env| Box::new(Prequal::new(&cfg.prequal, env)),
    validate: |cfg| cfg.prequal.validate().map_err(|e| tunable("prequal", e)),
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::model::SizeHint;
    use crate::time::MS;

    fn prequal(cfg: PrequalConfig) -> Prequal {
        Prequal::new(&cfg, &env(8))
    }

    fn select(s: &mut Prequal, now: Nanos, replicas: &[NodeId]) -> NodeId {
        replica_of(s.select(now, &read(1, now, SizeHint::default()), replicas, &super::super::Blind))
    }

    fn probe(s: &mut Prequal, now: Nanos, replica: NodeId, rif: u32, latency_ms: u64) {
        s.on_probe(now, replica, &ProbeReply { rif, latency: latency_ms * MS });
    }

    #[test]
    fn runs_where_replicas_answer_probes() {
        use crate::selector::Engine;
        assert_eq!(Engine::Simulator.refusal(&REGISTRATION.needs), None);
        assert_eq!(Engine::Store.refusal(&REGISTRATION.needs), None, "the store's replicas answer probes");
        let cassandra = Engine::Cassandra { facts_polled: true }.refusal(&REGISTRATION.needs);
        assert!(cassandra.is_some_and(|why| why.contains("Cassandra's replicas answer no probe")));
    }

    #[test]
    fn among_cold_probes_the_lowest_latency_wins() {
        let mut s = prequal(PrequalConfig { reuse_limit: 10, ..Default::default() });
        probe(&mut s, 0, 1, 1, 9);
        probe(&mut s, 0, 2, 2, 3);
        probe(&mut s, 0, 3, 8, 1);
        probe(&mut s, 0, 4, 3, 5);
        // RIFs 1, 2, 3, 8: the 0.75 quantile is 3, so only replica 3 (RIF 8) is hot; it has the
        // lowest latency but the lowest cold latency is replica 2's
        assert_eq!(select(&mut s, MS, &[1, 2, 3]), 2);
        // restricted to the key's replicas: 4 is the only cold one among them
        assert_eq!(select(&mut s, MS, &[3, 4]), 4);
    }

    #[test]
    fn when_every_candidate_is_hot_the_lowest_rif_wins() {
        let mut s = prequal(PrequalConfig { q_rif: 0.5, reuse_limit: 10, ..Default::default() });
        probe(&mut s, 0, 1, 1, 1);
        probe(&mut s, 0, 2, 1, 1);
        probe(&mut s, 0, 3, 9, 1);
        probe(&mut s, 0, 4, 7, 9);
        // median RIF 1: both 3 and 4 are hot; 4 has fewer in flight despite its latency
        assert_eq!(select(&mut s, MS, &[3, 4]), 4);
    }

    #[test]
    fn a_used_probe_counts_its_query_and_leaves_at_the_reuse_limit() {
        let mut s = prequal(PrequalConfig { reuse_limit: 2, ..Default::default() });
        probe(&mut s, 0, 1, 0, 5);
        probe(&mut s, 0, 2, 1, 7);
        assert_eq!(select(&mut s, MS, &[1, 2]), 1);
        // replica 1's probe now says RIF 1, as replica 2's: both cold, 1 still faster
        assert_eq!(select(&mut s, MS, &[1, 2]), 1);
        assert_eq!(s.pool_len(), 1, "used twice: gone");
        assert_eq!(select(&mut s, MS, &[1, 2]), 2);
    }

    #[test]
    fn probes_age_out_and_an_empty_pool_falls_back_to_random() {
        let mut s = prequal(PrequalConfig::default());
        probe(&mut s, 0, 1, 0, 1);
        assert_eq!(select(&mut s, 100 * MS, &[1, 2, 3]), 1, "100 ms old: still fresh");
        let picks: std::collections::BTreeSet<NodeId> = (0..64).map(|_| select(&mut s, 101 * MS, &[1, 2, 3])).collect();
        assert_eq!(s.pool_len(), 0, "aged out");
        assert_eq!(picks.len(), 3, "an empty pool picks among all replicas at random: {picks:?}");
    }

    #[test]
    fn the_pool_is_bounded_and_keeps_one_probe_per_replica() {
        let mut s = prequal(PrequalConfig { pool_size: 2, ..Default::default() });
        probe(&mut s, 0, 1, 5, 5);
        probe(&mut s, MS, 2, 5, 5);
        probe(&mut s, 2 * MS, 2, 0, 1);
        assert_eq!(s.pool_len(), 2, "replica 2's newer probe replaced its older one");
        probe(&mut s, 3 * MS, 3, 0, 1);
        assert_eq!(s.pool_len(), 2);
        assert!(s.pool.find(1).is_none(), "the oldest left the full pool");
    }

    #[test]
    fn each_query_probes_distinct_replicas_of_its_key() {
        let mut s = prequal(PrequalConfig { probes_per_query: 2.5, ..Default::default() });
        let mut counts = [0usize; 4];
        for _ in 0..400 {
            select(&mut s, 0, &[5, 6, 7]);
            let mut out = Vec::new();
            s.probes(&mut out);
            assert!(out.iter().all(|r| [5, 6, 7].contains(r)), "{out:?}");
            let mut dedup = out.clone();
            dedup.sort();
            dedup.dedup();
            assert_eq!(dedup.len(), out.len(), "distinct");
            counts[out.len()] += 1;
        }
        assert_eq!(counts[0] + counts[1], 0);
        assert!((150..250).contains(&counts[2]) && counts[2] + counts[3] == 400, "{counts:?}");
    }

    #[test]
    fn config_is_validated() {
        assert_eq!(PrequalConfig::default().validate(), Ok(()));
        let bad = PrequalConfig { q_rif: 0.0, ..Default::default() };
        assert_eq!(bad.validate().unwrap_err().field, "q_rif");
        let bad = PrequalConfig { reuse_limit: 0, ..Default::default() };
        assert_eq!(bad.validate().unwrap_err().field, "reuse_limit");
    }
}
