//! The spec schema. Every field has a default, so a spec names only what differs.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tailor_core::coordinator::speculation::{SpeculationConfig, SpeculativeRetry};
use tailor_core::local::LocalConfig;
use tailor_core::selector::SelectorConfig;
use tailor_core::workload::clients::DemandSkew;
use tailor_core::workload::multiget::{KeyCountLaw, MultigetDraws};
use tailor_core::workload::popularity::PopularityConfig;
use tailor_core::workload::sizes::SizeConfig;

/// A whole experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Spec {
    /// Name shown in reports.
    pub name: String,
    /// One line saying what the experiment shows.
    pub description: String,
    /// Seeds; every combination runs once per seed.
    pub seeds: Vec<u64>,
    /// The cluster model.
    pub cluster: ClusterSpec,
    /// The workload.
    pub workload: WorkloadSpec,
    /// The strategies compared.
    pub compare: CompareSpec,
    /// Swept parameters: dotted path → values (each value is one point of the sweep).
    pub sweep: BTreeMap<String, Vec<toml::Value>>,
    /// Selector tunables.
    pub selector: SelectorConfig,
    /// Local policy tunables.
    pub local: LocalConfig,
    /// Lower-bound computation on each run.
    pub bound: BoundSpec,
    /// What the results keep.
    pub report: ReportSpec,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            name: "custom".into(),
            description: String::new(),
            seeds: vec![1],
            cluster: ClusterSpec::default(),
            workload: WorkloadSpec::default(),
            compare: CompareSpec::default(),
            sweep: BTreeMap::new(),
            selector: SelectorConfig::default(),
            local: LocalConfig::default(),
            bound: BoundSpec::default(),
            report: ReportSpec::default(),
        }
    }
}

/// Servers, clients, network and service-time model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSpec {
    /// Number of servers (replicas), `m`.
    pub servers: usize,
    /// Number of clients acting as coordinators (0 = one per server, as in the store).
    pub clients: usize,
    /// Replication factor `k`.
    pub replication: usize,
    /// Tokens per server on the ring (1 = replica groups are consecutive servers).
    pub vnodes: usize,
    /// Requests a server executes at once, `P`.
    pub workers: usize,
    /// Units of capacity (disks, cores) the jobs in service share; 0 (the default, left out of
    /// the spec text) gives every worker its own. When set, each of the `n` jobs in service runs
    /// at `min(1, shared_capacity / n)` of full speed, so a long read slows every read in
    /// service beside it (Héron's Cassandra: 32 read threads on two disks); `workers` large and
    /// 1 here is processor sharing.
    #[serde(skip_serializing_if = "tailor_core::is_default")]
    pub shared_capacity: usize,
    /// One-way network delay between a client and a server, in milliseconds.
    pub network_delay_ms: f64,
    /// Probability that a read also sends unmeasured shadow reads to the other replicas.
    pub read_repair: f64,
    /// Replicas that must acknowledge a write before it completes: "one", "quorum" or "all".
    pub write_consistency: Consistency,
    /// Processing-time model.
    pub service: ServiceSpec,
    /// Bimodal service-rate fluctuation.
    pub fluctuation: FluctuationSpec,
    /// Per-server LRU cache (0 capacity = no cache).
    pub cache: CacheSpec,
    /// Servers slowed by a stop/continue duty cycle, as a SIGSTOPped JVM (none by default; left
    /// out of the spec text when empty, so specs without it print as before).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slow_servers: Vec<SlowServer>,
    /// Give the strategies defined with exact knowledge (`eft`, `oracle`) the simulator's true
    /// finish times and queue lengths. `false` runs them on the same estimates the store uses
    /// (piggybacked pending work, outstanding counts), so a simulated run and a live run of a
    /// live preset compare one implementation.
    pub omniscient: bool,
    /// Hedge reads at ONE (Cassandra's `speculative_retry`): `none` (the default), a
    /// percentile of the coordinator's recent read latencies like `95p`, or a delay like `10ms`.
    pub speculative_retry: String,
    /// Hedges allowed per read on average (the extra load hedging may spend), in [0, 1].
    pub speculative_budget: f64,
    /// Cancel the losing copy of a hedged read once the first answers: a copy still queued at
    /// its replica is dropped, one already running finishes (Dean and Barroso's tied requests).
    /// Off by default; written only when on.
    #[serde(skip_serializing_if = "tailor_core::is_default")]
    pub hedge_cancel: bool,
    /// Most requests a server lets wait (the store's `max_queue`): one that finds that many
    /// waiting is refused at once, a failed copy its coordinator retries on another replica
    /// (none by default; left out of the spec text when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_queue: Option<usize>,
    /// Failures injected during the run (none by default; left out of the spec text when
    /// empty): a slow, gray or down server over an interval (docs/failures.md).
    #[serde(skip_serializing_if = "tailor_core::is_default")]
    pub faults: Vec<crate::Fault>,
    /// Client timeouts and failover measures under `faults` (written only when changed).
    #[serde(skip_serializing_if = "tailor_core::is_default")]
    pub failover: crate::FailoverSpec,
    /// Racks or datacenters with a delay between them (none by default; written only when set).
    #[serde(skip_serializing_if = "tailor_core::is_default")]
    pub topology: crate::TopologySpec,
}

