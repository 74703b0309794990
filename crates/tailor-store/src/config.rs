//! Node configuration: a TOML file (or flags turned into one), every field defaulted.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use tailor_core::coordinator::speculation::{SpeculationConfig, SpeculativeRetry};
use tailor_core::local::LocalConfig;
use tailor_core::oracle::bloom::{BloomConfig, BloomFilter};
use tailor_core::selector::c3::C3Config;
use tailor_core::selector::SelectorConfig;

/// Errors loading or validating a node configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The TOML did not parse or named an unknown field.
    #[error("invalid config {path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The TOML error (names the field).
        source: toml::de::Error,
    },
    /// A field has a value the node cannot run with.
    #[error("invalid config field `{field}`: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Why.
        reason: String,
    },
}

pub use tailor_core::model::Consistency;

/// Service time assumed for a read of a real node when sizing C3's rates: 5 µs **(choice)**.
/// Observed with `tailor_service_seconds` under redis-benchmark GET load (1 KB values, random
/// keys): 1.4 µs on average for reads the row cache answers; a miss to the LSM tree costs about
/// 3 µs more (`storage_get` bench). It was 50 µs before the row cache, and at that figure C3's
/// limiter held a single coordinator to about half of lor's throughput (82 % of reads parked).
pub const STORE_READ_NS: f64 = 5_000.0;

/// Largest connection cap or queue length a config may ask for.
pub const MAX_COUNT: usize = 10_000_000;

/// When a write is durable relative to its acknowledgement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// The journal is fsynced (fdatasync) before the replica acknowledges: survives power loss.
    #[default]
    Sync,
    /// The journal is flushed to OS buffers before the ack: survives a process crash, not power loss.
    Buffer,
}

pub use tailor_core::oracle::size::OracleKind;

/// Which rate constants the `c3` selector runs with in a node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum C3Rates {
    /// `selectors.c3`'s rates scaled by the servers' capacity over absim's
    /// (`C3Config::capacity_scale`: workers, and the emulated service time or 5 µs): absim's
    /// constants were chosen for 4 ms requests and park almost every read of a real node.
    #[default]
    Scaled,
    /// `selectors.c3` exactly as written (live experiments, which compare with the simulator).
    AsConfigured,
}

/// One cluster member as every node sees it (static membership).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Member {
    /// Node id: members must be numbered `0..m` (the ring's node index).
    pub id: u32,
    /// Internode (peer protocol) address.
    pub peer: SocketAddr,
}

/// Emulation knobs that make a laptop node behave like a slower or noisier datacenter one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmulationConfig {
    /// Emulated service time per value byte, in nanoseconds (`alpha`; 80 = 100 Mbit/s).
    pub alpha_ns_per_byte: f64,
    /// Emulated fixed service time per request, in microseconds (`beta`).
    pub beta_us: f64,
    /// Fluctuation factor `D`: while slow, a request takes `D` times as long (1 = off).
    pub fluct_factor: f64,
    /// Fluctuation period `T` in ms: every `T` ms the node is slow with probability 1/2.
    /// 0 with `fluct_factor > 1` means permanently slow.
    pub fluct_period_ms: u64,
    /// Stall injection: a stall starts every this many ms (0 = off).
    pub stall_every_ms: u64,
    /// Length of each stall in ms: workers start nothing while it lasts.
    pub stall_ms: u64,
    /// Units of device capacity the jobs in service share (0: each worker its own): each of
    /// the `n` jobs in service gets the emulated time at `min(1, units / n)` of full speed, as
    /// the simulator's `cluster.shared_capacity` (`replica/device.rs`).
    #[serde(skip_serializing_if = "is_zero")]
    pub shared_capacity: u64,
    /// Racks the members are spread over (member `i` in rack `i mod racks`, as the simulator's
    /// `cluster.topology`; 0 or 1: one rack).
    #[serde(skip_serializing_if = "is_zero")]
    pub racks: u64,
    /// Extra one-way delay of every message to or from a peer in another rack, in µs.
    #[serde(skip_serializing_if = "is_zero")]
    pub cross_delay_us: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Default for EmulationConfig {
    fn default() -> Self {
        EmulationConfig {
            alpha_ns_per_byte: 0.0,
            beta_us: 0.0,
            fluct_factor: 1.0,
            fluct_period_ms: 0,
            stall_every_ms: 0,
            stall_ms: 0,
            shared_capacity: 0,
            racks: 0,
            cross_delay_us: 0,
        }
    }
}

