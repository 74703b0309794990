//! The spec's faults (`cluster.faults`) injected into a live store cluster at their times in
//! the run, and the failover figures computed from the run's reads by the same code as the
//! simulator's (`tailor_spec::failover`).
//!
//! - `slow`: the node's emulated service runs `factor`× slower (`TAILOR.SET fluct_factor`,
//!   always on), then the spec's own fluctuation is set back;
//! - `gray`: the node's workers hang before every job (`TAILOR.SET hang 1`) while it answers
//!   heartbeats and every other message; copies to it time out at the coordinators;
//! - `down` / cold start: the node's process is killed with SIGKILL and started again at the
//!   end, with an empty row cache;
//! - `slow-coordinator`: every request the node coordinates waits `delay_ms` before its
//!   coordinator takes it (`TAILOR.SET coordinator_delay_ms`); its replica work is untouched.

use crate::live::LiveCluster;
use crate::live_sends::{SendSampler, Step};
use anyhow::{Context, Result};
use std::time::{Duration, Instant};
use tailor_bench::record::ReadRecord;
use tailor_bench::{BenchConfig, BenchOutput};
use tailor_core::results::Failover;
use tailor_core::time::{from_ms, Nanos};
use tailor_spec::failover::FailoverLog;
use tailor_spec::{Fault, FaultKind, Spec};

/// Sampling steps of the coordinators' counters per failover window.
const STEPS_PER_WINDOW: f64 = 5.0;

/// Run the bench on `cluster` with the spec's faults injected, and put the failover figures in
/// its run (`failover`; an injection that failed is an invalid reason).
pub fn run(cluster: &mut LiveCluster, mut cfg: BenchConfig) -> Result<BenchOutput> {
    let spec = cfg.spec.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    cfg.epoch = Some(tx);
    let bench = std::thread::spawn(move || tailor_bench::run(&cfg));
    let Ok(epoch) = rx.recv() else {
        // the bench ended before its open loop (an error): nothing to inject
        return join(bench);
    };
    let step = Duration::from_secs_f64(spec.cluster.failover.window_ms / STEPS_PER_WINDOW / 1e3);
    let sampler = SendSampler::start(cluster.metrics.clone(), epoch, step);
    let mut problems = Vec::new();
    for (at, fault, starts) in tailor_spec::timetable(&spec.cluster.faults) {
        std::thread::sleep((epoch + Duration::from_nanos(at)).saturating_duration_since(Instant::now()));
        if let Err(e) = apply(cluster, &spec, fault, starts) {
            eprintln!("warning: fault injection: {e:#}");
            problems.push(format!("fault injection failed: {e:#}"));
        }
    }
    let mut out = join(bench)?;
    let steps = sampler.finish();
    let run = &mut out.results.runs[0];
    run.failover = Some(failover(&spec, &steps, &out.reads));
    forgive_killed_coordinators(run, &spec, &out.reads);
    if !problems.is_empty() {
        run.valid = Some(false);
        run.invalid_reasons.extend(problems);
    }
    Ok(out)
}

fn join(bench: std::thread::JoinHandle<Result<BenchOutput, tailor_bench::BenchError>>) -> Result<BenchOutput> {
    match bench.join() {
        Ok(r) => Ok(r?),
        Err(_) => anyhow::bail!("the load generator panicked"),
    }
}

/// Start (`starts`) or end fault `f` on its node.
fn apply(cluster: &mut LiveCluster, spec: &Spec, f: &Fault, starts: bool) -> Result<()> {
    let node = f.server;
    match (f.kind, starts) {
        (FaultKind::Slow, true) => {
            cluster.set_knob(node, "fluct_period_ms", "0")?;
            cluster.set_knob(node, "fluct_factor", &f.slow_factor().to_string())
        }
        (FaultKind::Slow, false) => {
            let mut e = tailor_store::config::EmulationConfig::default();
            crate::live::emulate(spec, &mut e);
            cluster.set_knob(node, "fluct_factor", &e.fluct_factor.to_string())?;
            cluster.set_knob(node, "fluct_period_ms", &e.fluct_period_ms.to_string())
        }
        (FaultKind::Gray, starts) => cluster.set_knob(node, "hang", if starts { "1" } else { "0" }),
        (FaultKind::Down, true) => cluster.kill(node),
        (FaultKind::Down, false) => cluster.restart(node),
        (FaultKind::SlowCoordinator, starts) => {
            let delay = if starts { f.coordinator_delay_ms() } else { 0.0 };
            cluster.set_knob(node, "coordinator_delay_ms", &delay.to_string())
        }
    }
    .with_context(|| format!("{} fault on node {node}", f.kind.name()))
}

/// Whether read `r` was coordinated by a node while the spec had it down.
fn coordinator_down(spec: &Spec, r: &ReadRecord) -> bool {
    spec.cluster.faults.iter().any(|f| {
        f.kind == FaultKind::Down
            && f.server == r.node as usize
            && (from_ms(f.start_ms)..from_ms(f.end_ms)).contains(&r.intended)
    })
}