/// Default hedge budget: at most 5 % more reads.
pub const DEFAULT_SPECULATIVE_BUDGET: f64 = 0.05;

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec {
            servers: 12,
            clients: 0,
            replication: 3,
            vnodes: 1,
            workers: 4,
            shared_capacity: 0,
            network_delay_ms: 0.0,
            read_repair: 0.0,
            write_consistency: Consistency::Quorum,
            service: ServiceSpec::default(),
            fluctuation: FluctuationSpec::default(),
            cache: CacheSpec::default(),
            slow_servers: Vec::new(),
            omniscient: true,
            speculative_retry: "none".into(),
            speculative_budget: DEFAULT_SPECULATIVE_BUDGET,
            hedge_cancel: false,
            max_queue: None,
            faults: Vec::new(),
            failover: crate::FailoverSpec::default(),
            topology: crate::TopologySpec::default(),
        }
    }
}

impl ClusterSpec {
    /// Jobs a server runs at full speed at once: its workers, or the capacity they share.
    pub fn capacity(&self) -> usize {
        if self.shared_capacity > 0 {
            self.shared_capacity
        } else {
            self.workers
        }
    }

    /// Mean nominal processing time of a request, in ns, given the data set's mean value size:
    /// what "load 1.0" is measured against, the same in the simulator and the load generator.
    pub fn mean_service_ns(&self, mean_size: f64) -> f64 {
        let (alpha, beta_ms) = self.nominal_linear();
        alpha * mean_size + beta_ms * 1e6
    }

    /// A request's nominal processing model as `p = alpha * size + beta` (`alpha` in ns per
    /// byte, `beta` in ms): a modelled cache's miss time, else the service model.
    pub fn nominal_linear(&self) -> (f64, f64) {
        if self.cache.capacity > 0 {
            (0.0, self.cache.miss_ms)
        } else {
            self.service.linear()
        }
    }

    /// The speculative-retry rule (`None`: off).
    pub fn speculation(&self) -> Result<Option<SpeculationConfig>, String> {
        let rule = SpeculativeRetry::parse(&self.speculative_retry)?;
        Ok(rule.map(|rule| SpeculationConfig { rule, budget: self.speculative_budget }))
    }

    /// Coordinators actually used (`clients`, or one per server when 0).
    pub fn coordinators(&self) -> usize {
        if self.clients == 0 {
            self.servers
        } else {
            self.clients
        }
    }
}

pub use tailor_core::model::Consistency;

/// How long a request takes to execute.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceSpec {
    /// "exponential" (C3 model, mean `mean_ms`) or "size" (`p = size / bandwidth + overhead`).
    pub model: ServiceModel,
    /// Mean service time of the exponential model (the slow, base state), in ms.
    pub mean_ms: f64,
    /// Emulated device bandwidth of the size model, in Mbit/s (`1/alpha`).
    pub bandwidth_mbps: f64,
    /// Fixed cost of the size model per request, in ms (`beta`).
    pub overhead_ms: f64,
}

impl Default for ServiceSpec {
    fn default() -> Self {
        ServiceSpec { model: ServiceModel::Exponential, mean_ms: 4.0, bandwidth_mbps: 100.0, overhead_ms: 1.0 }
    }
}

impl ServiceSpec {
    /// Nanoseconds per byte of the size model (`alpha`).
    pub fn alpha_ns_per_byte(&self) -> f64 {
        8.0 * 1e9 / (self.bandwidth_mbps * 1e6)
    }

    /// The model as `p = alpha * size + beta`: (`alpha` in ns per byte, `beta` in ms); the
    /// exponential model is its mean, independent of the size.
    pub fn linear(&self) -> (f64, f64) {
        match self.model {
            ServiceModel::Exponential => (0.0, self.mean_ms),
            ServiceModel::Size => (self.alpha_ns_per_byte(), self.overhead_ms),
        }
    }

    /// Nominal processing time of a value of `size` bytes, in ns (the mean for exponential).
    pub fn nominal_ns(&self, size: u64) -> f64 {
        let (alpha, beta_ms) = self.linear();
        alpha * size as f64 + beta_ms * 1e6
    }
}

/// Processing-time model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServiceModel {
    /// Exponential with a (fluctuating) mean.
    Exponential,
    /// Proportional to the value size plus a fixed overhead.
    Size,
}