impl EmulationConfig {
    /// Check the knobs against their ranges ([`crate::knobs::RANGES`]).
    pub fn validate(&self) -> Result<(), String> {
        let values = [
            ("alpha_ns_per_byte", self.alpha_ns_per_byte),
            ("beta_us", self.beta_us),
            ("fluct_factor", self.fluct_factor),
            ("fluct_period_ms", self.fluct_period_ms as f64),
            ("stall_every_ms", self.stall_every_ms as f64),
            ("stall_ms", self.stall_ms as f64),
            ("shared_capacity", self.shared_capacity as f64),
        ];
        for (knob, v) in values {
            crate::knobs::check(knob, &v.to_string())?;
        }
        if self.racks > u16::MAX as u64 {
            return Err(format!("emulation.racks: must be at most {}, got {}", u16::MAX, self.racks));
        }
        if self.cross_delay_us > 60_000_000 {
            return Err(format!("emulation.cross_delay_us: must be at most 60 s, got {}", self.cross_delay_us));
        }
        Ok(())
    }

    /// The emulated delay between this node `me` and peer `peer`: `cross_delay_us` when they sit
    /// in different racks, none otherwise.
    pub fn cross_delay(&self, me: u32, peer: u32) -> Option<std::time::Duration> {
        let rack = |id| tailor_core::topology::rack_of(id, self.racks as usize);
        (self.cross_delay_us > 0 && rack(me) != rack(peer))
            .then(|| std::time::Duration::from_micros(self.cross_delay_us))
    }
}

/// What a node does once its storage engine refuses writes (`disk.rs` says how it finds out,
/// `disk_watch.rs` applies it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DiskFailurePolicy {
    /// Stop serving; re-execute the node once the disk takes writes again.
    #[default]
    Restart,
    /// Stop serving and stay stopped (as Cassandra's `stop`).
    Stop,
    /// Exit at once (as Cassandra's `die`).
    Die,
}

impl DiskFailurePolicy {
    /// Its configuration name.
    pub fn name(self) -> &'static str {
        match self {
            DiskFailurePolicy::Restart => "restart",
            DiskFailurePolicy::Stop => "stop",
            DiskFailurePolicy::Die => "die",
        }
    }
}

