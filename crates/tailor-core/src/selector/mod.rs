//! Replica selection at the coordinator (docs/strategies.md, Replica selectors).
//!
//! A selector is one coordinator's private state machine, driven by events. The coordinator
//! core ([`crate::coordinator`]) asks [`ReplicaSelector::select`] where a read should go; the
//! answer is a replica (with tags) or "wait" (C3 backpressure, Héron blocking), in which case
//! the core parks the request in a FIFO backlog for its replica group and offers the head again
//! after the next event that fed the selector (a response, a failure, facts) or at `retry_at`,
//! whichever comes first. A selector that waits must therefore give a `retry_at` unless an
//! outstanding response of its own will change its answer: nothing polls.

use crate::facts::{ProbeReply, Response};
use crate::model::{CoordinatorId, NodeId, RequestView, Tags};
use crate::time::Nanos;
use serde::{Deserialize, Serialize};

// helpers some selectors share (not selectors themselves)
pub mod c3_rate;
pub mod c3_score;
pub mod prequal_pool;
pub mod registry;
mod snitch_reservoir;
#[cfg(test)]
mod template;

pub use registry::{Engine, Fact, Needs, Registration};

/// Declare each selector's module and list its [`Registration`] (`pub const REGISTRATION` in
/// its file): adding a selector is its file plus its module's name here.
macro_rules! register {
    ($($module:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every selector, in the order reports list them.
        pub const REGISTRY: &[&Registration] = &[$(&$module::REGISTRATION),*];
        /// Every selector name, in the order reports list them.
        pub const SELECTORS: &[&str] = &[$($module::REGISTRATION.name),*];
    };
}

register!(
    random,
    round_robin,
    lor,
    dynamic_snitch,
    c3,
    heron,
    tap,
    eft,
    eft_sharded,
    popularity_aware,
    oracle,
    p2c_peak_ewma,
    prequal,
    slow_replica,
    envoy_least_request,
    mongodb_p2c,
    elasticsearch_ars,
    grpc_wrr,
    rack_aware,
);

/// What the selector decided for a request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decision {
    /// Send the request to `replica` now, carrying `tags`.
    Send { replica: NodeId, tags: Tags },
    /// Keep the request at the coordinator; offer it again on the next response from its replica
    /// group, or at `retry_at` if given.
    Wait { retry_at: Option<Nanos> },
}

impl Decision {
    /// Send to `replica` with default tags.
    pub fn to(replica: NodeId) -> Self {
        Decision::Send { replica, tags: Tags::default() }
    }
}

/// Omniscient quantities only a simulator can provide. Strategies defined with them (`eft`,
/// `oracle`) use them when present; every other strategy must ignore them.
pub trait World {
    /// When `node`'s queue will be empty, from the queued and remaining running work as the
    /// engine knows it (the simulator: nominal estimates over `P` workers).
    fn finish_time(&self, _node: NodeId) -> Option<Nanos> {
        None
    }
    /// The true number of requests waiting or running at `node`.
    fn queue_len(&self, _node: NodeId) -> Option<u32> {
        None
    }
    /// The true current service rate of `node` in requests per second per worker.
    fn service_rate(&self, _node: NodeId) -> Option<f64> {
        None
    }
}

/// A world that knows nothing (the real store).
pub struct Blind;
impl World for Blind {}

/// One coordinator's replica-selection strategy.
pub trait ReplicaSelector: Send {
    /// Choose a replica among `replicas` (all up, primary first) for `req`, or wait.
    fn select(&mut self, now: Nanos, req: &RequestView, replicas: &[NodeId], world: &dyn World) -> Decision;
    /// The engine sent `req` to `replica` at `now` (after a `Send` decision).
    fn on_sent(&mut self, _now: Nanos, _req: &RequestView, _replica: NodeId) {}
    /// A response arrived from `resp.replica` (always called, even for stale feedback).
    fn on_response(&mut self, _now: Nanos, _resp: &Response) {}
    /// Fresh facts arrived without answering a request this selector chose (a write ack, a
    /// heartbeat reply). Selectors whose published rule reads facts from every message (Héron's
    /// busy status) apply them here; the others learn from responses only, as published.
    fn on_facts(&mut self, _now: Nanos, _facts: &crate::facts::Feedback) {}
    /// A timer the selector asked for with [`ReplicaSelector::next_timer`] fired.
    fn on_timer(&mut self, _now: Nanos) {}
    /// When the selector next needs [`ReplicaSelector::on_timer`], if ever.
    fn next_timer(&self) -> Option<Nanos> {
        None
    }
    /// Probes to send now (Prequal): the core asks right after every `select` and sends one
    /// probe to each replica appended to `out`.
    fn probes(&mut self, _out: &mut Vec<NodeId>) {}
    /// `replica` answered a probe with its requests in flight and latency estimate.
    fn on_probe(&mut self, _now: Nanos, _replica: NodeId, _reply: &ProbeReply) {}
    /// Where the state this selector keeps for `servers` lies, one [`Reach`] at a time, as
    /// addresses of cache lines never read through, reading only what the step before pointed
    /// at: for an engine that asks the CPU for it ahead of `select` or `on_response` (the
    /// simulator at thousands of servers, where each server's entry is a cache miss). No effect
    /// on decisions. Returns whether the selector keeps such state at all, so that an engine
    /// can stop asking; the default keeps none worth it.
    fn footprint(&self, _servers: &[NodeId], _reach: Reach, _out: &mut dyn FnMut(*const u8)) -> bool {
        false
    }
}

