//! From `tailor compare`'s arguments to the spec every pair runs with: the base spec (a preset
//! or file), the trace and its replayed prefix, the cluster shape, seeds and the lower bound's
//! instance size. Bad arguments are refused here, each naming its flag.

use super::pairs::{self, Offers, Skipped};
use crate::cmd::compare::CompareArgs;
use crate::trace_summary::TraceSummary;
use anyhow::{bail, Context, Result};
use tailor_core::workload::trace::{Trace, TraceRecord};
use tailor_spec::{ArrivalKind, Spec};

/// Largest instance the lower bound is solved on in a comparison (it is solved once per run).
pub const MAX_BOUND_REQUESTS: usize = 5000;

/// Everything a comparison runs with.
pub struct Setup {
    /// The spec of every run (its `compare` lists the selectors and locals that run).
    pub spec: Spec,
    /// The replayed requests (arrival times divided by `--speedup`), when a trace is replayed.
    pub records: Option<Vec<TraceRecord>>,
    /// The replayed part of the trace, summarised.
    pub summary: Option<TraceSummary>,
    /// Pairs that cannot run, with why.
    pub skipped: Vec<Skipped>,
    /// Why the lower bound is not computed, when it is not.
    pub bound_why_not: Option<String>,
}

/// Check the arguments and build the setup.
pub fn prepare(args: &CompareArgs) -> Result<Setup> {
    check_args(args)?;
    let base = args.spec.as_deref().unwrap_or("demo");
    let mut spec = tailor_spec::load(base, &[] as &[&str]).with_context(|| format!("spec `{base}`"))?;
    spec.name = format!("compare-{}", stem(args.trace.as_deref().unwrap_or(base)));
    spec.seeds = args.seeds.clone();
    if let Some(n) = args.servers {
        spec.cluster.servers = n;
    }
    if let Some(k) = args.replication {
        spec.cluster.replication = k;
    }
    let trace = match &args.trace {
        Some(path) => Some(replay(&mut spec, path, args)?),
        None => None,
    };
    if let Some(n) = args.requests {
        spec.workload.requests = n;
    }
    if let Some(w) = args.warmup_ms {
        spec.workload.warmup_ms = w;
    }
    let spec = spec.with_overrides(&args.sets)?;
    let replayed: Option<Trace> = trace.map(|mut t| {
        t.records.truncate(spec.workload.requests as usize);
        t
    });
    let offers = Offers {
        oracle: spec.workload.oracle,
        sizes: replayed.as_ref().is_none_or(|t| t.records.iter().any(|r| r.size > 0)),
    };
    let (run, skipped) = pairs::every(offers);
    if run.is_empty() {
        bail!("no registered pair can run on this workload: {}", skipped.first().map_or("", |s| s.reason.as_str()));
    }
    let mut spec = spec;
    spec.compare.selectors = dedup(run.iter().map(|(s, _)| s.clone()));
    spec.compare.locals = dedup(run.iter().map(|(_, l)| l.clone()));
    let bound_why_not = configure_bound(&mut spec, args.bound_requests, replayed.as_ref());
    let summary = replayed.as_ref().map(|t| TraceSummary::of(args.trace.as_deref().unwrap_or_default(), t));
    let records = replayed.map(|t| scaled(t.records, args.speedup));
    Ok(Setup { spec, records, summary, skipped, bound_why_not })
}

/// Refuse what the spec's own checks would report under a field name the user never typed.
fn check_args(args: &CompareArgs) -> Result<()> {
    if let Some(path) = &args.trace {
        if !std::path::Path::new(path).is_file() {
            bail!("--trace {path}: no such file");
        }
    } else if args.speedup != 1.0 {
        bail!("--speedup scales a trace's arrival times: it needs --trace");
    }
    if !(args.speedup.is_finite() && args.speedup > 0.0) {
        bail!("--speedup must be a positive number, got {}", args.speedup);
    }
    if args.servers == Some(0) {
        bail!("--servers must be at least 1");
    }
    if args.replication == Some(0) {
        bail!("--replication must be at least 1");
    }
    if let (Some(n), Some(k)) = (args.servers, args.replication) {
        if k > n {
            bail!("--replication {k} is more than --servers {n}: each key needs {k} distinct servers");
        }
    }
    if args.seeds.is_empty() {
        bail!("--seeds needs at least one seed");
    }
    if let Some(s) = args.seeds.iter().enumerate().find_map(|(i, s)| args.seeds[..i].contains(s).then_some(s)) {
        bail!("--seeds lists seed {s} twice: the interval would count one run as two");
    }
    if args.requests == Some(0) {
        bail!("--requests must be at least 1");
    }
    if args.bound_requests > MAX_BOUND_REQUESTS {
        bail!(
            "--bound-requests {} is above {MAX_BOUND_REQUESTS}, the largest instance compare solves once per run \
             (`tailor bound` solves one larger instance on its own)",
            args.bound_requests
        );
    }
    Ok(())
}

/// Point the spec at the trace and read it; by default every request of the trace is replayed,
/// none of it as warm-up.
fn replay(spec: &mut Spec, path: &str, args: &CompareArgs) -> Result<Trace> {
    spec.workload.arrival = ArrivalKind::Trace;
    spec.workload.trace = path.to_string();
    spec.workload.trace_format = args.format;
    spec.workload.warmup_ms = 0.0;
    let trace = tailor_spec::trace::load(&spec.workload).map_err(|e| anyhow::anyhow!("--trace {e}"))?;
    if trace.records.is_empty() {
        bail!("--trace {path}: no read or write to replay");
    }
    spec.workload.requests = trace.records.len() as u64;
    Ok(trace)
}

/// Enable the bound on the first `wanted` requests, or say why it is not computed.
fn configure_bound(spec: &mut Spec, wanted: usize, trace: Option<&Trace>) -> Option<String> {
    if wanted == 0 {
        return Some("not asked for (--bound-requests 0)".into());
    }
    let m = wanted.min(spec.workload.requests as usize);
    if let Some(t) = trace {
        if !t.records.iter().take(m).any(|r| r.op == tailor_core::model::Op::Read) {
            return Some(format!("the first {m} requests of the trace hold no read to bound"));
        }
    }
    spec.bound.enabled = true;
    spec.bound.requests = m;
    None
}

/// The records with arrival times divided by `speedup` (1: as in the trace).
fn scaled(mut records: Vec<TraceRecord>, speedup: f64) -> Vec<TraceRecord> {
    if speedup != 1.0 {
        for r in &mut records {
            r.time = (r.time as f64 / speedup).round() as u64;
        }
    }
    records
}

fn dedup(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// The file name without directories and extensions (`twitter-sample` of `a/twitter-sample.csv.zst`).
fn stem(path: &str) -> String {
    let name = std::path::Path::new(path).file_name().map_or(path.into(), |n| n.to_string_lossy().into_owned());
    name.split('.').next().unwrap_or(&name).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_scaling() {
        assert_eq!(stem("examples/traces/twitter-sample.csv.zst"), "twitter-sample");
        assert_eq!(stem("demo"), "demo");
        let r = TraceRecord { time: 1_000, key: 1, op: tailor_core::model::Op::Read, size: 1 };
        assert_eq!(scaled(vec![r], 4.0)[0].time, 250);
        assert_eq!(dedup(["a", "b", "a"].map(String::from).into_iter()), ["a", "b"]);
    }
}