/// Reads that failed at a coordinator killed under them (in flight when it died and failing again
/// when resent there; the bench sends the rest through another node) are the injection's doing, not the strategy's: they leave
/// the validity rule's error count (kept as `coordinator_down_errors`) and the run is judged
/// again.
fn forgive_killed_coordinators(run: &mut tailor_core::results::RunResult, spec: &Spec, reads: &[ReadRecord]) {
    let warmup = from_ms(spec.workload.warmup_ms);
    let killed = reads.iter().filter(|r| r.failed && r.intended >= warmup && coordinator_down(spec, r)).count();
    let forgiven = (killed as u64).min(run.errors_besides_timeouts());
    if forgiven > 0 {
        run.errors -= forgiven;
        run.extra.insert("coordinator_down_errors".into(), forgiven as f64);
        tailor_bench::validity::apply(run);
    }
}

/// The failover figures of a live run: copies per replica from the sampled counters, reads from
/// the bench. Reads coordinated by a node while it is down are left out: they fail at the
/// connection whatever the replica selection does (the simulator's coordinators are clients
/// and never go down). Only those in flight when it died, and failing again when resent there,
/// are there: the bench sends the rest through another coordinator.
fn failover(spec: &Spec, steps: &[Step], reads: &[ReadRecord]) -> Failover {
    let mut log = FailoverLog::new(spec).coordinated_by(spec.cluster.servers);
    let faulty = |t: Nanos| {
        spec.cluster
            .faults
            .iter()
            .filter(|f| !f.on_coordinator())
            .find(|f| (from_ms(f.start_ms)..from_ms(f.end_ms)).contains(&t))
            .map(|f| f.server)
    };
    for s in steps {
        for (replica, &n) in s.sent.iter().enumerate() {
            (0..n).for_each(|_| log.sent(s.at, replica as u32));
        }
        // the coordinators count timeouts, not their replica: the faulty one is blamed, at the
        // time the copy was sent
        let sent = s.at.saturating_sub(from_ms(spec.cluster.failover.timeout_ms));
        if let Some(server) = faulty(sent) {
            (0..s.timeouts).for_each(|_| log.timed_out(sent, server as u32));
        }
    }
    for r in reads.iter().filter(|r| !coordinator_down(spec, r)) {
        log.read(r.intended, r.latency, r.failed);
        log.coordinated(r.intended, r.node);
    }
    log.finish(spec, spec.cluster.servers, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        let mut s = Spec::default();
        s.cluster.servers = 3;
        s.workload.warmup_ms = 500.0;
        s.cluster.faults =
            vec![Fault { kind: FaultKind::Down, server: 0, start_ms: 1000.0, end_ms: 2000.0, ..Fault::default() }];
        s
    }

    #[test]
    fn edges_come_in_time_order_ends_before_starts_at_one_time() {
        let a = Fault { start_ms: 100.0, end_ms: 200.0, ..Fault::default() };
        let b = Fault { server: 1, start_ms: 200.0, end_ms: 300.0, ..Fault::default() };
        let faults = [b, a];
        let e = tailor_spec::timetable(&faults);
        let order: Vec<(Nanos, usize, bool)> = e.iter().map(|&(t, f, s)| (t, f.server, s)).collect();
        assert_eq!(
            order,
            [
                (from_ms(100.0), 0, true),
                (from_ms(200.0), 0, false),
                (from_ms(200.0), 1, true),
                (from_ms(300.0), 1, false)
            ]
        );
    }

    #[test]
    fn figures_come_from_sampled_sends_and_the_bench_reads() {
        let spec = spec();
        // every 20 ms, 10 copies: a third each to the three replicas until the fault, then none
        // to replica 0 after 200 ms of it
        let steps: Vec<Step> = (0..150)
            .map(|i| {
                let at = from_ms(i as f64 * 20.0);
                let shed = at >= from_ms(1200.0) && at < from_ms(2000.0);
                Step { at, sent: if shed { vec![0, 5, 5] } else { vec![4, 3, 3] }, timeouts: u64::from(i == 60) }
            })
            .collect();
        let read = |ms: u64, lat: u64, node: u32, failed: bool| ReadRecord {
            intended: ms * 1_000_000,
            latency: lat * 1_000_000,
            node,
            failed,
        };
        let mut reads: Vec<ReadRecord> = (0..3000).map(|ms| read(ms, 2, 1, false)).collect();
        reads.push(read(1100, 5, 0, true)); // coordinated by the dead node: left out
        reads.push(read(1150, 1000, 2, true)); // failed at its replica: counted
        let f = failover(&spec, &steps, &reads);
        let o = &f.faults[0];
        // the 100 ms window from 1,150 ms holds two steps at 0.4 and three at 0: 0.16, below
        // half the fair share (1/6) for good
        assert_eq!(o.shed_ms, Some(150.0), "{o:?}");
        assert_eq!(o.failed, 1);
        assert_eq!(o.timeouts, 0, "the timeout counted at 1.2 s was sent at 0.2 s, before the fault");
        assert_eq!(o.p99_before_ms, 2.0);
        assert!(!f.timeline.is_empty());
    }
}
