//! `tailor experiment`: one spec, run in the simulator, on live local clusters, or both.

use super::sim::{progress_bar, write_results_named};
use super::spec_arg::load_spec;
use crate::live::{catch_interrupts, LiveCluster, INTERRUPTED};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tailor_core::results::{Results, RunResult, RESULTS_FORMAT};
use tailor_spec::{expand, RunPlan, Spec};

/// Which engines run the experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    /// The discrete-event simulator.
    Sim,
    /// Fresh local store clusters driven by the open-loop load generator.
    Live,
    /// Both, for a simulated-versus-measured comparison.
    Both,
}

/// Arguments of `tailor experiment`.
#[derive(clap::Args)]
pub struct ExperimentArgs {
    /// A preset name or a spec file (`.toml`).
    pub spec: String,
    /// Engines to run.
    #[arg(long, value_enum, default_value = "both")]
    pub engine: Engine,
    /// Override a spec field by its dotted path.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// Output directory (default: tailor-out/<experiment>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seconds of load per live run, warm-up included (default: workload.requests / rate).
    #[arg(long)]
    pub live_duration: Option<f64>,
    /// Seconds of each live run that are not measured (default: workload.warmup_ms).
    #[arg(long)]
    pub live_warmup: Option<f64>,
    /// Run every seed live too (default: the first seed only; live runs take wall time).
    #[arg(long)]
    pub live_all_seeds: bool,
    /// Load-generator connections per live run.
    #[arg(long, default_value_t = 32)]
    pub connections: usize,
    /// No progress bars.
    #[arg(long, short)]
    pub quiet: bool,
}

/// What an experiment wrote.
pub struct ExperimentOutput {
    /// Output directory.
    pub dir: PathBuf,
    /// Simulator results, when run.
    pub sim: Option<Results>,
    /// Live results, when run.
    pub live: Option<Results>,
}

/// Run the experiment and print its tables.
pub fn run(args: ExperimentArgs) -> Result<()> {
    let out = execute(&args)?;
    eprintln!("results in {}", out.dir.display());
    Ok(())
}

/// Run the experiment, print the tables, write the results files, and return them.
pub fn execute(args: &ExperimentArgs) -> Result<ExperimentOutput> {
    let spec = load_spec(&args.spec, &args.sets)?;
    let dir = args.out.clone().unwrap_or_else(|| Path::new("tailor-out").join(&spec.name));
    let plans = expand(&spec)?;
    let mut out = ExperimentOutput { dir: dir.clone(), sim: None, live: None };
    if matches!(args.engine, Engine::Sim | Engine::Both) {
        let bar = progress_bar(args.quiet, plans.len() as u64);
        bar.set_message("simulator");
        let outputs = tailor_sim::run_all(&plans, None, &|runs, _| bar.set_position(runs))?;
        bar.finish_and_clear();
        let results = tailor_sim::results(&spec, &outputs);
        println!("== simulator");
        print!("{}", crate::table::render(&results.runs));
        write_results_named(&dir, "results-sim", &results)?;
        out.sim = Some(results);
    }
    if matches!(args.engine, Engine::Live | Engine::Both) {
        let live_plans: Vec<&RunPlan> = plans.iter().filter(|p| args.live_all_seeds || p.first_seed).collect();
        let results = run_live(&spec, &live_plans, args, &dir)?;
        println!("== live cluster");
        print!("{}", crate::table::render(&results.runs));
        write_results_named(&dir, "results-live", &results)?;
        out.live = Some(results);
    }
    if let (Some(sim), Some(live)) = (&out.sim, &out.live) {
        println!("== p99 read latency, simulated vs measured (ms)");
        print!("{}", side_by_side(&sim.runs, &live.runs));
    }
    Ok(out)
}

