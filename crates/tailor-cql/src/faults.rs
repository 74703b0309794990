//! The spec's faults (`cluster.faults`, the field every engine reads) injected into a local
//! Cassandra cluster at their times in a bench run:
//!
//! - `down` (alias `cold-start`): node `server` is killed with SIGKILL at `start_ms` and started
//!   again at `end_ms` in its own directory with its settings; it replays its commit log, rejoins
//!   the ring and serves once it answers CQL (`extra.node<i>_back_ms` says when, from time 0);
//! - `slow` with factor f: the node's JVM runs 1/f of every [`SLOW_PERIOD`] and is stopped the
//!   rest ([`crate::launch::slow`]). Unlike the store's emulation (which slows only the service
//!   of reads) this stops the whole JVM, so its gossip, its replies to other nodes and its
//!   driver heartbeats are slowed too;
//! - `gray` is refused: a node that answers gossip and heartbeats while its reads hang cannot
//!   be made from outside a JVM (a signal stops every thread alike).
//!
//! The run's failover section comes from the bench (`crate::failover`); a fault that could not
//! be injected makes the run invalid, as on the store.

use crate::bench::{self, CqlBench};
use crate::launch::slow::Slowdown;
use crate::launch::LocalCassandra;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tailor_bench::{BenchConfig, BenchError, BenchOutput};
use tailor_spec::{Fault, FaultKind, Spec};

/// Period of a `slow` fault's stop/continue duty cycle (as `tailor cassandra experiment`'s
/// `--slow-period-ms` default).
pub const SLOW_PERIOD: Duration = Duration::from_millis(100);

/// `Err` naming the field when the spec has a fault Cassandra cannot inject on `nodes` nodes.
pub fn check(spec: &Spec, nodes: usize) -> Result<(), String> {
    for (i, f) in spec.cluster.faults.iter().enumerate() {
        if f.kind == FaultKind::Gray {
            return Err(format!(
                "cluster.faults[{i}].kind: `gray` cannot be injected on Cassandra: a JVM cannot be made to hang \
                 its reads while it answers gossip and heartbeats from outside it (it runs in the simulator and \
                 on the store)"
            ));
        }
        if f.kind == FaultKind::SlowCoordinator {
            return Err(format!(
                "cluster.faults[{i}].kind: `slow-coordinator` cannot be injected on Cassandra: the driver's policy \
                 picks each read's coordinator among its replicas, and a JVM's coordinator work cannot be slowed \
                 apart from its replica work from outside it; a `slow` fault (the whole JVM stopped part of \
                 every 100 ms) is the slow coordinator there (it runs in the simulator and on the store)"
            ));
        }
        if f.server >= nodes {
            return Err(format!("cluster.faults[{i}].server: {} is not a node of this cluster (0..{nodes})", f.server));
        }
    }
    Ok(())
}

/// One fault's start or end, at its time in the run.
struct Edge<'a> {
    at: Duration,
    fault: &'a Fault,
    starts: bool,
}

/// Every fault's start and end in time order (at one time, ends first).
fn timetable(faults: &[Fault]) -> Vec<Edge<'_>> {
    let edges = tailor_spec::timetable(faults).into_iter();
    edges.map(|(at, fault, starts)| Edge { at: Duration::from_nanos(at), fault, starts }).collect()
}

/// Run the bench on `cluster` with the spec's faults injected at their times.
pub fn run(cluster: &mut LocalCassandra, mut cfg: BenchConfig, opts: &CqlBench) -> Result<BenchOutput, BenchError> {
    check(&cfg.spec, cluster.contact_points().len()).map_err(BenchError::Config)?;
    let spec = cfg.spec.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    cfg.epoch = Some(tx);
    let opts = opts.clone();
    let bench = std::thread::spawn(move || bench::run_blocking(&cfg, &opts));
    let mut injected = Injected::default();
    if let Ok(epoch) = rx.recv() {
        for e in timetable(&spec.cluster.faults) {
            std::thread::sleep((epoch + e.at).saturating_duration_since(Instant::now()));
            if let Err(why) = injected.apply(cluster, &e, epoch) {
                eprintln!("warning: fault injection: {why}");
                injected.problems.push(format!("fault injection failed: {why}"));
            }
        }
    }
    injected.slowed.clear(); // every JVM running again
    let mut out = bench.join().map_err(|_| BenchError::Config("the load generator panicked".into()))??;
    let run = &mut out.results.runs[0];
    for (node, ms) in injected.back {
        run.extra.insert(format!("node{node}_back_ms"), ms.round());
    }
    if !injected.problems.is_empty() {
        run.valid = Some(false);
        run.invalid_reasons.extend(injected.problems);
    }
    Ok(out)
}

