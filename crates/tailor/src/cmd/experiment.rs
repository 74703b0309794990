//! `tailor experiment`: one spec, run in the simulator, on live local clusters, or both.

use super::sim::{progress_bar, write_results_named};
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
    /// Load-generator connections per live run (each carries one request at a time: enough
    /// that a latency spike does not leave requests waiting for a connection).
    #[arg(long, default_value_t = 256)]
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

/// Exit code of every command that measures live (`experiment`, `demo`, `bench`, `cassandra
/// experiment`) when every live run of some strategy is invalid or measured nothing: the results
/// are written, but they do not measure that strategy (2 is an error, 130 an interrupt).
pub const INVALID_EXIT_CODE: i32 = 3;

/// Every live run of these strategies is invalid (see tailor-bench's validity rule).
#[derive(Debug)]
pub struct AllLiveRunsInvalid {
    /// "selector+local" of each such strategy.
    pub strategies: Vec<String>,
}

impl std::fmt::Display for AllLiveRunsInvalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "every live run of {} is invalid: its figures describe the host or the load generator, \
             not the strategy; each run's reasons above say which (a busy host: rerun on a quieter \
             machine or at a lower rate; busy connections: rerun with more --connections)",
            self.strategies.join(", ")
        )
    }
}

impl std::error::Error for AllLiveRunsInvalid {}

/// Run the experiment and print its tables.
pub fn run(args: ExperimentArgs) -> Result<()> {
    let out = execute(&args)?;
    eprintln!("results in {}", out.dir.display());
    check_live_validity(&out)
}

/// `Err(AllLiveRunsInvalid)` when every live run of some strategy is invalid.
pub fn check_live_validity(out: &ExperimentOutput) -> Result<()> {
    out.live.as_ref().map_or(Ok(()), check_live_runs)
}

/// `Err(AllLiveRunsInvalid)` when every run of some strategy in `live` is invalid or measured
/// no request.
pub fn check_live_runs(live: &Results) -> Result<()> {
    let mut strategies: Vec<String> = Vec::new();
    let unusable = |o: &RunResult| !o.is_valid() || o.requests == 0;
    for r in &live.runs {
        let name = format!("{}+{}", r.selector, r.local);
        let all_invalid = live.runs.iter().filter(|o| o.selector == r.selector && o.local == r.local).all(unusable);
        if all_invalid && !strategies.contains(&name) {
            strategies.push(name);
        }
    }
    if strategies.is_empty() {
        return Ok(());
    }
    Err(AllLiveRunsInvalid { strategies }.into())
}

/// Run the experiment, print the tables, write the results files, and return them.
pub fn execute(args: &ExperimentArgs) -> Result<ExperimentOutput> {
    let spec = tailor_spec::load(&args.spec, &args.sets)?;
    let dir = args.out.clone().unwrap_or_else(|| Path::new("tailor-out").join(&spec.name));
    let plans = expand(&spec)?;
    let mut out = ExperimentOutput { dir: dir.clone(), sim: None, live: None };
    if matches!(args.engine, Engine::Sim | Engine::Both) {
        // the simulator's warnings (an overload, a warm-up that discards the run), as `sim` prints them
        super::sim::warn_or_refuse(&spec, &args.sets, false)?;
        let bar = progress_bar(args.quiet, plans.len() as u64);
        bar.set_message("simulator");
        let results = tailor_sim::simulate(&spec, &plans, &|runs, _| bar.set_position(runs))?;
        bar.finish_and_clear();
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
        if let Some(failover) = tailor_report::failover::text(&results.runs) {
            print!("\n{failover}");
        }
        write_results_named(&dir, "results-live", &results)?;
        out.live = Some(results);
    }
    if let (Some(sim), Some(live)) = (&out.sim, &out.live) {
        println!("== p99 read latency, simulated vs measured (ms)");
        print!("{}", side_by_side(&sim.runs, &live.runs));
    }
    if let Some(live) = &out.live {
        print!("{}", invalid_runs(&live.runs));
    }
    Ok(out)
}

