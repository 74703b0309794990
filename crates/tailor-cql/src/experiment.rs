//! `tailor cassandra experiment`: every policy, one after the other, against one real Cassandra
//! cluster with one node slowed, the same open-loop workload for each.
//!
//! Order and setup (choices):
//! - One cluster for every driver-side policy, with the dynamic snitch off, so the node a policy
//!   picks is the node that reads. The keys are loaded once, before the first run (every run
//!   uses the same seed, hence the same keys).
//! - `cassandra-dynamic-snitch` needs the server's snitch on: the cluster is restarted in the
//!   same directory (same data) with it on, after the other policies.
//! - The slowdown ([`crate::launch::slow`]) runs through every measured run, and is paused
//!   while the cluster restarts.
//! - A spec with `cluster.faults` has them injected in every run at their times
//!   ([`crate::faults`]) instead of the slowdown; a node killed by one is started again before
//!   the next run.

use crate::bench::{self, CqlBench, Policy};
use crate::launch::{CassandraOptions, LaunchError, LocalCassandra};
use std::path::Path;
use std::time::Duration;
use tailor_bench::{BenchConfig, BenchOutput};

/// How the slowed node is slowed.
#[derive(Clone, Copy, Debug)]
pub struct SlowNode {
    /// Node index.
    pub index: usize,
    /// Share of each period its JVM is stopped.
    pub duty: f64,
    /// Period of the duty cycle.
    pub period: Duration,
}

impl std::fmt::Display for SlowNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "node {} slowed: its JVM stopped {:.0} % of every {:?}", self.index, self.duty * 100.0, self.period)
    }
}

/// An experiment's setup.
pub struct Plan {
    /// The cluster.
    pub cluster: CassandraOptions,
    /// The policies, in run order (the server-snitch one always runs last).
    pub policies: Vec<Policy>,
    /// The bench every run uses (its `nodes` are filled in from the cluster).
    pub bench: BenchConfig,
    /// Fact polling period for tailor policies.
    pub poll: Option<Duration>,
    /// The slowed node, if any.
    pub slow: Option<SlowNode>,
}

/// Errors of an experiment.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// The cluster could not start or be slowed.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// A run could not run at all.
    #[error(transparent)]
    Bench(#[from] tailor_bench::BenchError),
}

/// Run every policy of `plan` in `dir` (the cluster's files); each finished run is handed to
/// `done` at once (so a caller can show and save it), in run order.
pub fn run(plan: &Plan, dir: &Path, mut done: impl FnMut(&Policy, BenchOutput)) -> Result<(), ExperimentError> {
    let (server_side, driver_side): (Vec<&Policy>, Vec<&Policy>) =
        plan.policies.iter().partition(|p| matches!(p, Policy::ServerSnitch));
    let faulted = !plan.bench.spec.cluster.faults.is_empty();
    if faulted && plan.slow.is_some() {
        return Err(LaunchError::Invalid(
            "--slow-duty: a run with `cluster.faults` slows its nodes by their faults; give --slow-duty 0".into(),
        )
        .into());
    }
    crate::faults::check(&plan.bench.spec, plan.cluster.nodes).map_err(LaunchError::Invalid)?;
    let mut loaded = false;
    for (snitch, policies) in [(false, driver_side), (true, server_side)] {
        if policies.is_empty() {
            continue;
        }
        let opts = CassandraOptions { dynamic_snitch: snitch, ..plan.cluster.clone() };
        let mut cluster = LocalCassandra::start(&opts, dir)?;
        let _slow = plan.slow.map(|s| cluster.slow(s.index, s.duty, s.period)).transpose()?;
        for policy in policies {
            let mut cfg = plan.bench.clone();
            cfg.nodes = cluster.contact_points();
            if loaded {
                cfg.load_keys = Some(0);
            }
            let opts = CqlBench { policy: policy.clone(), poll: plan.poll, pids: cluster.pids() };
            let out =
                if faulted { crate::faults::run(&mut cluster, cfg, &opts)? } else { bench::run_blocking(&cfg, &opts)? };
            loaded = true;
            done(policy, out);
        }
    }
    Ok(())
}