/// What the injection did so far.
#[derive(Default)]
struct Injected {
    /// Running duty cycles by node.
    slowed: HashMap<usize, Slowdown>,
    /// When each restarted node answered again, ms from time 0.
    back: Vec<(usize, f64)>,
    /// Injections that failed.
    problems: Vec<String>,
}

impl Injected {
    /// Start or end one fault on its node.
    fn apply(&mut self, cluster: &mut LocalCassandra, e: &Edge, epoch: Instant) -> Result<(), String> {
        let node = e.fault.server;
        let what = |err: &dyn std::fmt::Display| format!("{} fault on node {node}: {err}", e.fault.kind.name());
        match (e.fault.kind, e.starts) {
            (FaultKind::Slow, true) => {
                let duty = 1.0 - 1.0 / e.fault.slow_factor();
                let slow = cluster.slow(node, duty, SLOW_PERIOD).map_err(|err| what(&err))?;
                self.slowed.insert(node, slow);
            }
            (FaultKind::Slow, false) => drop(self.slowed.remove(&node)),
            (FaultKind::Down, true) => cluster.kill(node),
            (FaultKind::Down, false) => {
                cluster.restart(node).map_err(|err| what(&err))?;
                self.back.push((node, epoch.elapsed().as_secs_f64() * 1e3));
            }
            (FaultKind::Gray, _) => return Err(what(&"gray faults cannot be injected on Cassandra")),
            (FaultKind::SlowCoordinator, _) => {
                return Err(what(&"slow-coordinator faults cannot be injected on Cassandra"))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(kind: FaultKind, server: usize, start_ms: f64, end_ms: f64) -> Fault {
        Fault { kind, server, start_ms, end_ms, ..Fault::default() }
    }

    #[test]
    fn gray_and_unknown_nodes_are_refused_naming_the_field() {
        let mut spec = Spec::default();
        spec.cluster.faults = vec![fault(FaultKind::Down, 0, 1.0, 2.0), fault(FaultKind::Gray, 1, 1.0, 2.0)];
        let e = check(&spec, 3).unwrap_err();
        assert!(e.starts_with("cluster.faults[1].kind") && e.contains("gossip"), "{e}");
        spec.cluster.faults = vec![fault(FaultKind::SlowCoordinator, 1, 1.0, 2.0)];
        let err = check(&spec, 3).unwrap_err();
        assert!(err.contains("cluster.faults[0].kind") && err.contains("slow-coordinator"), "{err}");
        spec.cluster.faults = vec![fault(FaultKind::Slow, 3, 1.0, 2.0)];
        assert!(check(&spec, 3).unwrap_err().starts_with("cluster.faults[0].server"));
        spec.cluster.faults = vec![fault(FaultKind::Slow, 2, 1.0, 2.0), fault(FaultKind::Down, 0, 1.0, 2.0)];
        assert_eq!(check(&spec, 3), Ok(()));
    }

    #[test]
    fn the_timetable_is_in_time_order_with_ends_first() {
        let faults = [fault(FaultKind::Slow, 1, 200.0, 300.0), fault(FaultKind::Down, 0, 100.0, 200.0)];
        let order: Vec<(u128, usize, bool)> =
            timetable(&faults).iter().map(|e| (e.at.as_millis(), e.fault.server, e.starts)).collect();
        assert_eq!(order, [(100, 0, true), (200, 0, false), (200, 1, true), (300, 1, false)]);
    }
}