fn run_live(spec: &Spec, plans: &[&RunPlan], args: &ExperimentArgs, dir: &Path) -> Result<Results> {
    catch_interrupts();
    let bar = progress_bar(args.quiet, plans.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} live runs, eta {eta}: {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let mut runs: Vec<RunResult> = Vec::new();
    for (i, plan) in plans.iter().enumerate() {
        let label = format!("{}+{} {}", plan.selector, plan.local, params_text(plan));
        bar.set_message(label.clone());
        let run_dir = dir.join("live").join(format!("{i:03}-{}-{}", plan.selector, plan.local));
        let cluster_dir = run_dir.join("cluster");
        let _ = std::fs::remove_dir_all(&cluster_dir);
        let cluster = LiveCluster::start(&plan.spec, &plan.selector, &plan.local, &cluster_dir)
            .with_context(|| format!("starting the cluster for {label}"))?;
        let mut cfg = tailor_bench::BenchConfig::new(cluster.nodes.clone(), plan.spec.clone());
        cfg.seed = Some(plan.seed);
        cfg.params = plan.params.clone();
        cfg.selector_label = Some(plan.selector.clone());
        cfg.local_label = Some(plan.local.clone());
        cfg.connections = args.connections.max(cluster.nodes.len());
        cfg.progress = false;
        cfg.duration = args.live_duration.map(Duration::from_secs_f64);
        cfg.warmup = args.live_warmup.map(Duration::from_secs_f64);
        let window_ms = plan.spec.report.window_ms;
        let sampler = cluster.sample_load(Duration::from_secs_f64(window_ms / 1000.0));
        let bench = tailor_bench::run(&cfg).with_context(|| format!("load for {label}"));
        let per_server_load = sampler.finish();
        for (n, text) in cluster.scrape_metrics().iter().enumerate() {
            let _ = std::fs::write(run_dir.join(format!("metrics-node{n}.txt")), text);
        }
        drop(cluster);
        // the data set is rebuilt by every run's load phase: keep logs and configs, not data
        for n in 0..plan.spec.cluster.servers {
            let _ = std::fs::remove_dir_all(cluster_dir.join(format!("node{n}")).join("data"));
        }
        let mut bench = bench?;
        if plan.first_seed && plan.spec.report.per_server_load {
            if let Some(run) = bench.results.runs.first_mut() {
                run.per_server_load = per_server_load;
                run.window_ms = window_ms;
            }
        }
        bench.write(&run_dir)?;
        runs.push(bench.run().clone());
        bar.inc(1);
        if INTERRUPTED.load(Ordering::Relaxed) {
            bar.abandon();
            bail!("interrupted after {} of {} live runs; every node was stopped", i + 1, plans.len());
        }
    }
    bar.finish_and_clear();
    Ok(Results {
        format: RESULTS_FORMAT,
        tailor_version: env!("CARGO_PKG_VERSION").to_string(),
        experiment: spec.name.clone(),
        engine: "live".into(),
        spec: spec.to_toml(),
        runs,
    })
}

fn params_text(plan: &RunPlan) -> String {
    plan.params.iter().map(|(k, v)| format!("{}={v}", k.rsplit('.').next().unwrap_or(k))).collect::<Vec<_>>().join(" ")
}

/// One line per strategy and swept point: the simulator's p99 (seed average) next to the measured one.
fn side_by_side(sim: &[RunResult], live: &[RunResult]) -> String {
    let mut out = format!("{:<32} {:>10} {:>10} {:>8}\n", "strategy", "sim p99", "live p99", "live/sim");
    for l in live {
        let matching: Vec<&RunResult> =
            sim.iter().filter(|s| s.selector == l.selector && s.local == l.local && s.params == l.params).collect();
        if matching.is_empty() {
            continue;
        }
        let sim_p99 = matching.iter().map(|s| s.read_latency_ms.p99).sum::<f64>() / matching.len() as f64;
        let params: Vec<String> = l.params.values().cloned().collect();
        let name = format!("{}+{} {}", l.selector, l.local, params.join(" "));
        out.push_str(&format!(
            "{:<32} {:>10.2} {:>10.2} {:>8.2}\n",
            name.trim_end(),
            sim_p99,
            l.read_latency_ms.p99,
            l.read_latency_ms.p99 / sim_p99
        ));
    }
    out
}
