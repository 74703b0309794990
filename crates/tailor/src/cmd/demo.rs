//! `tailor demo`: the one-step tour. A small heterogeneous-workload comparison (1 KB and 64 KB
//! values, 10 % large; dynamic-snitch, c3, heron, eft; fcfs) in the simulator and on a live
//! local cluster of 5 nodes with emulated service times, then the HTML report.

use super::experiment::{execute, Engine, ExperimentArgs};
use super::report::{self, ReportArgs};
use anyhow::Result;
use std::path::PathBuf;

/// Arguments of `tailor demo`.
#[derive(clap::Args)]
pub struct DemoArgs {
    /// Output directory for results and report.
    #[arg(long, default_value = "tailor-out/demo")]
    out: PathBuf,
    /// Seconds of load per live run (four runs).
    #[arg(long, default_value_t = 20.0)]
    live_duration: f64,
    /// Simulator only (no live cluster).
    #[arg(long)]
    sim_only: bool,
    /// Override a field of the demo spec by its dotted path.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// No progress bars.
    #[arg(long, short)]
    quiet: bool,
}

/// Run the demo.
pub fn run(args: DemoArgs) -> Result<()> {
    eprintln!("tailor demo: 5-node comparison of dynamic-snitch, c3, heron and eft on 1 KB / 64 KB values (10% large)");
    let out = execute(&ExperimentArgs {
        spec: "demo".into(),
        engine: if args.sim_only { Engine::Sim } else { Engine::Both },
        sets: args.sets,
        out: Some(args.out.clone()),
        live_duration: Some(args.live_duration),
        live_warmup: Some(2.0_f64.min(args.live_duration / 4.0)),
        live_all_seeds: false,
        connections: 256,
        quiet: args.quiet,
    })?;
    let html = out.dir.join("report.html");
    report::run(ReportArgs {
        inputs: vec![out.dir.clone()],
        out: html.clone(),
        png: false,
        title: Some("Tailor demo".into()),
    })?;
    println!("report: {}", html.display());
    super::experiment::check_live_validity(&out)
}
