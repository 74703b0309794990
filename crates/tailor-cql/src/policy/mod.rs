//! [`TailorPolicy`]: the CQL driver's load-balancing policy, an engine of tailor-core's
//! coordinator core like the simulator and the store: it drives one [`CoordinatorCore`] with
//! the driver's events and decides nothing itself.
//!
//! The core is built with read repair 0 (Cassandra repairs on its own), reads at ONE, no
//! speculation, no size oracle, and the Cassandra driver's limits
//! ([`tailor_core::coordinator::limits`], where each limit and what the core does instead is
//! named: no parking inside `pick`, no timer, answers identified by node and latency, facts by
//! polling, no hedges or shadows). [`engine::Engine`] holds the core and the attempts in flight
//! and documents the order of the driver's calls it relies on; this file only turns the
//! driver's types into node ids and back:
//! - `pick` → `core.read` among the key's replicas that have an open connection (all replicas
//!   of the token when the statement is token-aware; every node otherwise, at most
//!   [`tailor_core::ring::MAX_REPLICAS`]); the replica of its `Send` is the target. With the
//!   dynamic snitch off, Cassandra's coordinator then reads locally (see `launch/config.rs`).
//! - `on_request_success`/`on_request_failure` → `core.answered_bare`/`core.failed` for the
//!   ticket matched by node and latency.
//! - `fallback` → a lazy plan: the core's retry after the failure first, then the core's
//!   fallback order.
//! - a fact poll → `core.polled` (the freshness gate; the poll rides on the node's next answer).

pub mod engine;
mod nodes;
pub mod support;

use engine::Engine;
use nodes::NodeIds;
use scylla::cluster::metadata::Strategy;
use scylla::cluster::{ClusterState, NodeRef};
use scylla::errors::RequestAttemptError;
use scylla::policies::load_balancing::{FallbackPlan, LoadBalancingPolicy, RoutingInfo};
use scylla::routing::Shard;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tailor_core::coordinator::{CoordinatorConfig, CoordinatorCore, EngineLimits};
use tailor_core::facts::Feedback;
use tailor_core::model::{Consistency, NodeId};
use tailor_core::oracle::size::NoOracle;
use tailor_core::selector::{self, SelectorConfig, SelectorEnv};
use tailor_core::time::Nanos;
use uuid::Uuid;

/// What a policy is built from.
#[derive(Clone, Debug)]
pub struct PolicyConfig {
    /// The selector's name (one of [`tailor_core::selector::SELECTORS`] that
    /// [`support::refusal`] accepts).
    pub selector: String,
    /// Its tunables.
    pub selectors: SelectorConfig,
    /// Whether server facts are polled (required by C3).
    pub facts_polled: bool,
    /// Replication factor of the keyspace read.
    pub replication: usize,
    /// Nodes in the cluster.
    pub servers: usize,
    /// Reads one Cassandra node runs at once (`concurrent_reads`, 32 by default).
    pub workers: usize,
    /// Seed of the selector's random stream.
    pub seed: u64,
    /// How long an attempt the driver never reports on stays in flight before the core is told
    /// it failed (limit 3 of [`tailor_core::coordinator::limits`]): longer than the client's
    /// request timeout, so that every attempt the driver does report on is reported first.
    pub attempt_bound: Duration,
}

/// The attempt bound for a driver whose request timeout is `timeout`: twice that.
pub fn attempt_bound(timeout: Duration) -> Duration {
    timeout * 2
}

/// Counters of one policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PolicyStats {
    /// First attempts the core chose a node for (`pick`).
    pub picked: u64,
    /// Reads the selector answered `Wait` for, sent by the core to the least-loaded replica
    /// instead ([`tailor_core::coordinator::CoreStats::forced`]).
    pub forced: u64,
    /// Attempts that succeeded.
    pub succeeded: u64,
    /// Attempts that failed.
    pub failed: u64,
    /// Fact polls applied (fresh at the core's gate).
    pub polls: u64,
    /// Failures after which the core sent a retry, offered first by the fallback plan.
    pub retried: u64,
    /// Attempts the driver never reported on, failed to the core after the attempt bound.
    pub expired: u64,
    /// Answers matched to no attempt of the core's (a same-node retry of the driver's, a plan
    /// target after the core gave up).
    pub unmatched: u64,
    /// Copies the core asked for that no driver call could carry, failed back to it at once.
    pub undeliverable: u64,
}

