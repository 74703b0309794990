//! [`TailorPolicy`]: the CQL driver's load-balancing policy driving one of tailor-core's
//! selectors, unchanged.
//!
//! How the driver's events map onto the selector's (the policy is the engine here: it owns the
//! clock, the driver owns the sockets):
//! - `pick` → `select` among the key's replicas that have an open connection (all replicas of
//!   the token when the statement is token-aware; every node otherwise), then `on_sent` for the
//!   chosen one. The driver sends the attempt to that node; with a topology snitch and the
//!   dynamic snitch off, Cassandra's coordinator then reads locally (see `launch/config.rs`).
//! - `on_request_success`/`on_request_failure` → `on_response` for the node that answered, with
//!   `sent_at` = now − the driver's per-attempt latency. The response carries the node's newest
//!   polled facts, fresh the first time only (core's freshness gate), so C3 applies each poll
//!   once, as if it were piggybacked on the next response.
//! - a fact poll → `on_facts`.
//! - the selector's timer runs at the first event at or after `next_timer` (the driver gives the
//!   policy no timer of its own; events come at the request rate).
//!
//! **Choice:** `pick` is synchronous and cannot park a request, so a `Wait` (C3's rate limiter,
//! with every replica over its rate) sends the read to the replica with the fewest attempts in
//! flight from this policy, and counts it in [`PolicyStats::forced`]; a run reports that count.
//! The fallback plan (used after a failed attempt) lists the other replicas, fewest in flight
//! first; its attempts feed `on_response` but not `on_sent` (the driver may skip a node without
//! telling the policy, and a count that never comes back would shun that node forever).

mod nodes;
pub mod support;

use nodes::NodeIds;
use scylla::cluster::metadata::Strategy;
use scylla::cluster::{ClusterState, NodeRef};
use scylla::errors::RequestAttemptError;
use scylla::policies::load_balancing::{FallbackPlan, LoadBalancingPolicy, RoutingInfo};
use scylla::routing::Shard;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tailor_core::facts::{Feedback, Freshness, Response};
use tailor_core::model::{NodeId, Op, RequestView, SizeHint};
use tailor_core::node_map::{InFlight, NodeMap};
use tailor_core::selector::{self, Blind, Decision, ReplicaSelector, SelectorConfig, SelectorEnv};
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
}

/// Counters of one policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PolicyStats {
    /// Attempts the selector chose the node for.
    pub picked: u64,
    /// Picks the selector answered `Wait` for, sent to the least-loaded replica instead.
    pub forced: u64,
    /// Attempts that succeeded.
    pub succeeded: u64,
    /// Attempts that failed.
    pub failed: u64,
    /// Fact polls applied.
    pub polls: u64,
}

/// A load-balancing policy driving a tailor-core selector.
pub struct TailorPolicy {
    name: String,
    epoch: Instant,
    state: Mutex<State>,
}

struct State {
    selector: Box<dyn ReplicaSelector>,
    nodes: NodeIds,
    in_flight: InFlight,
    freshness: Freshness,
    facts: NodeMap<Polled>,
    stats: PolicyStats,
    next_request: u64,
    picks_per_node: NodeMap<u64>,
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
        let state = State {
            selector,
            nodes: NodeIds::default(),
            in_flight: InFlight::default(),
            freshness: Freshness::default(),
            facts: NodeMap::new(),
            stats: PolicyStats::default(),
            next_request: 0,
            picks_per_node: NodeMap::new(),
        };
        Ok(TailorPolicy { name: format!("tailor-{}", cfg.selector), epoch: Instant::now(), state: Mutex::new(state) })
    }

    /// The policy's clock: nanoseconds since it was built.
    pub fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    /// Counters so far.
    pub fn stats(&self) -> PolicyStats {
        self.lock().stats
    }

    /// Attempts the selector sent to each host, by host id.
    pub fn picks_per_host(&self) -> Vec<(Uuid, u64)> {
        let st = self.lock();
        st.picks_per_node.iter().filter_map(|(id, &n)| Some((st.nodes.host(id)?, n))).collect()
    }

    /// Facts polled from host `host`: offered to the selector (`on_facts`) and kept for the
    /// next response from that host. `feedback.from` is ignored (the policy assigns node ids).
    pub fn polled(&self, host: Uuid, mut feedback: Feedback) {
        let now = self.now();
        let mut st = self.lock();
        let node = st.nodes.id_of(host);
        feedback.from = node;
        feedback.timestamp = now;
        if !st.freshness.accept(node, now) {
            return;
        }
        st.stats.polls += 1;
        st.run_timer(now);
        st.selector.on_facts(now, &feedback);
        *st.facts.get_or_insert_with(node, Polled::default) = Polled { feedback, shown: false };
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // a panic inside a selector is a bug; the state it left is still the best there is
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn answered(&self, latency: Duration, node: NodeRef<'_>, ok: bool) {
        let now = self.now();
        let mut st = self.lock();
        let id = st.nodes.id(node);
        st.in_flight.answered(id);
        if ok {
            st.stats.succeeded += 1;
        } else {
            st.stats.failed += 1;
        }
        let sent_at = now.saturating_sub(latency.as_nanos() as Nanos);
        let (feedback, fresh) = st.facts_for(id, ok);
        st.run_timer(now);
        let response = Response { request: 0, replica: id, sent_at, large: false, feedback: &feedback, fresh };
        st.selector.on_response(now, &response);
    }
}

