//! The simulator's twin of a Cassandra experiment: the same cluster, workload and slowed node as
//! a `tailor sim` spec, its service and network model calibrated from the cluster's own figures,
//! so `tailor report` overlays the simulated runs on the measured ones.
//!
//! Choices (docs/cassandra.md):
//! - Service time: exponential, with the unslowed nodes' mean read service time over the run
//!   (`extra.node<i>_read_service_ms`, Little's law over ReadStage) as its mean; without it,
//!   Cassandra's `local_read_latency.p50th_ms` as its median. Workers: Cassandra's
//!   `concurrent_reads` (32).
//! - Network: one way, half of what the driver's median read takes beyond that local read.
//! - One coordinator (the one driver process chooses every replica), reads at ONE, writes at ALL,
//!   blind strategies (the estimates the live policies have, not the simulator's truth).
//! - Policies without a selector of their own are simulated by their closest one ([`sim_twin`]).

use crate::bench::Policy;
use crate::experiment::Plan;
use tailor_core::results::RunResult;
use tailor_spec::{ArrivalKind, Consistency, ServiceModel, SlowServer, Spec, SpecError};

/// Cassandra's default `concurrent_reads`: the reads a node executes at once.
pub const CONCURRENT_READS: usize = 32;

/// What the cluster measured that the simulator is calibrated with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// Median local read time of the unslowed nodes, in ms.
    pub service_p50_ms: f64,
    /// Median read latency at the driver, in ms.
    pub client_p50_ms: f64,
}

impl Calibration {
    /// From a finished run: the mean over the nodes other than `slowed` of each node's median
    /// local read time (its `extra.node<i>_read_service_ms` mean times ln 2, the median of an
    /// exponential with that mean; else its `extra.node<i>_local_read_p50_ms`), and the run's
    /// median read latency. When no node reported a local time (Cassandra's table may show 0),
    /// the driver's median stands for the service time and the network delay is 0. `None` when
    /// the run measured no read.
    pub fn from_run(run: &RunResult, nodes: usize, slowed: Option<usize>) -> Option<Calibration> {
        let extra = |i: usize, name: &str| run.extra.get(&format!("node{i}_{name}")).copied().filter(|&v| v > 0.0);
        let p50s: Vec<f64> = (0..nodes)
            .filter(|&i| Some(i) != slowed)
            .filter_map(|i| {
                let from_mean = extra(i, "read_service_ms").map(|mean| mean * std::f64::consts::LN_2);
                from_mean.or_else(|| extra(i, "local_read_p50_ms"))
            })
            .collect();
        let client_p50_ms = run.read_latency_ms.p50;
        let service_p50_ms = if p50s.is_empty() { client_p50_ms } else { p50s.iter().sum::<f64>() / p50s.len() as f64 };
        (service_p50_ms > 0.0).then_some(Calibration { service_p50_ms, client_p50_ms })
    }

    /// Mean of the exponential service time whose median is the measured one.
    pub fn service_mean_ms(&self) -> f64 {
        self.service_p50_ms / std::f64::consts::LN_2
    }

    /// One-way network delay: half of the driver's median beyond the local read, at least 0.
    pub fn network_delay_ms(&self) -> f64 {
        ((self.client_p50_ms - self.service_p50_ms) / 2.0).max(0.0)
    }
}

/// The simulator's selector for a live policy: itself for a tailor selector, the driver's replica
/// shuffle as `random`, and `dynamic-snitch` for the two latency-aware policies that have no
/// selector of their own (the driver's latency awareness, Cassandra's server-side snitch).
pub fn sim_twin(policy: &Policy) -> &str {
    match policy {
        Policy::Tailor(s) => s,
        Policy::DriverDefault => "random",
        Policy::DriverLatencyAware | Policy::ServerSnitch => "dynamic-snitch",
    }
}

/// The spec the simulator runs for `plan`, calibrated with `cal`; named and seeded like the
/// live runs so the report pairs the two files.
pub fn sim_spec(plan: &Plan, cal: &Calibration) -> Result<Spec, SpecError> {
    let b = &plan.bench;
    let mut spec = b.spec.clone();
    spec.sweep.clear();
    spec.seeds = vec![b.seed.or_else(|| spec.seeds.first().copied()).unwrap_or(1)];
    let c = &mut spec.cluster;
    c.servers = plan.cluster.nodes;
    c.clients = 1;
    c.vnodes = 1;
    c.workers = CONCURRENT_READS;
    c.network_delay_ms = round3(cal.network_delay_ms());
    c.read_repair = 0.0;
    c.write_consistency = Consistency::All;
    c.service.model = ServiceModel::Exponential;
    c.service.mean_ms = round3(cal.service_mean_ms()).max(0.001);
    c.fluctuation.interval_ms = 0.0;
    c.cache.capacity = 0;
    c.omniscient = false;
    c.speculative_retry = "none".into();
    c.slow_servers = plan
        .slow
        .iter()
        .map(|s| SlowServer { server: s.index, duty: s.duty, period_ms: s.period.as_secs_f64() * 1e3 })
        .collect();
    let w = &mut spec.workload;
    w.arrival = ArrivalKind::Poisson;
    if let Some(rate) = b.rate {
        w.rate = rate;
    }
    if let (Some(d), true) = (b.duration, w.rate > 0.0) {
        w.requests = (w.rate * d.as_secs_f64()).round().max(1.0) as u64;
    }
    if let Some(warmup) = b.warmup {
        w.warmup_ms = warmup.as_secs_f64() * 1e3;
    }
    let mut selectors: Vec<String> = Vec::new();
    for twin in plan.policies.iter().map(sim_twin) {
        if !selectors.iter().any(|s| s == twin) {
            selectors.push(twin.to_string());
        }
    }
    spec.compare.selectors = selectors;
    spec.compare.locals = vec!["fcfs".into()];
    spec.validate()?;
    Ok(spec)
}

