//! `tailor cassandra`: the cluster commands of `tailor-cql` (fetch, up, down) and `experiment`,
//! every replica-selection policy in turn on a real Cassandra with one node slowed.

use super::sim::{write_results, write_results_named};
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::Duration;
use tailor_bench::BenchConfig;
use tailor_core::results::{Results, RunResult, RESULTS_FORMAT};
use tailor_cql::bench::Policy;
use tailor_cql::experiment::{Plan, SlowNode};
use tailor_cql::launch::{jars, CassandraOptions};
use tailor_cql::twin::{self, Calibration};
use tailor_spec::Spec;

/// Arguments of `tailor cassandra`.
#[derive(clap::Args)]
pub struct CassandraArgs {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    #[command(flatten)]
    Cluster(tailor_cql::cli::CassandraCommand),
    /// Every policy in turn on a fresh local cluster with one node slowed; writes results and
    /// per-run time series for `tailor report`.
    Experiment(ExperimentArgs),
}

/// The policies compared by default: the driver's own, the Java driver's, Cassandra's server
/// side, and Tailor's selectors that Cassandra can feed.
const DEFAULT_POLICIES: &str = "driver-default,driver-latency-aware,slow-replica-avoidance,lor,c3,p2c-peak-ewma,dynamic-snitch,cassandra-dynamic-snitch";

#[derive(clap::Args)]
struct ExperimentArgs {
    /// A preset or spec file whose `[workload]` drives every run (default: the default spec).
    spec: Option<String>,
    /// Override a spec field by its dotted path.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Policies, comma-separated, in run order.
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_POLICIES)]
    policies: Vec<String>,
    /// Nodes (the keyspace's replication is the spec's `cluster.replication`).
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Heap of each JVM in MiB.
    #[arg(long, default_value_t = 512)]
    heap_mb: u32,
    /// Offered rate, requests per second.
    #[arg(long, default_value_t = 400.0)]
    rate: f64,
    /// Seconds per run, warm-up included.
    #[arg(long, default_value_t = 30.0)]
    duration: f64,
    /// Warm-up seconds per run, not measured.
    #[arg(long, default_value_t = 5.0)]
    warmup: f64,
    /// Request slots of the load generator (one request in flight each).
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Keys loaded before the first run.
    #[arg(long, default_value_t = 5000)]
    load_keys: u64,
    /// Node slowed by a stop/continue duty cycle of its JVM.
    #[arg(long, default_value_t = 2)]
    slow_node: usize,
    /// Share of each period the slowed node's JVM is stopped (0: no slowed node).
    #[arg(long, default_value_t = 0.5)]
    slow_duty: f64,
    /// Period of the duty cycle in ms.
    #[arg(long, default_value_t = 100)]
    slow_period_ms: u64,
    /// Fact polling period of Tailor's policies in ms (0: none; c3 needs it).
    #[arg(long, default_value_t = 100)]
    poll_ms: u64,
    /// CPU niceness of the JVMs, so the load generator keeps its schedule first on one machine.
    #[arg(long, default_value_t = 5)]
    niceness: u8,
    /// Cluster directory (default: a temporary one, removed at the end).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Output directory (default: tailor-out/live-cassandra).
    #[arg(long)]
    out: Option<PathBuf>,
    /// No simulator twin (by default the same spec, calibrated from the first run, is simulated
    /// into results-sim.json for the report's overlay).
    #[arg(long)]
    no_sim: bool,
}

/// Run a `tailor cassandra` command.
pub fn run(args: CassandraArgs) -> Result<()> {
    match args.command {
        Command::Cluster(c) => Ok(tailor_cql::cli::run(&c)?),
        Command::Experiment(e) => experiment(e),
    }
}

fn plan(e: &ExperimentArgs) -> Result<Plan> {
    let mut spec = match &e.spec {
        Some(s) => tailor_spec::load(s, &e.sets)?,
        None => Spec::default().with_overrides(&e.sets)?,
    };
    spec.name = "live-cassandra".into();
    let policies =
        e.policies.iter().map(|p| Policy::parse(p).map_err(anyhow::Error::msg)).collect::<Result<Vec<_>>>()?;
    let mut bench = BenchConfig::new(Vec::new(), spec);
    bench.rate = Some(e.rate);
    bench.duration = Some(Duration::try_from_secs_f64(e.duration).context("--duration")?);
    bench.warmup = Some(Duration::try_from_secs_f64(e.warmup).context("--warmup")?);
    bench.connections = e.connections.max(e.nodes);
    bench.load_keys = Some(e.load_keys);
    bench.progress = false;
    let slow = (e.slow_duty > 0.0).then(|| SlowNode {
        index: e.slow_node,
        duty: e.slow_duty,
        period: Duration::from_millis(e.slow_period_ms),
    });
    let cluster = CassandraOptions {
        nodes: e.nodes,
        heap_mb: e.heap_mb,
        cache: jars::default_cache(),
        niceness: e.niceness,
        ..Default::default()
    };
    let poll = (e.poll_ms > 0).then(|| Duration::from_millis(e.poll_ms));
    Ok(Plan { cluster, policies, bench, poll, slow })
}