/// Bimodal fluctuation: every `interval_ms`, each server independently switches state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FluctuationSpec {
    /// Period `T` in ms; 0 disables fluctuation.
    pub interval_ms: f64,
    /// Rate ratio `D` between the two states.
    pub factor: f64,
    /// Whether the other state is `factor` times faster (absim) or slower than the base.
    pub mode: FluctuationMode,
    /// Probability of being in the other state at each period.
    pub probability: f64,
}

impl FluctuationSpec {
    /// The service-time multiplier of the other state (the base state's is 1).
    pub fn other_slowdown(&self) -> f64 {
        match self.mode {
            FluctuationMode::Faster => 1.0 / self.factor,
            FluctuationMode::Slower => self.factor,
        }
    }
}

impl Default for FluctuationSpec {
    fn default() -> Self {
        FluctuationSpec { interval_ms: 0.0, factor: 6.0, mode: FluctuationMode::Faster, probability: 0.5 }
    }
}

/// Direction of the fluctuation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FluctuationMode {
    /// The other state is faster (absim's published runs: base slow, 6× faster).
    Faster,
    /// The other state is slower (a slowdown, as in the C3 text's variant).
    Slower,
}

/// A server stopped for `duty` of every `period_ms` and running for the rest: while stopped it
/// starts nothing and its running jobs make no progress (the way `tailor cassandra experiment`
/// slows a node). Each period runs first and stops for its last `duty` share; periods start at
/// t = 0, so a run is a pure function of its spec.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlowServer {
    /// Server index, from 0.
    pub server: usize,
    /// Share of each period the server is stopped, in (0, 1).
    pub duty: f64,
    /// Period of the duty cycle, in ms.
    pub period_ms: f64,
}

/// Per-server LRU cache of values: hits and misses have their own mean service times.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheSpec {
    /// Keys each server caches; 0 disables the cache model.
    pub capacity: usize,
    /// Mean service time of a cache hit, in ms (exponential).
    pub hit_ms: f64,
    /// Mean service time of a miss (disk read), in ms (exponential).
    pub miss_ms: f64,
}

impl Default for CacheSpec {
    fn default() -> Self {
        CacheSpec { capacity: 0, hit_ms: 0.1, miss_ms: 1.0 }
    }
}

/// Requests: how many, which keys, which sizes, which operations, when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Requests per run (warm-up included).
    pub requests: u64,
    /// Requests released (simulator) or intended to be sent (live) before this time are not
    /// measured, in ms.
    pub warmup_ms: f64,
    /// Distinct keys in the data set.
    pub keys: u64,
    /// Key popularity.
    pub popularity: PopularityConfig,
    /// Value sizes (one size per key).
    pub sizes: SizeConfig,
    /// Fraction of reads (the rest are writes).
    pub reads: f64,
    /// How requests arrive.
    pub arrival: ArrivalKind,
    /// Offered load as a fraction of the cluster's base capacity (Poisson; ignored if `rate` > 0).
    pub load: f64,
    /// Offered rate in requests per second (Poisson); 0 = derive from `load`.
    pub rate: f64,
    /// Requests each client keeps outstanding (closed loop).
    pub outstanding: u32,
    /// Think time between a response and the next request (closed loop), in ms.
    pub think_ms: f64,
    /// Trace file to replay (arrival = "trace"), possibly zstd-compressed (docs/traces.md).
    pub trace: String,
    /// The trace's format: "auto" (told by the file), "tailor" (`time,key,op,size`),
    /// "twitter" (Twitter's cache traces) or "oracle-general" (libCacheSim's binary records).
    /// Written into a spec only when not "auto", so every existing spec reads as before.
    #[serde(skip_serializing_if = "tailor_core::is_default")]
    pub trace_format: TraceFormat,
    /// Demand skew across clients (e.g. 20 % of clients issue 80 % of requests).
    pub skew: Option<DemandSkew>,
    /// Values above this many bytes are "large" (Héron's THR_L, RML's tag, small-behind-large).
    pub large_threshold: u64,
    /// The coordinators' size oracle: "exact", "bloom" (Héron) or "none".
    pub oracle: OracleKind,
    /// Multi-get reads (one request of many keys, done when its last key is read). Written
    /// into a spec only when set, so every existing spec reads and writes as before.
    #[serde(default, skip_serializing_if = "tailor_core::is_default")]
    pub multiget: MultigetSpec,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            requests: 100_000,
            warmup_ms: 0.0,
            keys: 100_000,
            popularity: PopularityConfig::Uniform,
            sizes: SizeConfig::Fixed { bytes: 1024 },
            reads: 1.0,
            arrival: ArrivalKind::Poisson,
            load: 0.7,
            rate: 0.0,
            outstanding: 1,
            think_ms: 0.0,
            trace: String::new(),
            trace_format: TraceFormat::Auto,
            skew: None,
            large_threshold: 256 * 1024,
            oracle: OracleKind::Exact,
            multiget: MultigetSpec::default(),
        }
    }
}