/// A node's whole configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfig {
    /// This node's id (an entry of `members`).
    pub id: u32,
    /// Directory of the storage engine's files.
    pub data_dir: PathBuf,
    /// Address of the plain-text RESP client endpoint; port 0 turns it off (as Redis's `port 0`),
    /// leaving only `tls_addr`.
    pub client_addr: SocketAddr,
    /// Address of the TLS client endpoint (Redis's `tls-port`); none (the default) turns TLS off.
    /// Needs `tls_cert_file` and `tls_key_file`.
    pub tls_addr: Option<SocketAddr>,
    /// PEM file of the server's certificate chain, leaf first.
    pub tls_cert_file: Option<PathBuf>,
    /// PEM file of the private key of `tls_cert_file` (PKCS#8, PKCS#1 or SEC1).
    pub tls_key_file: Option<PathBuf>,
    /// PEM file of the CA certificates client certificates are checked against; set alone,
    /// clients may present a certificate (checked if they do) or not.
    pub tls_ca_cert_file: Option<PathBuf>,
    /// Require a client certificate signed by `tls_ca_cert_file` (mutual TLS). Off by default
    /// (unlike Redis's `tls-auth-clients`): passwords authenticate clients unless this is set.
    pub tls_auth_clients: bool,
    /// A TLS client must finish its handshake within this many ms (default 10,000), or the
    /// connection is closed (a client that never sends its hello does not keep a slot).
    pub tls_handshake_timeout_ms: u64,
    /// Address of the internode endpoint; defaults to this node's `members` entry.
    pub peer_addr: Option<SocketAddr>,
    /// Address of the Prometheus text endpoint (plain HTTP); none disables it.
    pub metrics_addr: Option<SocketAddr>,
    /// Every cluster member, this node included.
    pub members: Vec<Member>,
    /// Replication factor `k`.
    pub replication: usize,
    /// Tokens per node on the ring (1 = evenly spaced groups of consecutive nodes).
    pub vnodes: usize,
    /// Replica selector name (see `tailor_core::selector::SELECTORS`).
    pub selector: String,
    /// Local queue policy name (see `tailor_core::local::LOCALS`).
    pub local: String,
    /// Read parallelism `P`: worker threads executing requests.
    pub workers: usize,
    /// Write consistency level.
    pub write_consistency: Consistency,
    /// Read consistency level (ONE uses the selector; QUORUM/ALL ask every up replica and return
    /// the newest version once enough answered).
    pub read_consistency: Consistency,
    /// Journal persistence before a replica acknowledges a write.
    pub durability: Durability,
    /// What the node does once its disk fails (the engine refuses writes): `restart` (stop
    /// serving, re-execute once the disk takes writes again), `stop` (stay stopped) or `die`
    /// (exit), as Cassandra's `disk_failure_policy` (`disk.rs`).
    pub disk_failure_policy: DiskFailurePolicy,
    /// The storage engine's block cache, in MiB (default 256; fjall's own default is 32, which
    /// sends reads of a 100 MB working set to the OS on most lookups). Allocated as it fills.
    pub cache_mb: u64,
    /// The row cache, in MiB (default 256, 0: off): the newest records of recently read and
    /// written keys (values up to 64 KiB, and absent keys) kept in memory in front of the
    /// engine, exact under the write path's key locks (`row_cache.rs`). Allocated as it fills.
    pub row_cache_mb: u64,
    /// Largest value accepted from clients, in bytes.
    pub max_value_bytes: u64,
    /// Longest key accepted from clients and peers, in bytes (default 65,535: the storage
    /// engine's limit, like Cassandra's 64 KiB key limit; at most that).
    pub max_key_bytes: u64,
    /// Most bytes one client command may take on the wire (default 32 MiB; at least
    /// `max_value_bytes + max_key_bytes + 1024`, so the largest SET fits). A longer command is
    /// refused from its declared lengths, before it is buffered.
    pub max_command_bytes: u64,
    /// Bytes every client connection's partly received input may hold together (default 256
    /// MiB; at least `max_command_bytes`); internode frames have a pool of this size of their
    /// own, so clients cannot starve peer traffic. A connection that would go over gets an error
    /// and is closed.
    pub max_buffered_bytes: u64,
    /// Bytes all client connections from one source address (an IPv6 one's /64) may hold of
    /// `max_buffered_bytes` at once, beyond each connection's idle 16 KiB (default 64 MiB, a
    /// quarter of the default budget: room for 32 connections each part-way through a 1 MiB
    /// value; 0 = no bound of its own, as is any value from `max_buffered_bytes` up; else at
    /// least `max_command_bytes` + 128 KiB, so the largest command fits). A connection whose
    /// client's share is spent stops reading until the client's other connections give bytes
    /// back, or gets an error and is closed at its `slow_sender_timeout_ms` deadline, so one
    /// client cannot hold the whole budget and stall the others. All loopback clients are one
    /// address, and so share one share.
    pub max_buffered_bytes_per_client: u64,
    /// Most client connections at once (default 10,000, as Redis's `maxclients`); one more gets
    /// `-ERR max number of clients reached` and is closed.
    pub max_clients: usize,
    /// Most internode connections at once (default 1,024); one more is closed at once.
    pub max_peer_connections: usize,
    /// Close a client or internode connection that sent nothing for this many ms (default
    /// 300,000; 0 = never, as Redis's `timeout`).
    pub idle_timeout_ms: u64,
    /// A command or internode frame that started arriving must be complete within this many ms
    /// (default 10,000), or the connection is closed (slowloris).
    pub slow_sender_timeout_ms: u64,
    /// Most requests waiting in the replica's queue (default 10,000); above it a request is
    /// answered "busy" at once instead of growing the queue.
    pub max_queue: usize,
    /// Enables test-only hooks (`TAILOR.SET debug_panic_next n`: the next `n` jobs panic on
    /// their worker). Off by default; never on in production.
    pub debug_hooks: bool,
    /// Password of the `default` user (Redis's `requirepass`): with one set, clients must
    /// `AUTH` before any other command. `None`: open.
    pub requirepass: Option<String>,
    /// Password of the `admin` user: with one set, `TAILOR.SET` (knobs, consistency levels,
    /// workers, emulation) needs `AUTH admin <password>`. `None`: any client may.
    pub admin_password: Option<String>,
    /// Secret shared by every node of the cluster: internode frames are signed with it
    /// (HMAC-SHA256) and unsigned or forged frames refused. `None`: frames are not signed, and
    /// whoever reaches the peer port can read and write every key.
    pub cluster_secret: Option<String>,
    /// Redis's protected mode for the peer port (default on): a node of a cluster with more
    /// than one member and no `cluster_secret` refuses to start when it has a password
    /// (`requirepass`, `admin_password`: the peer port would bypass it) or when its peer port
    /// listens beyond loopback. Off: an unsigned peer port, for a network you trust.
    pub protected_mode: bool,
    /// Values above this size are "large" (Héron's THR_L, RML's size class).
    pub large_value_bytes: u64,
    /// Size oracle of the coordinators: `exact` (the sizes this coordinator saw: writes it
    /// handled, values it read; the default, no Bloom bookkeeping on the write path), `bloom`
    /// (Héron as published; every node of a cluster must then use it, replicas keep their Bloom
    /// index only in this mode) or `none`.
    pub size_oracle: OracleKind,
    /// Shape of the Bloom filters (`bloom` oracle); identical on every node.
    pub bloom: BloomConfig,
    /// Interval of the replicas' Bloom filter rebuilds in ms (`bloom` oracle; 0 = never).
    pub bloom_rebuild_ms: u64,
    /// Timeout of one request to a replica, in ms; a read that times out moves to the next replica.
    pub request_timeout_ms: u64,
    /// When a read at ONE whose replica has not answered is also sent to another replica
    /// (Cassandra's `speculative_retry`): `99p` (the default: the 99th percentile of this
    /// coordinator's recent read latencies), a fixed delay like `20ms`, or `none`.
    pub speculative_retry: String,
    /// Speculative copies allowed per read, on average (default 0.5; 0..=1): a bound on the extra
    /// load hedging adds when many replicas are slow at once. 0.5 covers one frozen replica of
    /// three even under a load-blind selector, which keeps sending it a third of the reads until
    /// the failure detector marks it down.
    pub speculative_budget: f64,
    /// Cancel the losing copy of a hedged read once the first answers (default false; the
    /// spec's `cluster.hedge_cancel`): a copy still queued at its replica is dropped there, one
    /// already running finishes. Needs `speculative_retry`.
    pub hedge_cancel: bool,
    /// Largest clock offset tolerated between nodes: a write whose version is further ahead of
    /// this node's clock is refused (see `hlc.rs`).
    pub max_clock_offset_ms: u64,
    /// Bytes of hints (writes a down or failing replica missed) kept per peer; 0 turns hinted
    /// handoff off. Past it, writes for that peer are dropped from the hints and counted.
    pub hint_max_bytes: u64,
    /// How often hints are replayed to peers that are up, in ms.
    pub hint_replay_ms: u64,
    /// A node of a cluster starts *recovering*: coordinators do not read it at ONE while another
    /// replica that is up has caught up, until every peer said it holds no hint for it, or this
    /// many seconds passed since it started (default 60; 0: never recovering; `recovery.rs`).
    pub recovery_max_s: u64,
    /// Run an anti-entropy pass (Merkle trees of every token range this node replicates
    /// compared with the other replicas', differing keys repaired) every this many seconds;
    /// 0: only on demand (`TAILOR.REPAIR`, `tailor cluster repair`).
    pub repair_every_s: u64,
    /// Keys a repair pass or a tombstone collection scans, or receives in key lists, per
    /// second on average (0: no limit).
    pub repair_keys_per_s: u64,
    /// Merkle trees of token ranges have `2^merkle_depth` leaves (0..=14): deeper trees send
    /// more hashes (16 bytes a leaf) and fewer keys per differing leaf.
    pub merkle_depth: u8,
    /// Tombstones are kept this many seconds after their delete (Cassandra's
    /// gc_grace_seconds), then dropped: a replica down longer must be repaired or replaced
    /// before it rejoins, or deletes it missed may resurrect.
    pub gc_grace_s: u64,
    /// Drop tombstones past `gc_grace_s` every this many seconds (0: only at repair passes).
    pub gc_every_s: u64,
    /// Heartbeat interval of the failure detector, in ms.
    pub heartbeat_ms: u64,
    /// Consecutive missed heartbeats (or timed-out requests) that mark a peer down.
    pub down_after_misses: u32,
    /// Requests a replica group may park at the coordinator (C3 backpressure, Héron blocking).
    pub park_capacity: usize,
    /// Probability that a read at ONE also goes to the key's other replicas (read repair's
    /// shadow reads; they load the replicas and feed the selector, 0..=1).
    pub read_repair: f64,
    /// Seed of the strategies' random streams (mixed with the node id).
    pub seed: u64,
    /// Emulation knobs.
    pub emulation: EmulationConfig,
    /// Selector tunables.
    pub selectors: SelectorConfig,
    /// `scaled` (default) or `as-configured`: see [`C3Rates`].
    pub c3_rates: C3Rates,
    /// Local policy tunables.
    pub locals: LocalConfig,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            id: 0,
            data_dir: PathBuf::from("tailor-data"),
            client_addr: SocketAddr::from(([127, 0, 0, 1], 6379)),
            tls_addr: None,
            tls_cert_file: None,
            tls_key_file: None,
            tls_ca_cert_file: None,
            tls_auth_clients: false,
            tls_handshake_timeout_ms: 10_000,
            peer_addr: None,
            metrics_addr: None,
            members: Vec::new(),
            replication: 3,
            vnodes: 1,
            selector: "c3".to_string(),
            local: "fcfs".to_string(),
            workers: 4,
            write_consistency: Consistency::Quorum,
            read_consistency: Consistency::One,
            durability: Durability::Sync,
            disk_failure_policy: Default::default(),
            cache_mb: 256,
            row_cache_mb: 256,
            max_value_bytes: 16 * 1024 * 1024,
            max_key_bytes: crate::limits::ENGINE_MAX_KEY,
            max_command_bytes: 32 * 1024 * 1024,
            max_buffered_bytes: 256 * 1024 * 1024,
            max_buffered_bytes_per_client: 64 * 1024 * 1024,
            max_clients: 10_000,
            max_peer_connections: 1_024,
            idle_timeout_ms: 300_000,
            slow_sender_timeout_ms: 10_000,
            max_queue: 10_000,
            debug_hooks: false,
            requirepass: None,
            admin_password: None,
            cluster_secret: None,
            protected_mode: true,
            large_value_bytes: 256 * 1024,
            size_oracle: OracleKind::Exact,
            bloom: BloomConfig::default(),
            bloom_rebuild_ms: 10 * 60 * 1000,
            request_timeout_ms: 1000,
            speculative_retry: "99p".to_string(),
            speculative_budget: 0.5,
            hedge_cancel: false,
            max_clock_offset_ms: 500,
            hint_max_bytes: 64 << 20,
            hint_replay_ms: 1000,
            recovery_max_s: 60,
            repair_every_s: 0,
            repair_keys_per_s: 1000,
            merkle_depth: 10,
            gc_grace_s: 864_000,
            gc_every_s: 86_400,
            heartbeat_ms: 100,
            down_after_misses: 3,
            park_capacity: 1024,
            read_repair: 0.0,
            seed: 1,
            emulation: EmulationConfig::default(),
            selectors: SelectorConfig::default(),
            c3_rates: C3Rates::Scaled,
            locals: LocalConfig::default(),
        }
    }
}

