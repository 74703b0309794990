//! `tailor bench`: drive live nodes with a spec's workload, open loop, and write results.

use anyhow::{bail, Context, Result};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tailor_bench::BenchConfig;
use tailor_spec::{ArrivalKind, Spec};

/// What `tailor bench` drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchEngine {
    /// Tailor's store nodes (RESP).
    Store,
    /// An Apache Cassandra cluster through the CQL driver (`--policy` chooses replicas).
    Cassandra,
}

/// Arguments of `tailor bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Client addresses of the nodes, comma-separated (e.g. 127.0.0.1:7000,127.0.0.1:7001; for
    /// Cassandra the CQL contact points, e.g. 127.0.0.1:9042,127.0.0.2:9042).
    #[arg(long, value_delimiter = ',', required = true)]
    nodes: Vec<String>,
    /// The system under load.
    #[arg(long, value_enum, default_value = "store")]
    engine: BenchEngine,
    /// Cassandra only: the replica-selection policy, a tailor selector (lor, c3, ...) or
    /// driver-default, driver-latency-aware, cassandra-dynamic-snitch.
    #[arg(long, default_value = "lor")]
    policy: String,
    /// Cassandra only: poll each node's facts (system_views) this often, in ms (0: never; c3 needs it).
    #[arg(long, default_value_t = 100)]
    poll_ms: u64,
    /// A preset name or a spec file (`.toml`) whose `[workload]` is used (default: the default spec).
    spec: Option<String>,
    /// Override a spec field by its dotted path, e.g. `--set workload.reads=0.95`.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Offered rate in requests per second over the whole cluster (overrides the spec).
    #[arg(long, conflicts_with = "load")]
    rate: Option<f64>,
    /// Offered load as a fraction of the spec's nominal capacity of these nodes (overrides the spec).
    #[arg(long)]
    load: Option<f64>,
    /// Run length in seconds, warm-up included (default: workload.requests / rate).
    #[arg(long)]
    duration: Option<f64>,
    /// Warm-up in seconds, not measured (default: workload.warmup_ms).
    #[arg(long)]
    warmup: Option<f64>,
    /// TCP connections, spread round-robin over the nodes, one request in flight each.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Per-request timeout in milliseconds, counted from the intended send time.
    #[arg(long, default_value_t = 2000)]
    timeout_ms: u64,
    /// Load at most this many keys before the run (0 skips the load phase).
    #[arg(long)]
    load_keys: Option<u64>,
    /// Seed of the workload (default: the spec's first seed).
    #[arg(long)]
    seed: Option<u64>,
    /// Selector name recorded in the results (default: asked from the cluster).
    #[arg(long)]
    label_selector: Option<String>,
    /// Local policy name recorded in the results (default: asked from the cluster).
    #[arg(long)]
    label_local: Option<String>,
    /// Client threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Directory for results.json, results.csv and timeseries.csv/json (default: tailor-out/<experiment>-live).
    #[arg(long)]
    out: Option<PathBuf>,
    /// No progress lines.
    #[arg(long, short)]
    quiet: bool,
}

fn seconds(flag: &str, s: Option<f64>) -> Result<Option<Duration>> {
    s.map(|s| Duration::try_from_secs_f64(s).with_context(|| format!("--{flag} {s}: not a valid number of seconds")))
        .transpose()
}

fn resolve(node: &str) -> Result<SocketAddr> {
    node.trim()
        .to_socket_addrs()
        .with_context(|| format!("--nodes: cannot resolve `{node}` (expected host:port)"))?
        .next()
        .with_context(|| format!("--nodes: `{node}` resolves to no address"))
}

/// Run the bench.
pub fn run(args: BenchArgs) -> Result<()> {
    let spec = match &args.spec {
        Some(s) => tailor_spec::load(s, &args.sets)?,
        None => Spec::default().with_overrides(&args.sets)?,
    };
    if !spec.sweep.is_empty() {
        eprintln!("note: the bench runs one point; [sweep] is ignored (use `--set` to pick a value)");
    }
    if !spec.cluster.faults.is_empty() {
        eprintln!(
            "note: cluster.faults are not injected by `tailor bench` (it does not own the node processes); \
             `tailor experiment --engine live` injects them (docs/failures.md)"
        );
    }
    let nodes = args.nodes.iter().map(|n| resolve(n)).collect::<Result<Vec<_>>>()?;
    if args.timeout_ms == 0 {
        bail!("--timeout-ms must be > 0");
    }
    reachable(&nodes)?;
    let trace = match (spec.workload.arrival, args.rate, args.load) {
        (ArrivalKind::Trace, None, None) => {
            Some(tailor_spec::trace::load(&spec.workload).map_err(anyhow::Error::msg)?.records)
        }
        _ => None,
    };
    let mut cfg = BenchConfig::new(nodes, spec);
    cfg.seed = args.seed;
    cfg.rate = args.rate;
    cfg.load = args.load;
    cfg.duration = seconds("duration", args.duration)?;
    cfg.warmup = seconds("warmup", args.warmup)?;
    cfg.connections = args.connections;
    cfg.timeout = Duration::from_millis(args.timeout_ms);
    cfg.load_keys = args.load_keys;
    cfg.selector_label = args.label_selector;
    cfg.local_label = args.label_local;
    cfg.trace = trace;
    cfg.threads = args.threads;
    cfg.progress = !args.quiet;
    let out = match args.engine {
        BenchEngine::Store => tailor_bench::run(&cfg)?,
        BenchEngine::Cassandra => {
            let policy = tailor_cql::bench::Policy::parse(&args.policy).map_err(anyhow::Error::msg)?;
            let poll = (args.poll_ms > 0).then(|| Duration::from_millis(args.poll_ms));
            tailor_cql::bench::run_blocking(&cfg, &tailor_cql::bench::CqlBench { policy, poll, pids: Vec::new() })?
        }
    };
    print!("{}", crate::table::render(&out.results.runs));
    let r = out.run();
    eprintln!(
        "achieved {:.0} req/s of {:.0} offered; {} requests measured, {} errors ({} timeouts), {} in warm-up",
        r.throughput_rps,
        r.offered_rps,
        r.requests,
        r.errors,
        r.extra.get("timeouts").copied().unwrap_or(0.0),
        r.extra.get("warmup_errors").copied().unwrap_or(0.0)
    );
    for e in &out.error_samples {
        eprintln!("  error: {e}");
    }
    if !r.is_valid() {
        eprintln!("INVALID run: {}", r.invalid_reasons.join("; "));
    }
    let dir = args.out.unwrap_or_else(|| Path::new("tailor-out").join(format!("{}-live", cfg.spec.name)));
    super::sim::write_results(&dir, &out.results)?;
    tailor_bench::write_timeseries(&dir, &out.timeseries)?;
    eprintln!("results in {}", dir.join("results.json").display());
    super::experiment::check_live_runs(&out.results)
}

/// Refuse to start when a node does not accept connections: a run against nothing would only
/// measure connection errors.
fn reachable(nodes: &[SocketAddr]) -> Result<()> {
    for node in nodes {
        std::net::TcpStream::connect_timeout(node, Duration::from_secs(3)).with_context(|| {
            format!("--nodes: nothing answers at {node}; start the cluster first (tailor cluster up prints its ports)")
        })?;
    }
    Ok(())
}