fn experiment(e: ExperimentArgs) -> Result<()> {
    let plan = plan(&e)?;
    let out = e.out.clone().unwrap_or_else(|| PathBuf::from("tailor-out/live-cassandra"));
    let temporary = e.dir.is_none();
    let dir = e
        .dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("tailor-cassandra-exp-{}", std::process::id())));
    if let Some(s) = plan.slow {
        eprintln!("{s}");
    }
    let mut runs: Vec<RunResult> = Vec::new();
    let outcome = tailor_cql::experiment::run(&plan, &dir, |policy, bench| {
        let run = bench.run().clone();
        eprintln!("{}", summary(&run, e.nodes));
        let run_dir = out.join("live").join(policy.label());
        if let Err(err) = bench.write(&run_dir) {
            eprintln!("cannot write {}: {err}", run_dir.display());
        }
        runs.push(run);
    });
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    outcome?;
    let twin = if e.no_sim { None } else { simulate_twin(&plan, &runs)? };
    let spec = twin.as_ref().map_or_else(|| plan.bench.spec.to_toml(), |t| t.spec.clone());
    let results = Results {
        format: RESULTS_FORMAT,
        tailor_version: env!("CARGO_PKG_VERSION").to_string(),
        experiment: plan.bench.spec.name.clone(),
        engine: "live".into(),
        spec,
        runs,
    };
    print!("{}", crate::table::render(&results.runs));
    write_results(&out, &results)?;
    if let Some(sim) = twin {
        println!("== simulator, the same spec (twins: {})", twins(&plan));
        print!("{}", crate::table::render(&sim.runs));
        write_results_named(&out, "results-sim", &sim)?;
    }
    eprintln!("results in {} (`tailor report {}` makes the page)", out.join("results.json").display(), out.display());
    super::experiment::check_live_runs(&results)
}

/// The experiment in the simulator (`tailor_cql::twin`), calibrated from the first run, its runs
/// named like the live ones; `None` (with a warning) when that run reported no local read times.
fn simulate_twin(plan: &Plan, runs: &[RunResult]) -> Result<Option<Results>> {
    let slowed = plan.slow.map(|s| s.index);
    let Some(cal) = runs.first().and_then(|r| Calibration::from_run(r, plan.cluster.nodes, slowed)) else {
        eprintln!("no simulator twin: the first run measured no read latency to calibrate it with");
        return Ok(None);
    };
    let spec = twin::sim_spec(plan, &cal)?;
    eprintln!(
        "simulator twin: service {:.3} ms median ({:.3} ms mean, exponential), network {:.3} ms one way (driver median {:.3} ms)",
        cal.service_p50_ms,
        spec.cluster.service.mean_ms,
        spec.cluster.network_delay_ms,
        cal.client_p50_ms
    );
    let outputs = tailor_sim::run_all(&tailor_spec::expand(&spec)?, None, &|_, _| {})?;
    let mut results = tailor_sim::results(&spec, &outputs);
    let local = runs.first().map_or("cassandra", |r| r.local.as_str());
    results.runs = twin::relabel(plan, &results.runs, local);
    for r in &mut results.runs {
        r.extra.insert("calibrated_service_p50_ms".into(), cal.service_p50_ms);
        r.extra.insert("calibrated_client_p50_ms".into(), cal.client_p50_ms);
    }
    Ok(Some(results))
}

/// Which simulated selector stands for each policy, e.g. `driver-default = random`.
fn twins(plan: &Plan) -> String {
    let pairs = plan.policies.iter().map(|p| (p.label(), twin::sim_twin(p).to_string()));
    pairs.map(|(l, t)| if l == t { l } else { format!("{l} = {t}") }).collect::<Vec<_>>().join(", ")
}

/// One line per finished run: latency, validity, each node's share of the reads, forced picks.
fn summary(r: &RunResult, nodes: usize) -> String {
    let shares: Vec<String> = (0..nodes)
        .map(|i| format!("{:.0} %", r.extra.get(&format!("node{i}_read_share")).unwrap_or(&0.0) * 100.0))
        .collect();
    let forced = r.extra.get("policy_forced_picks").map_or(String::new(), |f| format!(", {f} forced picks"));
    let valid = if r.is_valid() { "valid".to_string() } else { format!("INVALID: {}", r.invalid_reasons.join("; ")) };
    format!(
        "{:<26} p50 {:>7.2} ms  p99 {:>8.2} ms  reads per node [{}]{forced}  {valid}",
        r.selector,
        r.read_latency_ms.p50,
        r.read_latency_ms.p99,
        shares.join(", ")
    )
}