fn run_live(spec: &Spec, plans: &[&RunPlan], args: &ExperimentArgs, dir: &Path) -> Result<Results> {
    catch_interrupts();
    let seconds: Vec<f64> = plans.iter().map(|p| live_seconds(p, args)).collect();
    let bar = progress_bar(args.quiet, plans.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let clock = LiveClock::start(bar.clone(), seconds);
    let mut runs: Vec<RunResult> = Vec::new();
    for (i, plan) in plans.iter().enumerate() {
        let label = format!("{}+{} {}", plan.selector, plan.local, params_text(plan));
        clock.begin_run(i, &label);
        let run_dir = dir.join("live").join(format!("{i:03}-{}-{}", plan.selector, plan.local));
        let cluster_dir = run_dir.join("cluster");
        let _ = std::fs::remove_dir_all(&cluster_dir);
        let mut cluster = LiveCluster::start(&plan.spec, &plan.selector, &plan.local, &cluster_dir)
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
        let bench = if plan.spec.cluster.faults.is_empty() {
            tailor_bench::run(&cfg).map_err(anyhow::Error::from)
        } else {
            crate::live_faults::run(&mut cluster, cfg)
        };
        let bench = bench.with_context(|| format!("load for {label}"));
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

/// Seconds of load of one live run (warm-up included), known before it starts: the flag, else
/// `workload.requests / rate` as the bench computes it; 0 when the rate cannot be told here.
fn live_seconds(plan: &RunPlan, args: &ExperimentArgs) -> f64 {
    if let Some(d) = args.live_duration {
        return d;
    }
    let rate = tailor_bench::schedule::offered_rate(&plan.spec, plan.spec.cluster.servers, None, None);
    match rate {
        Ok(Some(r)) if r > 0.0 => plan.spec.workload.requests as f64 / r,
        _ => 0.0,
    }
}

/// The live progress line: runs done and an ETA from the known load seconds of the runs left
/// (minus the part of the current run already spent), so it neither sits at 0 nor jumps by
/// whole runs. Start-up and load phases are not counted: the ETA errs low by those.
struct LiveClock {
    state: std::sync::Arc<std::sync::Mutex<(usize, String, std::time::Instant)>>,
}

impl LiveClock {
    fn start(bar: indicatif::ProgressBar, seconds: Vec<f64>) -> LiveClock {
        let state = std::sync::Arc::new(std::sync::Mutex::new((0, String::new(), std::time::Instant::now())));
        let weak = std::sync::Arc::downgrade(&state);
        std::thread::spawn(move || {
            while let Some(state) = weak.upgrade() {
                let Ok((i, label, since)) = state.lock().map(|g| g.clone()) else { break };
                drop(state);
                bar.set_position(i as u64);
                bar.set_message(eta_line(&seconds, i, since.elapsed().as_secs_f64(), &label));
                std::thread::sleep(Duration::from_millis(500));
            }
        });
        LiveClock { state }
    }

    fn begin_run(&self, i: usize, label: &str) {
        if let Ok(mut g) = self.state.lock() {
            *g = (i, label.to_string(), std::time::Instant::now());
        }
    }
}

/// `2/6 live runs, eta 1m 40s: <label>`: the rest of run `i` plus every later run.
fn eta_line(seconds: &[f64], i: usize, spent: f64, label: &str) -> String {
    let current = seconds.get(i).copied().unwrap_or(0.0);
    let left = (current - spent).max(0.0) + seconds.iter().skip(i + 1).sum::<f64>();
    let left = left.round() as u64;
    let eta = if left >= 60 { format!("{}m {:02}s", left / 60, left % 60) } else { format!("{left}s") };
    format!("{i}/{} live runs, eta {eta}: {label}", seconds.len())
}

/// The invalid live runs, one line each with its reasons; empty when every run is valid.
fn invalid_runs(runs: &[RunResult]) -> String {
    let invalid: Vec<&RunResult> = runs.iter().filter(|r| !r.is_valid()).collect();
    if invalid.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "== INVALID live runs ({} of {}): their figures describe the host, not the strategy\n",
        invalid.len(),
        runs.len()
    );
    for r in invalid {
        let params: Vec<String> =
            r.params.iter().map(|(k, v)| format!("{}={v}", k.rsplit('.').next().unwrap_or(k))).collect();
        let name = format!("{}+{} {} seed {}", r.selector, r.local, params.join(" "), r.seed);
        out.push_str(&format!("{}: {}\n", name.replace("  ", " "), r.invalid_reasons.join("; ")));
    }
    out
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
            "{:<32} {:>10.2} {:>10.2} {:>8.2}{}\n",
            name.trim_end(),
            sim_p99,
            l.read_latency_ms.p99,
            l.read_latency_ms.p99 / sim_p99,
            if l.is_valid() { "" } else { "  INVALID live run" }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_eta_counts_the_rest_of_the_run_and_the_runs_left() {
        let secs = [30.0, 30.0, 45.0];
        assert_eq!(eta_line(&secs, 0, 0.0, "a"), "0/3 live runs, eta 1m 45s: a");
        assert_eq!(eta_line(&secs, 1, 10.0, "b"), "1/3 live runs, eta 1m 05s: b");
        assert_eq!(eta_line(&secs, 2, 50.0, "c"), "2/3 live runs, eta 0s: c", "an overrun is not negative");
    }

    fn live(selector: &str, seed: u64, valid: bool) -> RunResult {
        let mut r = RunResult {
            selector: selector.into(),
            local: "fcfs".into(),
            seed,
            requests: 1_000,
            valid: Some(valid),
            ..Default::default()
        };
        if !valid {
            r.invalid_reasons =
                vec!["408 timeouts after the warm-up".into(), "achieved 812 req/s of 1000 offered".into()];
        }
        r
    }

    fn output(runs: Vec<RunResult>) -> ExperimentOutput {
        ExperimentOutput { dir: PathBuf::new(), sim: None, live: Some(Results { runs, ..Results::default() }) }
    }

    #[test]
    fn invalid_runs_are_listed_with_their_reasons() {
        let text = invalid_runs(&[live("c3", 1, true), live("lor", 1, false)]);
        assert_eq!(
            text.lines().nth(1),
            Some("lor+fcfs seed 1: 408 timeouts after the warm-up; achieved 812 req/s of 1000 offered")
        );
        assert!(text.starts_with("== INVALID live runs (1 of 2)"), "{text}");
        assert_eq!(invalid_runs(&[live("c3", 1, true)]), "");
    }

    #[test]
    fn fails_only_when_every_run_of_a_strategy_is_invalid() {
        assert!(check_live_validity(&output(vec![live("c3", 1, true), live("c3", 2, false)])).is_ok());
        let err = check_live_validity(&output(vec![live("c3", 1, true), live("lor", 1, false), live("lor", 2, false)]))
            .unwrap_err();
        let invalid = err.downcast_ref::<AllLiveRunsInvalid>().expect("the typed error, for the exit code");
        assert_eq!(invalid.strategies, ["lor+fcfs"]);
        // simulator-only experiments and files from before the verdict are never flagged
        assert!(check_live_validity(&ExperimentOutput { dir: PathBuf::new(), sim: None, live: None }).is_ok());
        let old = RunResult { valid: None, ..live("c3", 1, true) };
        assert!(check_live_validity(&output(vec![old])).is_ok());
        // a run that measured nothing does not measure its strategy either
        let empty = RunResult { requests: 0, ..live("c3", 1, true) };
        assert!(check_live_validity(&output(vec![empty])).is_err());
    }
}
