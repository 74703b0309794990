//! `tailor compare`: which strategy for my workload. Every registered selector × local policy
//! runs in the simulator on the user's trace (or a preset's workload) and cluster shape, once
//! per seed; pairs are ranked by p99 with 95 % intervals, with the lower bound where it can be
//! computed, and written as JSON, CSV and one page (docs/compare.md).

use crate::compare::output::{self, BoundNote, Comparison, COMPARE_FORMAT};
use crate::compare::{execute, page, rank, recommend, setup};
use crate::trace_summary::parse_format;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tailor_core::workload::trace::TraceFormat;

/// Arguments of `tailor compare`.
#[derive(clap::Args)]
pub struct CompareArgs {
    /// The base spec: a preset or a spec file, for the cluster and service model (and the
    /// workload, without --trace).
    pub spec: Option<String>,
    /// A trace to replay (Tailor's CSV, Twitter's cache-trace CSV or oracleGeneral; zstd or not).
    #[arg(long)]
    pub trace: Option<String>,
    /// The trace's format: auto, tailor, twitter or oracle-general.
    #[arg(long, default_value = "auto", value_parser = parse_format)]
    pub format: TraceFormat,
    /// Servers (default: the base spec's).
    #[arg(long)]
    pub servers: Option<usize>,
    /// Replication factor (default: the base spec's).
    #[arg(long)]
    pub replication: Option<usize>,
    /// Seeds, comma-separated; every pair runs once per seed.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    pub seeds: Vec<u64>,
    /// Requests per run (default: the whole trace, or the spec's workload.requests).
    #[arg(long)]
    pub requests: Option<u64>,
    /// Milliseconds at the start not measured (default: 0 with a trace, else the spec's).
    #[arg(long)]
    pub warmup_ms: Option<f64>,
    /// Replay the trace this many times faster (arrival times divided by it).
    #[arg(long, default_value_t = 1.0)]
    pub speedup: f64,
    /// Requests (the first of each run) the LP lower bound is solved on; 0: no bound.
    #[arg(long, default_value_t = 1000)]
    pub bound_requests: usize,
    /// Override a field of the base spec by its dotted path, e.g. `--set cluster.workers=4`.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// Output directory (default: tailor-out/compare-<trace or spec name>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Run the comparison, print the ranking and write the files.
pub fn run(args: CompareArgs) -> Result<()> {
    let started = Instant::now();
    let setup = setup::prepare(&args)?;
    let spec = &setup.spec;
    super::sim::warn_or_refuse(spec, &args.sets, false)?;
    if let Some(summary) = &setup.summary {
        eprint!("{}", summary.text());
    }
    let pairs = spec.compare.selectors.len() * spec.compare.locals.len();
    eprintln!(
        "{}: {pairs} pairs ({} selectors x {} locals, {} skipped) x {} seeds = {} runs of {} requests on {} servers, replication {}",
        spec.name,
        spec.compare.selectors.len(),
        spec.compare.locals.len(),
        setup.skipped.len(),
        spec.seeds.len(),
        pairs * spec.seeds.len(),
        spec.workload.requests,
        spec.cluster.servers,
        spec.cluster.replication
    );
    let (results, failed) = execute::run(&setup, args.quiet)?;
    if let Some(why) = tailor_sim::measured_nothing(spec, &results) {
        bail!("{why} (or lower --warmup-ms)");
    }
    let ranking = rank::rank(&results.runs);
    let mut skipped = setup.skipped.clone();
    skipped.extend(failed);
    let base = args.spec.clone().unwrap_or_else(|| "demo".into());
    let bound_why_not = setup.bound_why_not.clone().or_else(|| {
        ranking.iter().all(|r| r.bound.is_none()).then(|| "no run kept a read among its first requests".into())
    });
    let comparison = Comparison {
        format: COMPARE_FORMAT,
        tailor_version: env!("CARGO_PKG_VERSION").to_string(),
        recommendation: recommend::sentence(&ranking),
        caveats: recommend::caveats(&ranking, spec, &base, args.speedup),
        base_spec: base,
        trace: setup.summary.clone(),
        speedup: args.speedup,
        servers: spec.cluster.servers,
        replication: spec.cluster.replication,
        seeds: spec.seeds.clone(),
        requests: spec.workload.requests,
        warmup_ms: spec.workload.warmup_ms,
        bound: BoundNote {
            requests: if bound_why_not.is_none() { spec.bound.requests } else { 0 },
            why_not: bound_why_not,
        },
        ranking,
        skipped,
    };
    print!("{}", output::table(&comparison.ranking));
    println!("\n{}", comparison.recommendation);
    let out = args.out.clone().unwrap_or_else(|| Path::new("tailor-out").join(&spec.name));
    let html = write_all(&out, &comparison, &results)?;
    eprintln!(
        "{} runs in {:.1} s; {} pairs ranked, {} skipped; page {}",
        results.runs.len(),
        started.elapsed().as_secs_f64(),
        comparison.ranking.len(),
        comparison.skipped.len(),
        html.display()
    );
    Ok(())
}

/// `compare.json`, `compare.csv`, the page, and the per-run results `tailor report` reads.
fn write_all(dir: &Path, c: &Comparison, results: &tailor_core::results::Results) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let json = serde_json::to_string_pretty(c)? + "\n";
    let path = dir.join("compare.json");
    std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
    let path = dir.join("compare.csv");
    std::fs::write(&path, output::csv(&c.ranking, &c.skipped))
        .with_context(|| format!("writing {}", path.display()))?;
    super::sim::write_results(dir, results)?;
    page::write(dir, c, results)
}
