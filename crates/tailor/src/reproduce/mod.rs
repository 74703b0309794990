//! `tailor reproduce`: every source's headline claims run in the simulator and judged, theirs
//! beside ours. `claims.rs` holds the data, `verdict.rs` the rule, `page.rs` the table and the
//! HTML page.

pub mod claims;
pub mod derived;
pub mod page;
pub mod verdict;

use anyhow::{Context, Result};
use claims::{Claim, ClaimsFile, Setup, Verdict};
use serde::Serialize;
use std::collections::BTreeMap;
use tailor_core::results::Results;
use tailor_spec::{expand, presets, RunPlan};
use verdict::Outcome;

/// A claim and what it came to (or why it could not be judged).
#[derive(Debug, Serialize)]
pub struct Judged {
    /// The claim as stated in the claims file.
    pub claim: Claim,
    /// Its outcome.
    pub outcome: Result<Outcome, String>,
    /// The claim's `shows` fields with their values in its setup's effective spec.
    pub shown: Vec<(String, String)>,
}

impl Judged {
    /// The verdict, `None` when the claim could not be judged.
    pub fn verdict(&self) -> Option<Verdict> {
        self.outcome.as_ref().ok().map(|o| o.verdict)
    }

    /// Whether the verdict is worse than the one the project claims.
    pub fn regressed(&self) -> bool {
        self.verdict().is_none_or(|v| v < self.claim.expected)
    }
}

/// The plans of every setup the claims need, in claim order, with the spec each expands.
pub fn plan_setups(file: &ClaimsFile, claims: &[&Claim], quick: bool) -> Result<Vec<(String, Vec<RunPlan>)>> {
    let mut names: Vec<&str> = Vec::new();
    for name in claims.iter().flat_map(|c| c.setups()) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let setup = &file.setup[name];
            let spec = setup_spec(setup, quick).with_context(|| format!("setup `{name}`"))?;
            // a curated setup with a warning measures something else than its claims say
            if let Some(w) = tailor_spec::lint::lint(&spec, &setup.set).first() {
                anyhow::bail!("setup `{name}`: {w}");
            }
            let plans = expand(&spec)?;
            Ok((name.to_string(), plans))
        })
        .collect()
}

fn setup_spec(setup: &Setup, quick: bool) -> Result<tailor_spec::Spec> {
    let mut sets = setup.set.clone();
    if quick {
        sets.extend(setup.quick.iter().cloned());
    }
    Ok(presets::preset(&setup.preset)?.with_overrides(&sets)?)
}

/// Judge each claim on the results of its setup.
pub fn judge_all(claims: &[&Claim], results: &BTreeMap<String, Results>) -> Vec<Judged> {
    claims
        .iter()
        .map(|&c| {
            let runs = |side: &claims::Side| results[c.setup_of(side)].runs.as_slice();
            let b_runs = c.b.as_ref().map_or(&[][..], runs);
            let outcome = verdict::judge(c, runs(&c.a), b_runs).map_err(|e| format!("{e:#}"));
            let shown = shown(&c.shows, &results[&c.setup].spec);
            Judged { claim: c.clone(), outcome, shown }
        })
        .collect()
}

/// Each dotted path's value in the effective spec `spec` (TOML text), or "unset".
fn shown(paths: &[String], spec: &str) -> Vec<(String, String)> {
    let spec: Option<toml::Value> = toml::from_str(spec).ok();
    paths
        .iter()
        .map(|path| {
            let value = path.split('.').try_fold(spec.as_ref(), |v, key| Some(v?.get(key)));
            let text = match value.flatten() {
                Some(toml::Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => "unset".into(),
            };
            (path.clone(), text)
        })
        .collect()
}