/// How far an engine's prefetch of a selector's per-server state has got
/// ([`ReplicaSelector::footprint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Where a lookup of the server starts (an index slot).
    Index,
    /// The server's entry the index leads to.
    Entry,
}

/// Whether selector `name` sends probes, which its engine's replicas must answer (the
/// simulator does; the store does not yet): its [`Needs::probes`].
pub fn probing(name: &str) -> bool {
    registry::needs(name).is_some_and(|n| n.probes)
}

/// Whether selector `name` reads the queue-length trend [`crate::facts::Feedback::dq`] (TAP's
/// trend rule), as its [`Needs::facts`] declare. An engine whose selector does not may skip
/// measuring it ([`crate::replica::ReplicaCore::without_dq`]); an unknown name reads it (an
/// engine never skips a fact a selector might read).
pub fn reads_dq(name: &str) -> bool {
    reads(name, Fact::Dq)
}

/// Whether selector `name` reads `fact`, as its [`Needs::facts`] declare; an unknown name reads
/// every fact (an engine never skips a fact a selector might read).
pub fn reads(name: &str, fact: Fact) -> bool {
    registry::needs(name).is_none_or(|n| n.reads(fact))
}

/// What a selector knows about its surroundings when it is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SelectorEnv {
    /// This coordinator's id.
    pub coordinator: CoordinatorId,
    /// Number of coordinators (C3's `w`, TAP's `n`).
    pub coordinators: usize,
    /// Number of servers.
    pub servers: usize,
    /// Replication factor.
    pub replication: usize,
    /// Worker threads per server (`P`): how many requests a replica executes at once.
    pub workers: usize,
    /// Seed for the selector's private random stream.
    pub seed: u64,
}

/// Tunables of every selector, grouped per strategy; every field has a published default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SelectorConfig {
    /// C3.
    pub c3: c3::C3Config,
    /// Cassandra's dynamic snitch.
    pub dynamic_snitch: dynamic_snitch::SnitchConfig,
    /// Héron.
    pub heron: heron::HeronConfig,
    /// TAP.
    pub tap: tap::TapConfig,
    /// EFT-sharded.
    pub eft_sharded: eft_sharded::EftShardedConfig,
    /// Popularity-aware.
    pub popularity_aware: popularity_aware::PopularityConfig,
    /// p2c with peak EWMA.
    pub p2c_peak_ewma: p2c_peak_ewma::P2cConfig,
    /// Prequal.
    pub prequal: prequal::PrequalConfig,
    /// Envoy's least request. Like every table added after results files began to carry the
    /// spec, written only when set, so older specs serialise (and fingerprint) as before.
    #[serde(skip_serializing_if = "crate::is_default")]
    pub envoy_least_request: envoy_least_request::EnvoyLeastRequestConfig,
    /// MongoDB's server selection.
    #[serde(skip_serializing_if = "crate::is_default")]
    pub mongodb_p2c: mongodb_p2c::MongodbP2cConfig,
    /// gRPC's weighted round robin.
    #[serde(skip_serializing_if = "crate::is_default")]
    pub grpc_wrr: grpc_wrr::GrpcWrrConfig,
    /// The drivers' rack-aware round robin (its racks come from `cluster.topology`).
    #[serde(skip_serializing_if = "crate::is_default")]
    pub rack_aware: rack_aware::RackAwareConfig,
}

/// A strategy setting that cannot work as written, named by its path in a spec or config.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("invalid `{field}`: {reason}")]
pub struct InvalidSetting {
    /// The setting's path, e.g. `selector.c3.rate_beta`.
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

impl SelectorConfig {
    /// Check every selector's tunables (what the types cannot), each by its registration;
    /// names the first bad field.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        REGISTRY.iter().try_for_each(|r| (r.validate)(self))
    }
}

/// A strategy name that does not exist.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("unknown {kind} `{name}` (known: {known})")]
pub struct UnknownStrategy {
    /// "selector" or "local policy".
    pub kind: &'static str,
    /// The name given.
    pub name: String,
    /// Comma-separated known names.
    pub known: String,
}

/// Build the selector called `name` for one coordinator: a built-in, or a plugin registered
/// at run time ([`crate::plugin::selector`]).
pub fn build(name: &str, cfg: &SelectorConfig, env: &SelectorEnv) -> Result<Box<dyn ReplicaSelector>, UnknownStrategy> {
    if let Some(r) = registry::find(name) {
        return Ok((r.build)(cfg, env));
    }
    match crate::plugin::selector::find(name) {
        Some(p) => Ok((p.factory)(env)),
        None => Err(UnknownStrategy { kind: "selector", name: name.to_string(), known: known_names() }),
    }
}

