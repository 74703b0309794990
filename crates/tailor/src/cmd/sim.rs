//! `tailor sim`: run an experiment in the simulator, print the table, write results.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tailor_core::results::Results;
use tailor_spec::expand;
use tailor_spec::shard::{Shard, ShardResults};

/// Arguments of `tailor sim`.
#[derive(clap::Args)]
pub struct SimArgs {
    /// A preset name (see `tailor presets`) or a spec file (`.toml`).
    spec: String,
    /// Override a spec field by its dotted path, e.g. `--set workload.requests=100000`.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Directory for results.json, results.csv and results.parquet (default: tailor-out/<experiment>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Add each run's max weighted flow over the LP lower bound (same as `--set bound.enabled=true`).
    #[arg(long)]
    bound: bool,
    /// Print the effective spec as TOML and exit without running.
    #[arg(long)]
    print_spec: bool,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    /// Refuse to run a spec with warnings (a `--set` shadowed by a sweep, a warm-up that
    /// discards the run, an overload).
    #[arg(long)]
    strict: bool,
    /// Run only shard I of N, 0-based (`0/4` to `3/4`): the runs at positions p % N == I of the
    /// sweep, written as `results.shard-I-of-N.json` for `tailor merge` (docs/sweeps.md).
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
}

/// Run the experiment.
pub fn run(args: SimArgs) -> Result<()> {
    let mut sets = args.sets.clone();
    if args.bound {
        sets.push("bound.enabled=true".into());
    }
    let spec = tailor_spec::load(&args.spec, &sets)?;
    // expanding checks every swept key names a real field, so a misspelt one is refused here
    // too, not only when the runs start
    let all = expand(&spec)?;
    if args.print_spec {
        print!("{}", spec.to_toml());
        return Ok(());
    }
    warn_or_refuse(&spec, &sets, args.strict)?;
    let total_runs = all.len();
    let plans = match args.shard {
        Some(shard) => shard.select(&all),
        None => all,
    };
    let total_requests: u64 = plans.iter().map(|p| p.spec.workload.requests).sum();
    eprintln!(
        "{}: {} runs ({} points x {} selectors x {} locals x {} seeds){}, {} requests",
        spec.name,
        total_runs,
        total_runs / (spec.compare.selectors.len() * spec.compare.locals.len() * spec.seeds.len()),
        spec.compare.selectors.len(),
        spec.compare.locals.len(),
        spec.seeds.len(),
        args.shard.map(|s| format!(", shard {s} runs {} of them", plans.len())).unwrap_or_default(),
        total_requests
    );
    let bar = progress_bar(args.quiet, plans.len() as u64);
    let started = Instant::now();
    let results = tailor_sim::simulate(&spec, &plans, &|runs, done| {
        bar.set_position(runs);
        bar.set_message(eta_text(started.elapsed().as_secs_f64(), done, total_requests));
    })?;
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();
    // refused before a table of zeros is printed; not for a shard, which may hold only a
    // sweep's shortest points (`tailor merge` checks the whole)
    if let Some(why) = tailor_sim::measured_nothing(&spec, &results).filter(|_| args.shard.is_none()) {
        bail!(why);
    }
    print!("{}", crate::table::render(&results.runs));
    if let Some(failover) = tailor_report::failover::text(&results.runs) {
        print!("\n{failover}");
    }
    let out = args.out.unwrap_or_else(|| Path::new("tailor-out").join(&spec.name));
    let written = match args.shard {
        Some(shard) => write_shard(&out, &ShardResults::new(shard, total_runs, results))?,
        None => {
            write_results(&out, &results)?;
            out.join("results.json")
        }
    };
    eprintln!(
        "{} requests simulated in {:.1} s ({:.2} M requests/s on {} threads); results in {}",
        total_requests,
        elapsed,
        total_requests as f64 / elapsed / 1e6,
        rayon_threads(),
        written.display()
    );
    Ok(())
}

/// Print the spec's warnings; with `strict`, refuse to run when there are any.
pub fn warn_or_refuse(spec: &tailor_spec::Spec, sets: &[String], strict: bool) -> Result<()> {
    let warnings = tailor_spec::lint::lint(spec, sets);
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if strict && !warnings.is_empty() {
        bail!("{} warning(s) and --strict", warnings.len());
    }
    Ok(())
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

pub use crate::progress::progress_bar;

/// The ETA by simulated requests (runs differ in length, so runs done would mislead).
pub(crate) fn eta_text(elapsed: f64, done: u64, total: u64) -> String {
    if done == 0 {
        return "eta after the first requests".into();
    }
    let left = (elapsed * (total.saturating_sub(done)) as f64 / done as f64).round() as u64;
    format!("{done} of {total} requests, eta {}m {:02}s", left / 60, left % 60)
}

/// Write `results.json` and a flat `results.csv` into `dir`.
pub fn write_results(dir: &Path, results: &Results) -> Result<()> {
    write_results_named(dir, "results", results)
}

/// Write `<stem>.json`, a flat `<stem>.csv` and `<stem>.parquet` (swept parameters as columns,
/// docs/results.md) into `dir`.
pub fn write_results_named(dir: &Path, stem: &str, results: &Results) -> Result<()> {
    write_json(dir, &format!("{stem}.json"), results)?;
    let csv = tailor_core::flat::to_csv(&results.runs);
    std::fs::write(dir.join(format!("{stem}.csv")), csv)?;
    let path = dir.join(format!("{stem}.parquet"));
    let parquet =
        tailor_report::parquet::to_parquet(&results.runs).with_context(|| format!("encoding {}", path.display()))?;
    std::fs::write(&path, parquet).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Write a shard's runs into `dir` as `results.shard-I-of-N.json`, returning its path.
fn write_shard(dir: &Path, shard: &ShardResults) -> Result<PathBuf> {
    let name = shard.shard.file_name();
    write_json(dir, &name, shard)?;
    Ok(dir.join(name))
}

/// Write `value` as pretty JSON and a final newline (the bytes of every results file) into
/// `dir/name`, creating `dir`.
fn write_json(dir: &Path, name: &str, value: &impl serde::Serialize) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(name);
    let json = serde_json::to_string_pretty(value)?;
    std::fs::write(&path, json + "\n").with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_eta_follows_requests_not_runs() {
        assert_eq!(eta_text(5.0, 0, 100), "eta after the first requests");
        assert_eq!(eta_text(10.0, 25, 100), "25 of 100 requests, eta 0m 30s");
        assert_eq!(eta_text(10.0, 100, 100), "100 of 100 requests, eta 0m 00s");
    }
}