/// Multi-get reads: a share of reads each ask for `keys` distinct keys at once (or a count drawn
/// up to `keys_max` by `keys_law`), drawn from the workload's popularity law, each key with its
/// own size; the request completes when all are read (`tailor_core::workload::multiget`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MultigetSpec {
    /// Distinct keys per multi-get (the fewest, when `keys_max` is above it); 0 (the default)
    /// turns multi-gets off.
    pub keys: u32,
    /// The most keys per multi-get; 0 (the default): always `keys`.
    #[serde(skip_serializing_if = "tailor_core::is_default")]
    pub keys_max: u32,
    /// How the count is drawn between `keys` and `keys_max`: `uniform` (the default) or
    /// `log-uniform` (most small, a few large, as Rein found in SoundCloud's trace).
    #[serde(skip_serializing_if = "tailor_core::is_default")]
    pub keys_law: KeyCountLaw,
    /// Share of reads that are multi-gets, in (0, 1].
    pub fraction: f64,
}

impl MultigetSpec {
    /// The most keys one multi-get may read.
    pub const MAX_KEYS: u32 = 10_000;

    /// Reads one request makes on average when a share `reads` of requests are reads: 1, or
    /// more with multi-gets (what load is measured against: every key's read counts).
    pub fn keys_per_request(&self, reads: f64) -> f64 {
        if self.enabled() {
            1.0 + reads * self.fraction * (self.mean_keys() - 1.0)
        } else {
            1.0
        }
    }

    /// The most keys of a multi-get.
    pub fn most_keys(&self) -> u32 {
        self.keys_max.max(self.keys)
    }

    /// Keys per multi-get on average.
    pub fn mean_keys(&self) -> f64 {
        self.keys_law.mean(self.keys, self.most_keys())
    }

    /// The draws of a run of workload seed `seed` (none without multi-gets).
    pub fn draws(&self, seed: u64) -> Option<MultigetDraws> {
        self.enabled().then(|| MultigetDraws::new(self.keys, self.keys_max, self.keys_law, self.fraction, seed))
    }

    /// Whether the workload issues multi-gets at all.
    pub fn enabled(&self) -> bool {
        self.keys > 0
    }
}

impl Default for MultigetSpec {
    fn default() -> Self {
        MultigetSpec { keys: 0, keys_max: 0, keys_law: KeyCountLaw::Uniform, fraction: 1.0 }
    }
}

/// Arrival process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArrivalKind {
    /// Open loop, Poisson at `rate` or `load`.
    Poisson,
    /// Each client keeps `outstanding` requests in flight.
    ClosedLoop,
    /// Replay `trace`.
    Trace,
}

pub use tailor_core::oracle::size::OracleKind;
pub use tailor_core::workload::TraceFormat;

/// The strategies to compare.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompareSpec {
    /// Replica selectors.
    pub selectors: Vec<String>,
    /// Local queue policies.
    pub locals: Vec<String>,
}

impl Default for CompareSpec {
    fn default() -> Self {
        CompareSpec { selectors: vec!["random".into(), "lor".into(), "c3".into()], locals: vec!["fcfs".into()] }
    }
}

/// Lower-bound computation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BoundSpec {
    /// Compute, for each run, the ratio of its max weighted flow to the LP lower bound.
    pub enabled: bool,
    /// Requests (the first ones of each run) in the bounded instance.
    pub requests: usize,
    /// "flow" or "stretch".
    pub weighting: tailor_core::results::Weighting,
    /// Relative tolerance of the binary search.
    pub tolerance: f64,
    /// Feasibility solver: "max-flow" (default, exact and fast) or "highs" (needs the `highs` build feature).
    pub solver: tailor_bound::Backend,
}

impl Default for BoundSpec {
    fn default() -> Self {
        BoundSpec {
            enabled: false,
            requests: 1000,
            weighting: Default::default(),
            tolerance: 1e-4,
            solver: Default::default(),
        }
    }
}

/// What results keep beyond the percentiles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReportSpec {
    /// Window of the per-server load series, in ms.
    pub window_ms: f64,
    /// Keep per-server load series (first seed of each combination only, to bound file size).
    pub per_server_load: bool,
    /// Points in each CDF.
    pub cdf_points: usize,
    /// Keep every measured request's times in memory (the Python package's per-request frame,
    /// `tailor.sim(..., per_request=True)`); results files do not hold them. Written into a
    /// spec only when on, so specs and results files without it keep their bytes.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub per_request: bool,
}

impl Default for ReportSpec {
    fn default() -> Self {
        ReportSpec { window_ms: 100.0, per_server_load: true, cdf_points: 100, per_request: false }
    }
}