/// A load-balancing policy driving a tailor-core coordinator core.
pub struct TailorPolicy {
    name: String,
    epoch: Instant,
    state: Mutex<State>,
}

struct State {
    engine: Engine,
    nodes: NodeIds,
}

/// Why a policy cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The selector needs facts Cassandra cannot give.
    #[error("{0}")]
    Unsupported(String),
    /// A tunable is invalid.
    #[error(transparent)]
    Invalid(#[from] selector::InvalidSetting),
}

impl TailorPolicy {
    /// Build the policy, refusing selectors Cassandra cannot feed. C3's rate constants are moved
    /// to Cassandra's capacity ([`tailor_core::selector::c3::C3Config::capacity_scale`] with
    /// `workers` and a 500 µs local read).
    pub fn new(cfg: &PolicyConfig) -> Result<TailorPolicy, PolicyError> {
        if let Some(why) = support::refusal(&cfg.selector, cfg.facts_polled) {
            return Err(PolicyError::Unsupported(why));
        }
        cfg.selectors.validate()?;
        let mut tunables = cfg.selectors.clone();
        let k = selector::c3::C3Config::capacity_scale(cfg.workers.max(1), CASSANDRA_READ_NS);
        tunables.c3 = tunables.c3.scaled(k);
        let env = SelectorEnv {
            coordinator: 0,
            coordinators: 1,
            servers: cfg.servers.max(1),
            replication: cfg.replication.max(1),
            workers: cfg.workers.max(1),
            seed: cfg.seed,
        };
        let selector =
            selector::build(&cfg.selector, &tunables, &env).map_err(|e| PolicyError::Unsupported(e.to_string()))?;
        let core_cfg = CoordinatorConfig {
            read_repair: 0.0,
            park_timeout: None,
            id: 0,
            read_consistency: Consistency::One,
            write_consistency: Consistency::One,
            park_capacity: 1,
            seed: cfg.seed,
        };
        let core =
            CoordinatorCore::new(core_cfg, selector, Box::new(NoOracle)).with_limits(EngineLimits::CASSANDRA_DRIVER);
        let bound = (cfg.attempt_bound.as_nanos() as Nanos).max(1);
        let state = State { engine: Engine::new(core, bound), nodes: NodeIds::default() };
        Ok(TailorPolicy { name: format!("tailor-{}", cfg.selector), epoch: Instant::now(), state: Mutex::new(state) })
    }

    /// The policy's clock: nanoseconds since it was built.
    pub fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    /// Counters so far.
    pub fn stats(&self) -> PolicyStats {
        self.lock().engine.stats()
    }

    /// Attempts `pick` sent to each host, by host id.
    pub fn picks_per_host(&self) -> Vec<(Uuid, u64)> {
        let st = self.lock();
        st.engine.picks_per_node().filter_map(|(id, n)| Some((st.nodes.host(id)?, n))).collect()
    }

    /// Facts polled from host `host`, stamped now: through the core's freshness gate to the
    /// selector, and kept to ride on the host's next answer. `feedback.from` and its timestamp
    /// are ignored (the policy assigns node ids and stamps polls with its clock).
    pub fn polled(&self, host: Uuid, feedback: Feedback) {
        // read under the lock, so that the core sees events in clock order
        let mut st = self.lock();
        let now = self.now();
        let node = st.nodes.id_of(host);
        st.engine.polled(now, node, feedback);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // a panic inside a selector is a bug; the state it left is still the best there is
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn answered(&self, latency: Duration, node: NodeRef<'_>, ok: bool) {
        // read under the lock, so that the core sees events in clock order
        let mut st = self.lock();
        let now = self.now();
        let id = st.nodes.id(node);
        st.engine.answered(now, id, latency.as_nanos() as Nanos, ok);
    }
}

/// A local read on an idle Cassandra node, in ns (the service time C3's rates are scaled to).
pub const CASSANDRA_READ_NS: f64 = 500_000.0;

impl std::fmt::Debug for TailorPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TailorPolicy").field("name", &self.name).field("stats", &self.stats()).finish()
    }
}