impl NodeConfig {
    /// Load and validate a TOML file.
    pub fn load(path: &Path) -> Result<NodeConfig, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
        let cfg: NodeConfig =
            toml::from_str(&text).map_err(|source| ConfigError::Parse { path: path.to_path_buf(), source })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Serialize to TOML (what `tailor cluster up` writes).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Check the fields that the types cannot.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field, reason: String| Err(ConfigError::Invalid { field, reason });
        if self.members.is_empty() {
            return bad("members", "at least one member (this node) is required".into());
        }
        for (i, m) in self.members.iter().enumerate() {
            if m.id as usize != i {
                return bad(
                    "members",
                    format!("ids must be 0..{} in order; entry {i} has id {}", self.members.len(), m.id),
                );
            }
        }
        if self.id as usize >= self.members.len() {
            return bad("id", format!("{} is not a member id", self.id));
        }
        if self.replication == 0 || self.replication > self.members.len() {
            return bad("replication", format!("{} must be in 1..={}", self.replication, self.members.len()));
        }
        if self.workers == 0 || self.workers > 256 {
            return bad("workers", format!("{} must be in 1..=256", self.workers));
        }
        let Some(needs) = tailor_core::selector::registry::needs(&self.selector) else {
            return bad("selector", format!("unknown `{}`", self.selector));
        };
        if let Some(why) = tailor_core::selector::Engine::Store.refusal(&needs) {
            return bad("selector", format!("`{}` cannot run on the store (simulator only): {why}", self.selector));
        }
        if !tailor_core::local::is_known(&self.local) {
            return bad("local", format!("unknown `{}`", self.local));
        }
        if self.cluster_secret.as_ref().is_some_and(|s| !(16..=512).contains(&s.len())) {
            return bad("cluster_secret", "must be 16 to 512 bytes when set".into());
        }
        for (field, p) in [("requirepass", &self.requirepass), ("admin_password", &self.admin_password)] {
            if p.as_ref().is_some_and(|p| p.is_empty() || p.len() > 512) {
                return bad(field, "must be 1 to 512 bytes when set".into());
            }
        }
        self.validate_peer_port()?;
        if self.hint_replay_ms == 0 {
            return bad("hint_replay_ms", "must be > 0".into());
        }
        if self.recovery_max_s > 86_400 {
            return bad("recovery_max_s", format!("must be 0 (off) to 86400 (a day), got {}", self.recovery_max_s));
        }
        if !(1..=3_600_000).contains(&self.max_clock_offset_ms) {
            return bad("max_clock_offset_ms", "must be between 1 and 3600000 (one hour)".into());
        }
        if self.request_timeout_ms == 0 || self.heartbeat_ms == 0 {
            return bad("request_timeout_ms", "timeouts and heartbeat must be > 0".into());
        }
        if !(1..=1 << 20).contains(&self.cache_mb) {
            return bad("cache_mb", format!("must be 1 to 1048576 (1 TiB), got {}", self.cache_mb));
        }
        if self.row_cache_mb > 1 << 20 {
            return bad("row_cache_mb", format!("must be 0 (off) to 1048576 (1 TiB), got {}", self.row_cache_mb));
        }
        if self.max_value_bytes > u32::MAX as u64 {
            return bad("max_value_bytes", "must fit in 32 bits (the engine's value limit)".into());
        }
        self.validate_limits()?;
        self.validate_tls()?;
        if let Err(reason) = self.emulation.validate() {
            return bad("emulation", reason);
        }
        if let Err(e) = BloomFilter::from_config(&self.bloom) {
            return bad("bloom", e.to_string());
        }
        if !(0.0..=1.0).contains(&self.read_repair) {
            return bad("read_repair", format!("{} must be in [0, 1]", self.read_repair));
        }
        if let Err(reason) = self.speculation() {
            return bad("speculative_retry", reason);
        }
        if self.hedge_cancel && self.speculation().ok().flatten().is_none() {
            return bad("hedge_cancel", "cancels hedges: set speculative_retry too".into());
        }
        if !(0.0..=1.0).contains(&self.speculative_budget) {
            return bad("speculative_budget", format!("{} must be in [0, 1]", self.speculative_budget));
        }
        if self.merkle_depth > crate::merkle::MAX_DEPTH {
            return bad("merkle_depth", format!("{} must be in 0..={}", self.merkle_depth, crate::merkle::MAX_DEPTH));
        }
        if self.park_capacity == 0 {
            return bad("park_capacity", "must be at least 1".into());
        }
        let strategy = |e: tailor_core::selector::InvalidSetting| ConfigError::Invalid {
            field: if e.field.starts_with("selector.") { "selectors" } else { "locals" },
            reason: e.to_string(),
        };
        self.selectors.validate().map_err(strategy)?;
        self.locals.validate().map_err(strategy)?;
        Ok(())
    }

    /// Protected mode: no unsigned peer port where it would open a door (see `protected_mode`).
    fn validate_peer_port(&self) -> Result<(), ConfigError> {
        if self.cluster_secret.is_some() || !self.protected_mode || self.members.len() < 2 {
            return Ok(());
        }
        let door = "the peer port takes unsigned frames that read and write every key";
        let fix = "set a cluster_secret of 16 or more bytes on every node (`tailor cluster up` generates one), or protected_mode = false on a network you trust";
        if let Some(field) = [("requirepass", &self.requirepass), ("admin_password", &self.admin_password)]
            .into_iter()
            .find_map(|(field, p)| p.is_some().then_some(field))
        {
            let reason = format!("is set but cluster_secret is not: {door} without it; {fix}");
            return Err(ConfigError::Invalid { field, reason });
        }
        let peer = self.peer_listen();
        if !peer.ip().is_loopback() {
            let reason = format!("listens on {peer}, beyond loopback, without a cluster_secret: {door}; {fix}");
            return Err(ConfigError::Invalid { field: "peer_addr", reason });
        }
        Ok(())
    }

    /// Check the limits on what clients and peers control.
    fn validate_limits(&self) -> Result<(), ConfigError> {
        let bad = |field, reason: String| Err(ConfigError::Invalid { field, reason });
        let engine = crate::limits::ENGINE_MAX_KEY;
        if !(1..=engine).contains(&self.max_key_bytes) {
            return bad(
                "max_key_bytes",
                format!("{} must be in 1..={engine} (the engine's key limit)", self.max_key_bytes),
            );
        }
        let least = self.max_value_bytes + self.max_key_bytes + 1024;
        if self.max_command_bytes < least || self.max_command_bytes > u32::MAX as u64 {
            let reason = format!(
                "{} must be in {least}..={} (the largest SET must fit: max_value_bytes + max_key_bytes + 1024)",
                self.max_command_bytes,
                u32::MAX
            );
            return bad("max_command_bytes", reason);
        }
        if self.max_buffered_bytes < self.max_command_bytes {
            let reason =
                format!("{} must be at least max_command_bytes ({})", self.max_buffered_bytes, self.max_command_bytes);
            return bad("max_buffered_bytes", reason);
        }
        let least = self.max_command_bytes + crate::limits::COMMAND_SLACK;
        if (1..least).contains(&self.max_buffered_bytes_per_client) {
            let reason = format!(
                "{} must be 0 (no bound of its own) or at least {least} (max_command_bytes + 128 KiB: one \
                 client's largest command must fit)",
                self.max_buffered_bytes_per_client
            );
            return bad("max_buffered_bytes_per_client", reason);
        }
        for (field, n) in [
            ("max_clients", self.max_clients),
            ("max_peer_connections", self.max_peer_connections),
            ("max_queue", self.max_queue),
        ] {
            if !(1..=MAX_COUNT).contains(&n) {
                return bad(field, format!("{n} must be in 1..={MAX_COUNT}"));
            }
        }
        if self.slow_sender_timeout_ms == 0 {
            return bad("slow_sender_timeout_ms", "must be > 0".into());
        }
        Ok(())
    }

    /// The selector tunables the node runs with: `selectors`, with C3's rates scaled to this
    /// node's capacity unless `c3_rates = "as-configured"`.
    pub fn effective_selectors(&self) -> SelectorConfig {
        let mut s = self.selectors.clone();
        if self.c3_rates == C3Rates::Scaled {
            let k = C3Config::capacity_scale(self.workers, self.expected_service_ns());
            s.c3 = s.c3.scaled(k);
        }
        s
    }

    /// A request's expected service time in ns: the emulated one for a 1 KiB value, at least
    /// [`STORE_READ_NS`].
    fn expected_service_ns(&self) -> f64 {
        let e = &self.emulation;
        (e.beta_us * 1e3 + e.alpha_ns_per_byte * 1024.0).max(STORE_READ_NS)
    }

    /// The speculative-retry rule (`None`: off).
    pub fn speculation(&self) -> Result<Option<SpeculationConfig>, String> {
        let rule = SpeculativeRetry::parse(&self.speculative_retry)?;
        Ok(rule.map(|rule| SpeculationConfig { rule, budget: self.speculative_budget }))
    }

    /// Check that the TLS fields go together (the files themselves are read by [`crate::tls`]
    /// when the node starts).
    fn validate_tls(&self) -> Result<(), ConfigError> {
        let bad = |field, reason: &str| Err(ConfigError::Invalid { field, reason: reason.into() });
        let tls = self.tls_addr.is_some();
        if !tls && self.client_addr.port() == 0 {
            return bad("client_addr", "port 0 turns the plain-text listener off, so tls_addr must be set");
        }
        for (field, set) in [("tls_cert_file", &self.tls_cert_file), ("tls_key_file", &self.tls_key_file)] {
            if tls && set.is_none() {
                return bad(field, "is required when tls_addr is set");
            }
        }
        let files = [&self.tls_cert_file, &self.tls_key_file, &self.tls_ca_cert_file];
        if !tls && (files.iter().any(|f| f.is_some()) || self.tls_auth_clients) {
            return bad("tls_addr", "must be set for the tls_* fields to take effect");
        }
        if self.tls_auth_clients && self.tls_ca_cert_file.is_none() {
            return bad("tls_ca_cert_file", "is required when tls_auth_clients is true");
        }
        if self.tls_handshake_timeout_ms == 0 {
            return bad("tls_handshake_timeout_ms", "must be > 0");
        }
        Ok(())
    }

    /// The address a client (or a tool waiting for the node) reaches: the plain-text endpoint,
    /// or the TLS one when the plain one is off.
    pub fn client_listen(&self) -> SocketAddr {
        match self.tls_addr {
            Some(tls) if self.client_addr.port() == 0 => tls,
            _ => self.client_addr,
        }
    }

    /// The internode address this node listens on.
    pub fn peer_listen(&self) -> SocketAddr {
        self.peer_addr.unwrap_or(self.members[self.id as usize].peer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_unknown_fields() {
        let cfg: NodeConfig =
            toml::from_str("members = [{ id = 0, peer = \"127.0.0.1:1\" }]\nreplication = 1").unwrap();
        assert_eq!(cfg.workers, 4);
        assert_eq!(cfg.write_consistency, Consistency::Quorum);
        assert_eq!(cfg.max_value_bytes, 16 << 20);
        assert_eq!(cfg.size_oracle, OracleKind::Exact);
        assert_eq!(cfg.bloom_rebuild_ms, 600_000);
        cfg.validate().unwrap();
        let err = toml::from_str::<NodeConfig>("bogus = 1").unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
    }

    #[test]
    fn c3_rates_are_scaled_to_the_node_unless_asked_not_to() {
        let mut cfg = NodeConfig::default();
        assert_eq!(cfg.effective_selectors().c3.initial_rate, 4000.0, "4 workers, 5 µs reads");
        cfg.emulation.beta_us = 4000.0;
        assert_eq!(cfg.effective_selectors().c3.initial_rate, 5.0, "absim's own setup");
        cfg.c3_rates = C3Rates::AsConfigured;
        cfg.emulation.beta_us = 0.0;
        assert_eq!(cfg.effective_selectors(), cfg.selectors);
    }

    #[test]
    fn validation_names_the_field() {
        let mut cfg = NodeConfig {
            members: vec![Member { id: 0, peer: "127.0.0.1:1".parse().unwrap() }],
            replication: 3,
            ..NodeConfig::default()
        };
        assert!(cfg.validate().unwrap_err().to_string().contains("replication"));
        cfg.replication = 1;
        cfg.selector = "nope".into();
        assert!(cfg.validate().unwrap_err().to_string().contains("selector"));
        // a probing selector runs on the store: its replicas answer probes
        assert!(tailor_core::selector::probing("prequal"));
        for probing in tailor_core::selector::SELECTORS.iter().filter(|s| tailor_core::selector::probing(s)) {
            cfg.selector = probing.to_string();
            assert_eq!(cfg.validate().map_err(|e| e.to_string()), Ok(()), "{probing}");
        }
        cfg.selector = "heron".into();
        cfg.bloom.false_positive_rate = 0.0;
        assert!(cfg.validate().unwrap_err().to_string().contains("bloom"));
        cfg.bloom = BloomConfig::default();
        cfg.recovery_max_s = 86_401;
        assert!(cfg.validate().unwrap_err().to_string().contains("`recovery_max_s`"));
    }

    #[test]
    fn protected_mode_refuses_an_unsigned_peer_port_that_opens_a_door() {
        let two = vec![
            Member { id: 0, peer: "127.0.0.1:1".parse().unwrap() },
            Member { id: 1, peer: "127.0.0.1:2".parse().unwrap() },
        ];
        let open = NodeConfig { members: two.clone(), replication: 2, ..NodeConfig::default() };
        open.validate().expect("no password, loopback: nothing to bypass");
        let with_password = NodeConfig { requirepass: Some("pw".into()), ..open.clone() };
        let err = with_password.validate().unwrap_err().to_string();
        assert!(err.contains("requirepass") && err.contains("cluster_secret"), "{err}");
        let admin = NodeConfig { admin_password: Some("pw".into()), ..open.clone() };
        assert!(admin.validate().unwrap_err().to_string().contains("admin_password"));
        let wide = NodeConfig { peer_addr: Some("0.0.0.0:2".parse().unwrap()), ..open.clone() };
        let err = wide.validate().unwrap_err().to_string();
        assert!(err.contains("peer_addr") && err.contains("beyond loopback"), "{err}");
        let signed = NodeConfig { cluster_secret: Some("a secret of 16 bytes".into()), ..with_password.clone() };
        signed.validate().expect("a secret closes the door");
        let trusted = NodeConfig { protected_mode: false, ..with_password };
        trusted.validate().expect("protected mode off: the operator's choice");
    }

    #[test]
    fn limits_are_validated_by_name() {
        let ok = NodeConfig {
            members: vec![Member { id: 0, peer: "127.0.0.1:1".parse().unwrap() }],
            replication: 1,
            ..NodeConfig::default()
        };
        ok.validate().unwrap();
        assert_eq!((ok.max_key_bytes, ok.max_clients, ok.idle_timeout_ms), (65_527, 10_000, 300_000));
        let field = |f: &dyn Fn(&mut NodeConfig)| {
            let mut c = ok.clone();
            f(&mut c);
            c.validate().unwrap_err().to_string()
        };
        assert!(field(&|c| c.max_key_bytes = 65_528).contains("`max_key_bytes`"));
        assert!(field(&|c| c.max_key_bytes = 0).contains("`max_key_bytes`"));
        assert!(field(&|c| c.max_command_bytes = c.max_value_bytes).contains("`max_command_bytes`"));
        assert!(field(&|c| c.max_buffered_bytes = 1).contains("`max_buffered_bytes`"));
        let share = field(&|c| c.max_buffered_bytes_per_client = c.max_command_bytes);
        assert!(share.contains("`max_buffered_bytes_per_client`") && share.contains("0 (no bound"), "{share}");
        assert!(field(&|c| c.max_clients = 0).contains("`max_clients`"));
        assert!(field(&|c| c.max_peer_connections = 0).contains("`max_peer_connections`"));
        assert!(field(&|c| c.max_queue = 0).contains("`max_queue`"));
        assert!(field(&|c| c.slow_sender_timeout_ms = 0).contains("`slow_sender_timeout_ms`"));
        assert!(field(&|c| c.client_addr.set_port(0)).contains("`client_addr`"));
        let tls = |c: &mut NodeConfig| {
            c.tls_addr = Some("127.0.0.1:2".parse().unwrap());
            c.tls_cert_file = Some("cert.pem".into());
            c.tls_key_file = Some("key.pem".into());
        };
        assert!(field(&|c| c.tls_auth_clients = true).contains("`tls_addr`"));
        assert!(field(&|c| c.tls_addr = Some("127.0.0.1:2".parse().unwrap())).contains("`tls_cert_file`"));
        assert!(field(&|c| {
            tls(c);
            c.tls_auth_clients = true
        })
        .contains("`tls_ca_cert_file`"));
        assert!(field(&|c| {
            tls(c);
            c.tls_handshake_timeout_ms = 0
        })
        .contains("`tls_handshake_timeout_ms`"));
        let mut tls_only = ok.clone();
        tls(&mut tls_only);
        tls_only.client_addr.set_port(0);
        tls_only.validate().unwrap();
        assert_eq!(tls_only.client_listen(), "127.0.0.1:2".parse().unwrap());
        let e = field(&|c| c.emulation.fluct_period_ms = 288_230_376_151_711_744);
        assert!(e.contains("`emulation`") && e.contains("fluct_period_ms"), "{e}");
    }

    #[test]
    fn round_trips_through_toml() {
        let cfg = NodeConfig {
            members: vec![Member { id: 0, peer: "127.0.0.1:1".parse().unwrap() }],
            replication: 1,
            metrics_addr: Some("127.0.0.1:2".parse().unwrap()),
            size_oracle: OracleKind::Bloom,
            bloom_rebuild_ms: 5,
            ..NodeConfig::default()
        };
        let back: NodeConfig = toml::from_str(&cfg.to_toml()).unwrap();
        assert_eq!(back, cfg);
    }

    #[test]
    fn consistency_counts() {
        assert_eq!(Consistency::Quorum.required(3), 2);
        assert_eq!(Consistency::All.required(3), 3);
        assert_eq!(Consistency::One.required(3), 1);
        assert_eq!(Consistency::parse("ALL"), Some(Consistency::All));
    }
}
