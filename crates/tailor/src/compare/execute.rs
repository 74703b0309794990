//! Running every pair × seed in the simulator on all cores, with progress on stderr as
//! `tailor sim` shows it. A pair whose runs fail is tried alone and, if it fails again, left
//! out with the simulator's error as its reason, so one pair cannot sink the comparison.

use super::pairs::Skipped;
use super::setup::Setup;
use crate::cmd::sim::eta_text;
use crate::progress::progress_bar;
use anyhow::Result;
use std::time::Instant;
use tailor_core::results::Results;
use tailor_spec::RunPlan;

/// The results of every run that ran, and the pairs that failed with their error.
pub fn run(setup: &Setup, quiet: bool) -> Result<(Results, Vec<Skipped>)> {
    let plans = tailor_spec::expand(&setup.spec)?;
    let total: u64 = plans.iter().map(|p| p.spec.workload.requests).sum();
    let bar = progress_bar(quiet, plans.len() as u64);
    let started = Instant::now();
    let trace = setup.records.as_deref();
    let progress = |runs: u64, done: u64| {
        bar.set_position(runs);
        bar.set_message(eta_text(started.elapsed().as_secs_f64(), done, total));
    };
    let outcome = match tailor_sim::run_all(&plans, trace, &progress) {
        Ok(outputs) => (outputs, Vec::new()),
        Err(_) => one_pair_at_a_time(&plans, trace),
    };
    bar.finish_and_clear();
    let (outputs, failed) = outcome;
    Ok((tailor_sim::results(&setup.spec, &outputs), failed))
}

/// Run each pair's seeds on their own, keeping the pairs that succeed.
fn one_pair_at_a_time(
    plans: &[RunPlan],
    trace: Option<&[tailor_core::workload::trace::TraceRecord]>,
) -> (Vec<tailor_sim::RunOutput>, Vec<Skipped>) {
    let mut outputs = Vec::new();
    let mut failed = Vec::new();
    let mut start = 0;
    while start < plans.len() {
        let same = |p: &RunPlan| p.selector == plans[start].selector && p.local == plans[start].local;
        let end = start + plans[start..].iter().take_while(|p| same(p)).count();
        match tailor_sim::run_all(&plans[start..end], trace, &|_, _| {}) {
            Ok(out) => outputs.extend(out),
            Err(e) => failed.push(Skipped {
                selector: plans[start].selector.clone(),
                local: plans[start].local.clone(),
                reason: format!("the simulator refused it: {e}"),
            }),
        }
        start = end;
    }
    (outputs, failed)
}