/// The replicas of the request's token (every node when the statement is not token-aware),
/// those with an open connection first choice; all of them when none is connected yet.
fn candidates<'a>(request: &RoutingInfo<'_>, cluster: &'a ClusterState) -> Vec<NodeRef<'a>> {
    static UNKNOWN_KEYSPACE: Strategy = Strategy::LocalStrategy;
    let all: Vec<NodeRef<'a>> = match (request.token, request.table) {
        (Some(token), Some(table)) => {
            let strategy = cluster.get_keyspace(table.ks_name()).map_or(&UNKNOWN_KEYSPACE, |k| &k.strategy);
            cluster
                .replica_locator()
                .replicas_for_token(token, strategy, None, table)
                .into_iter()
                .map(|(n, _)| n)
                .collect()
        }
        _ => cluster.get_nodes_info().iter().collect(),
    };
    let connected: Vec<NodeRef<'a>> = all.iter().copied().filter(|n| n.is_enabled() && n.is_connected()).collect();
    if connected.is_empty() {
        all
    } else {
        connected
    }
}

/// A read's fallback plan, asked item by item (see [`Engine::fallback_next`]): each item is the
/// core's retry of the read if one waits, else the next candidate in the core's fallback order.
struct Fallback<'a> {
    policy: &'a TailorPolicy,
    cluster: &'a ClusterState,
    candidates: Vec<NodeRef<'a>>,
    key: u64,
    given: Vec<NodeId>,
}

impl<'a> Iterator for Fallback<'a> {
    type Item = (NodeRef<'a>, Option<Shard>);

    fn next(&mut self) -> Option<Self::Item> {
        let mut st = self.policy.lock();
        let now = self.policy.now();
        let ids: Vec<NodeId> = self.candidates.iter().map(|n| st.nodes.id(n)).collect();
        let next = st.engine.fallback_next(now, self.key, &ids, &self.given)?;
        self.given.push(next);
        let host = st.nodes.host(next)?;
        // the retry went to one of the pick's candidates, which may have lost its connection since
        let node = (self.candidates.iter().copied())
            .chain(self.cluster.get_nodes_info().iter())
            .find(|n| n.host_id == host)?;
        Some((node, None))
    }
}

/// The key the core knows a request by: its token, 0 when it has none.
fn key_of(request: &RoutingInfo<'_>) -> u64 {
    request.token.map_or(0, |t| t.value() as u64)
}

impl LoadBalancingPolicy for TailorPolicy {
    fn pick<'a>(&'a self, request: &'a RoutingInfo, cluster: &'a ClusterState) -> Option<(NodeRef<'a>, Option<Shard>)> {
        let nodes = candidates(request, cluster);
        // read under the lock, so that the core sees events in clock order
        let mut st = self.lock();
        let now = self.now();
        let ids: Vec<NodeId> = nodes.iter().map(|n| st.nodes.id(n)).collect();
        let chosen = st.engine.pick(now, key_of(request), &ids)?;
        let at = ids.iter().position(|&i| i == chosen).expect("the core chose among the candidates");
        Some((nodes[at], None))
    }

    fn fallback<'a>(&'a self, request: &'a RoutingInfo, cluster: &'a ClusterState) -> FallbackPlan<'a> {
        let candidates = candidates(request, cluster);
        Box::new(Fallback { policy: self, cluster, candidates, key: key_of(request), given: Vec::new() })
    }

    fn on_request_success(&self, _request: &RoutingInfo, latency: Duration, node: NodeRef<'_>) {
        self.answered(latency, node, true);
    }

    fn on_request_failure(
        &self,
        _request: &RoutingInfo,
        latency: Duration,
        node: NodeRef<'_>,
        _error: &RequestAttemptError,
    ) {
        self.answered(latency, node, false);
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(selector: &str) -> PolicyConfig {
        PolicyConfig {
            selector: selector.into(),
            selectors: SelectorConfig::default(),
            facts_polled: true,
            replication: 3,
            servers: 3,
            workers: 32,
            seed: 1,
            attempt_bound: attempt_bound(Duration::from_secs(10)),
        }
    }

    #[test]
    fn a_policy_drives_a_core_and_counts_polls_through_its_gate() {
        let policy = TailorPolicy::new(&config("c3")).expect("c3 runs with polled facts");
        for _ in 0..3 {
            policy.polled(Uuid::from_u128(1), Feedback { queue_len: 2, service_time: 500_000, ..Feedback::default() });
        }
        let s = policy.stats();
        assert_eq!((s.polls, s.picked, s.forced), (3, 0, 0));
        assert!(policy.picks_per_host().is_empty());
        assert!(TailorPolicy::new(&PolicyConfig { facts_polled: false, ..config("c3") }).is_err());
    }
}