/// Whether a selector called `name` exists, built in or registered as a plugin.
pub fn is_known(name: &str) -> bool {
    registry::find(name).is_some() || crate::plugin::selector::find(name).is_some()
}

/// Every selector's name, built-ins first then plugins, comma-separated (for errors).
pub fn known_names() -> String {
    let mut names: Vec<String> = SELECTORS.iter().map(|s| s.to_string()).collect();
    names.extend(crate::plugin::selector::names());
    names.join(", ")
}

/// A small deterministic random stream for selectors (SplitMix64), seeded per coordinator.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A stream seeded from `seed` mixed with a strategy-specific `salt`.
    pub fn new(seed: u64, salt: u64) -> Self {
        Rng(crate::ring::hash_key(seed ^ salt.rotate_left(17)))
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        crate::ring::hash_key(self.0)
    }

    /// Uniform integer in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Uniform float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Index of the minimum of `score` over `items`, ties broken uniformly at random.
pub fn argmin_random_ties<T>(items: &[T], rng: &mut Rng, mut score: impl FnMut(&T) -> f64) -> Option<usize> {
    let mut best = f64::INFINITY;
    let mut chosen = None;
    let mut ties = 0usize;
    for (i, item) in items.iter().enumerate() {
        let s = score(item);
        if s < best {
            best = s;
            chosen = Some(i);
            ties = 1;
        } else if s == best {
            ties += 1;
            if rng.below(ties) == 0 {
                chosen = Some(i);
            }
        }
    }
    chosen
}

#[cfg(test)]
pub(crate) mod testkit {
    //! Helpers for scripted event sequences in selector tests.
    use super::*;
    use crate::facts::Feedback;
    use crate::model::{Op, SizeHint};

    /// An environment with `servers` servers, k = 3, P = 4 workers, one coordinator.
    pub fn env(servers: usize) -> SelectorEnv {
        SelectorEnv { coordinator: 0, coordinators: 1, servers, replication: 3, workers: 4, seed: 7 }
    }

    /// A read for `key` released at `now` with the given hint.
    pub fn read(id: u64, now: Nanos, hint: SizeHint) -> RequestView {
        RequestView { id, key: id, op: Op::Read, release: now, coordinator: 0, hint }
    }

    /// A fresh response from `replica` to request `id` sent at `sent_at`, with `fb` as facts
    /// (leaked, so a test can build a response in one expression).
    pub fn response(id: u64, replica: NodeId, sent_at: Nanos, large: bool, fb: Feedback) -> Response<'static> {
        let feedback = Box::leak(Box::new(Feedback { from: replica, ..fb }));
        Response { request: id, replica, sent_at, large, feedback, fresh: true }
    }

    /// The replica a decision sends to; panics on wait.
    pub fn replica_of(d: Decision) -> NodeId {
        match d {
            Decision::Send { replica, .. } => replica,
            Decision::Wait { .. } => panic!("expected a send, got {d:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_and_unknown_is_an_error() {
        let env = testkit::env(5);
        for name in SELECTORS {
            assert!(build(name, &SelectorConfig::default(), &env).is_ok(), "{name}");
        }
        let err = build("nope", &SelectorConfig::default(), &env).err().unwrap();
        assert!(err.to_string().contains("unknown selector `nope`"));
    }

    #[test]
    fn every_selector_config_is_validated_and_names_the_field() {
        assert_eq!(SelectorConfig::default().validate(), Ok(()));
        let mut cfg = SelectorConfig::default();
        cfg.heron.ewma_weight = 1.5;
        assert_eq!(cfg.validate().unwrap_err().field, "selector.heron.ewma_weight");
        let mut cfg = SelectorConfig::default();
        cfg.dynamic_snitch.reservoir_size = 0;
        assert_eq!(cfg.validate().unwrap_err().field, "selector.dynamic_snitch.reservoir_size");
        let mut cfg = SelectorConfig::default();
        cfg.popularity_aware.table.buckets = 1 << 40;
        let err = cfg.validate().unwrap_err();
        assert_eq!(err.field, "selector.popularity_aware.table.buckets");
        assert!(err.to_string().contains("1..=2^26"), "{err}");
        let mut cfg = SelectorConfig::default();
        cfg.p2c_peak_ewma.tau_ms = f64::NAN;
        assert_eq!(cfg.validate().unwrap_err().field, "selector.p2c_peak_ewma.tau_ms");
        let mut cfg = SelectorConfig::default();
        cfg.eft_sharded.omega_ms = -1.0;
        assert_eq!(cfg.validate().unwrap_err().field, "selector.eft_sharded.omega_ms");
    }

    #[test]
    fn rng_below_is_in_range_and_spread() {
        let mut rng = Rng::new(1, 2);
        let mut counts = [0; 3];
        for _ in 0..30_000 {
            counts[rng.below(3)] += 1;
        }
        assert!(counts.iter().all(|&c| (9_000..11_000).contains(&c)), "{counts:?}");
    }
}