/// Three decimals: the spec text shows calibrated figures, not float noise.
fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

/// The simulated runs under the live runs' names: for each policy of `plan`, its twin's run with
/// the policy's label and the live runs' local label (`cassandra`: its read stage is FCFS, as
/// simulated), so each live run has its simulated line.
pub fn relabel(plan: &Plan, sim_runs: &[RunResult], local: &str) -> Vec<RunResult> {
    plan.policies
        .iter()
        .filter_map(|p| {
            let mut run = sim_runs.iter().find(|r| r.selector == sim_twin(p))?.clone();
            run.selector = p.label();
            run.local = local.to_string();
            Some(run)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::SlowNode;
    use crate::launch::CassandraOptions;
    use std::time::Duration;
    use tailor_bench::BenchConfig;

    fn plan() -> Plan {
        let spec = Spec::default().with_overrides(&["name=\"live-cassandra\"", "seeds=[7]"]).unwrap();
        let mut bench = BenchConfig::new(Vec::new(), spec);
        bench.rate = Some(400.0);
        bench.duration = Some(Duration::from_secs(10));
        bench.warmup = Some(Duration::from_secs(2));
        let names =
            ["driver-default", "driver-latency-aware", "lor", "c3", "dynamic-snitch", "cassandra-dynamic-snitch"];
        Plan {
            cluster: CassandraOptions { nodes: 3, ..Default::default() },
            policies: names.iter().map(|n| Policy::parse(n).unwrap()).collect(),
            bench,
            poll: Some(Duration::from_millis(100)),
            slow: Some(SlowNode { index: 2, duty: 0.5, period: Duration::from_millis(100) }),
        }
    }

    fn calibration() -> Calibration {
        let mut run = RunResult::default();
        run.read_latency_ms.p50 = 1.2;
        for (i, p50) in [0.3, 0.5, 9.0].into_iter().enumerate() {
            run.extra.insert(format!("node{i}_local_read_p50_ms"), p50);
        }
        Calibration::from_run(&run, 3, Some(2)).unwrap()
    }

    #[test]
    fn calibration_leaves_the_slowed_node_out() {
        let cal = calibration();
        assert_eq!(cal.service_p50_ms, 0.4);
        assert!((cal.network_delay_ms() - 0.4).abs() < 1e-9);
        assert!(Calibration::from_run(&RunResult::default(), 3, None).is_none());
        let mut only_driver = RunResult::default();
        only_driver.read_latency_ms.p50 = 1.5;
        let cal = Calibration::from_run(&only_driver, 3, Some(2)).unwrap();
        assert_eq!((cal.service_p50_ms, cal.network_delay_ms()), (1.5, 0.0));
    }

    #[test]
    fn a_measured_mean_service_time_is_preferred_to_the_histogram() {
        let mut run = RunResult::default();
        run.read_latency_ms.p50 = 1.2;
        run.extra.insert("node0_local_read_p50_ms".into(), 0.0);
        run.extra.insert("node0_read_service_ms".into(), 0.5 / std::f64::consts::LN_2);
        run.extra.insert("node1_local_read_p50_ms".into(), 0.3);
        let cal = Calibration::from_run(&run, 2, None).unwrap();
        assert!((cal.service_p50_ms - 0.4).abs() < 1e-9, "node 0 by its mean, node 1 by its p50: {cal:?}");
        assert!((cal.service_mean_ms() - 0.4 / std::f64::consts::LN_2).abs() < 1e-9);
    }

    #[test]
    fn the_twin_spec_is_the_experiment_and_runs_in_the_simulator() {
        let spec = sim_spec(&plan(), &calibration()).unwrap();
        let text = spec.to_toml();
        let back = Spec::from_toml(&text).unwrap();
        assert_eq!(back, spec, "the spec text written is the spec run");
        let c = &back.cluster;
        assert_eq!((c.servers, c.clients, c.replication, c.workers), (3, 1, 3, CONCURRENT_READS));
        assert_eq!(c.slow_servers, vec![SlowServer { server: 2, duty: 0.5, period_ms: 100.0 }]);
        assert_eq!((back.workload.requests, back.workload.rate, back.workload.warmup_ms), (4000, 400.0, 2000.0));
        assert_eq!(back.seeds, vec![7]);
        assert_eq!(back.compare.selectors, ["random", "dynamic-snitch", "lor", "c3"]);

        let plans = tailor_spec::expand(&back).unwrap();
        let outs = tailor_sim::run_all(&plans, None, &|_, _| {}).unwrap();
        let runs: Vec<RunResult> = outs.into_iter().map(|o| o.result).collect();
        let named = relabel(&plan(), &runs, "cassandra");
        let labels: Vec<&str> = named.iter().map(|r| r.selector.as_str()).collect();
        assert_eq!(
            labels,
            ["driver-default", "driver-latency-aware", "lor", "c3", "dynamic-snitch", "cassandra-dynamic-snitch"]
        );
        assert!(named.iter().all(|r| r.local == "cassandra" && r.read_latency_ms.count > 3000));
        let p99 = |label: &str| named.iter().find(|r| r.selector == label).unwrap().read_latency_ms.p99;
        assert!(p99("driver-default") > 20.0, "a third of the reads meet a 50 ms stop: {}", p99("driver-default"));
    }
}
