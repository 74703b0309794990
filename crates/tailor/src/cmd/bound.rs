//! `tailor bound`: the lower bound of an instance file, or of a spec's first requests.

use anyhow::{Context, Result};
use std::path::PathBuf;
use tailor_bound::{lower_bound, Backend, BoundOptions, Weighting};

/// Arguments of `tailor bound`.
#[derive(clap::Args)]
pub struct BoundArgs {
    /// An instance (`.json`: machines and requests with release_ms, processing_ms, weight,
    /// machines), or a preset / spec whose first run's first requests make the instance.
    input: String,
    /// Requests taken from the spec's first run (default: the spec's `bound.requests`).
    #[arg(long)]
    requests: Option<usize>,
    /// `flow` (w = 1) or `stretch` (w = 1/p); for instance files, re-weights the requests.
    #[arg(long, value_parser = parse_weighting)]
    weighting: Option<Weighting>,
    /// Feasibility solver: `max-flow` (default) or `highs` (needs a build with `--features highs`).
    #[arg(long, value_parser = parse_backend, default_value = "max-flow")]
    solver: Backend,
    /// Relative tolerance of the binary search.
    #[arg(long, default_value_t = 1e-4)]
    tolerance: f64,
    /// Override a spec field by its dotted path (spec inputs only).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Write the instance as JSON to this file.
    #[arg(long)]
    export: Option<PathBuf>,
}

fn parse_weighting(s: &str) -> Result<Weighting, String> {
    match s {
        "flow" => Ok(Weighting::Flow),
        "stretch" => Ok(Weighting::Stretch),
        _ => Err(format!("unknown weighting `{s}` (flow, stretch)")),
    }
}

/// Refuses `highs` here when this build lacks it, so the message names the flag the user typed
/// (the library's own error can only name its `backend` option field).
fn parse_backend(s: &str) -> Result<Backend, String> {
    match s {
        "max-flow" => Ok(Backend::MaxFlow),
        "highs" if !cfg!(feature = "highs") => Err("`--solver highs` needs a build with HiGHS \
             (cargo install --path crates/tailor --features highs); use `--solver max-flow`"
            .into()),
        "highs" => Ok(Backend::Highs),
        _ => Err(format!("unknown solver `{s}` (max-flow, highs)")),
    }
}

/// Compute and print the bound.
pub fn run(args: BoundArgs) -> Result<()> {
    let (inst, achieved) = tailor_sim::bound::bound_input(&args.input, &args.sets, args.requests, args.weighting)?;
    if let Some(path) = &args.export {
        std::fs::write(path, serde_json::to_string_pretty(&inst)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("instance written to {}", path.display());
    }
    let opts = BoundOptions { rel_tol: args.tolerance, backend: args.solver, ..BoundOptions::default() };
    let bound = lower_bound(&inst, &opts)?;
    println!("requests          {}", inst.requests.len());
    println!("machines          {}", inst.machines);
    println!("lower bound       {:.6}", bound.value);
    println!("relaxation upper  {:.6}", bound.upper);
    println!("feasibility tests {}", bound.lp_solves);
    println!("largest LP        {} variables", bound.variables);
    println!("solve time        {:.3} s ({:?})", bound.solve_seconds, args.solver);
    if let Some((selector, value)) = achieved {
        println!("{selector:<17} {value:.6} (max weighted flow), ratio {:.4}", value / bound.value);
    }
    Ok(())
}