/// A local read on an idle Cassandra node, in ns (the service time C3's rates are scaled to).
pub const CASSANDRA_READ_NS: f64 = 500_000.0;

impl State {
    /// Fire the selector's timer if it is due.
    fn run_timer(&mut self, now: Nanos) {
        if self.selector.next_timer().is_some_and(|t| t <= now) {
            self.selector.on_timer(now);
        }
    }

    /// The facts the selector sees with an attempt's response from `node`, and whether they
    /// are fresh: the node's newest polled facts, fresh only the first time they are shown and
    /// only for a success (a failure is reported with empty facts, as the coordinator core
    /// reports failures).
    fn facts_for(&mut self, node: NodeId, ok: bool) -> (Feedback, bool) {
        match self.facts.get_mut(node).filter(|_| ok) {
            Some(p) => (p.feedback.clone(), !std::mem::replace(&mut p.shown, true)),
            None => (Feedback { from: node, ..Feedback::default() }, false),
        }
    }

    /// Choose among `replicas` (node ids); `None` when there are none.
    fn choose(&mut self, now: Nanos, key: u64, replicas: &[NodeId]) -> Option<NodeId> {
        if replicas.is_empty() {
            return None;
        }
        self.run_timer(now);
        self.next_request += 1;
        let view = RequestView {
            id: self.next_request,
            key,
            op: Op::Read,
            release: now,
            coordinator: 0,
            hint: SizeHint::default(),
        };
        let chosen = match self.selector.select(now, &view, replicas, &Blind) {
            Decision::Send { replica, .. } if replicas.contains(&replica) => replica,
            Decision::Send { replica, .. } => panic!("selector chose {replica}, not among the replicas {replicas:?}"),
            Decision::Wait { .. } => {
                self.stats.forced += 1;
                replicas.iter().copied().min_by_key(|&r| self.in_flight.count(r)).expect("replicas is not empty")
            }
        };
        self.selector.on_sent(now, &view, chosen);
        self.in_flight.sent(chosen);
        self.stats.picked += 1;
        *self.picks_per_node.get_or_insert_with(chosen, || 0) += 1;
        Some(chosen)
    }
}

/// A node's newest polled facts, and whether a response has carried them yet.
#[derive(Default)]
struct Polled {
    feedback: Feedback,
    shown: bool,
}

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

impl LoadBalancingPolicy for TailorPolicy {
    fn pick<'a>(&'a self, request: &'a RoutingInfo, cluster: &'a ClusterState) -> Option<(NodeRef<'a>, Option<Shard>)> {
        let nodes = candidates(request, cluster);
        let now = self.now();
        let mut st = self.lock();
        let ids: Vec<NodeId> = nodes.iter().map(|n| st.nodes.id(n)).collect();
        let key = request.token.map_or(0, |t| t.value() as u64);
        let chosen = st.choose(now, key, &ids)?;
        let at = ids.iter().position(|&i| i == chosen).expect("chosen among ids");
        Some((nodes[at], None))
    }

    fn fallback<'a>(&'a self, request: &'a RoutingInfo, cluster: &'a ClusterState) -> FallbackPlan<'a> {
        let mut nodes = candidates(request, cluster);
        let mut st = self.lock();
        let mut keyed: Vec<(u32, NodeRef<'a>)> = Vec::with_capacity(nodes.len());
        for n in nodes.drain(..) {
            let id = st.nodes.id(n);
            keyed.push((st.in_flight.count(id), n));
        }
        keyed.sort_by_key(|(count, _)| *count);
        Box::new(keyed.into_iter().map(|(_, n)| (n, None)))
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
