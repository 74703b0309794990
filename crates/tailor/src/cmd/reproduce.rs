//! `tailor reproduce [PAPER|all]`: run each source's headline claims in the simulator and print
//! theirs beside ours, with a verdict; exits non-zero when a verdict is worse than the one the
//! project claims in `claims.toml`.

use super::sim::{eta_text, progress_bar, write_results_named};
use crate::reproduce::{self, claims::ClaimsFile, page};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `tailor reproduce`.
#[derive(clap::Args)]
pub struct ReproduceArgs {
    /// A source (c3, tap, heron, europar, hector) or `all`.
    #[arg(default_value = "all")]
    paper: String,
    /// A smoke run (the CI check): fewer requests, and fewer seeds for most setups, so its
    /// figures are noisier than the full run's and a verdict may differ from it; the claims seen
    /// flipping run with enough seeds in both that they no longer do.
    #[arg(long)]
    quick: bool,
    /// A claims file instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    claims: Option<PathBuf>,
    /// Output directory (default: tailor-out/reproduce).
    #[arg(long)]
    out: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

/// Run the claims, print the table, write the page and the results.
pub fn run(args: ReproduceArgs) -> Result<()> {
    let text = match &args.claims {
        Some(p) => std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
        None => reproduce::claims::BUILT_IN.to_string(),
    };
    let file = ClaimsFile::parse(&text)?;
    let claims = file.select(&args.paper)?;
    let setups = reproduce::plan_setups(&file, &claims, args.quick)?;
    let runs: usize = setups.iter().map(|(_, p)| p.len()).sum();
    let requests: u64 = setups.iter().flat_map(|(_, p)| p).map(|p| p.spec.workload.requests).sum();
    eprintln!("{} claims, {} setups, {runs} runs, {requests} requests", claims.len(), setups.len());
    if args.quick {
        eprintln!("smoke run (--quick): fewer requests and seeds than the full run; its verdicts may differ from `tailor reproduce {}`'s", args.paper);
    }
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("tailor-out/reproduce"));
    let bar = progress_bar(args.quiet, runs as u64);
    let started = Instant::now();
    let mut results = BTreeMap::new();
    let mut requests_before = 0;
    for (name, plans) in &setups {
        let base = bar.position();
        let mut outputs = tailor_sim::run_all(plans, None, &|done, done_requests| {
            bar.set_position(base + done);
            bar.set_message(eta_text(started.elapsed().as_secs_f64(), requests_before + done_requests, requests));
        })?;
        requests_before += plans.iter().map(|p| p.spec.workload.requests).sum::<u64>();
        reproduce::derived::annotate(plans, &mut outputs);
        let r = tailor_sim::results(&plans[0].spec, &outputs);
        write_results_named(&out.join("setups").join(name), "results", &r)?;
        results.insert(name.clone(), r);
    }
    bar.finish_and_clear();
    let judged = reproduce::judge_all(&claims, &results);
    print!("{}", page::table(&judged));
    // the statements not reproduced are counted only when every source is asked for
    let missing = if args.paper.eq_ignore_ascii_case("all") { &file.not_reproduced[..] } else { &[] };
    println!("{} claims: {}", judged.len(), page::summary(&judged, missing, ("", "")));
    if args.quick {
        println!("(smoke run: --quick's figures are noisier than the full run's; the verdicts the project stands by come from `tailor reproduce {}`)", args.paper);
    }
    std::fs::write(out.join("reproduce.html"), page::html(&judged, missing, args.quick))?;
    std::fs::write(out.join("reproduce.json"), serde_json::to_string_pretty(&judged)? + "\n")?;
    eprintln!(
        "{requests} requests in {:.1} s; page {}, results under {}",
        started.elapsed().as_secs_f64(),
        out.join("reproduce.html").display(),
        out.join("setups").display()
    );
    let regressed: Vec<&str> = judged.iter().filter(|j| j.regressed()).map(|j| j.claim.id.as_str()).collect();
    if !regressed.is_empty() {
        bail!("{} claim(s) worse than the project claims: {}", regressed.len(), regressed.join(", "));
    }
    Ok(())
}
