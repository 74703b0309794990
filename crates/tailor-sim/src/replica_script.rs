//! Scripted runs of one replica for the replica-side differential test: one sequence of jobs
//! (arrival time, read or write, exact size, the coordinator's tags and age, and the work each
//! takes) fed to a replica driver, recording every job it starts and every one it refuses.
//!
//! The work a job takes comes from the script, not from the driver, so two drivers that start
//! jobs alike finish them at the same times, and the first step that differs is where their
//! replica paths part. The simulator's driver ([`SimReplica`]) is its modelled server
//! (`server.rs`) driven the way the event loop drives it on a job's arrival and at its end; the
//! store's driver is its replica's decision step (`tailor-store`'s tests).

use crate::server::{Job, Server};
use tailor_core::coordinator::{SendKind, Ticket};
use tailor_core::local::{self, LocalConfig};
use tailor_core::model::{JobMeta, Tags};
use tailor_core::replica::{Arrival, ReplicaCore, ServiceEstimate};
use tailor_core::selector::Rng;
use tailor_core::time::{Nanos, US};
use tailor_core::{Op, RequestId};

/// Values above this many bytes are large (Héron's busy status) in scripted runs.
pub const LARGE: u64 = 20_000;

/// One job of the script, as it reaches the replica.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScriptedJob {
    /// When it arrives.
    pub at: Nanos,
    /// Read or write.
    pub op: Op,
    /// Its value's exact size in bytes.
    pub size: u64,
    /// The coordinator's tags (its oracle's size class may be wrong: the replica must keep it).
    pub tags: Tags,
    /// Its time at the coordinator before being sent.
    pub age: Nanos,
    /// The work it takes once started (the engine's real service time).
    pub work: Nanos,
}

/// A sequence of jobs for one replica and the service-time model both engines estimate with.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplicaScript {
    /// The jobs in arrival order.
    pub jobs: Vec<ScriptedJob>,
    /// The replica's service-time estimate (what orders size-aware local policies).
    pub estimate: ServiceEstimate,
}

/// What a replica did with a job.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// Job `job` of the script started at `at`, with the metadata the local policy saw.
    Start {
        /// When.
        at: Nanos,
        /// The job's index in the script.
        job: usize,
        /// Its metadata in the core (its id aside, which each engine numbers its own way).
        meta: JobMeta,
    },
    /// Job `job` was refused by the queue cap at `at`.
    Refused {
        /// When.
        at: Nanos,
        /// The job's index in the script.
        job: usize,
    },
}

/// A job a driver started: its index in the script and the id its core gave it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Started {
    /// The job's index in the script.
    pub job: usize,
    /// Its metadata in the driver's core.
    pub meta: JobMeta,
}

/// One engine's replica path, driven by a script.
pub trait ReplicaDriver {
    /// Job `job` (`j`, estimated at `service`) arrives at `now`: `None` when the replica refuses
    /// it, else the jobs the engine starts as a result, in order.
    fn arrive(&mut self, now: Nanos, job: usize, j: &ScriptedJob, service: Nanos) -> Option<Vec<Started>>;
    /// A started job ends at `now` after `work`: the jobs the engine starts as a result.
    fn finish(&mut self, now: Nanos, done: Started, work: Nanos) -> Vec<Started>;
}

impl ReplicaScript {
    /// `n` jobs from `seed` at about 1.2 times what `workers` can serve, in bursts (so queues
    /// build and a cap refuses): sizes from 10 B to 100 kB, a fifth of them writes, a fifth
    /// with a size class the coordinator's oracle got wrong, ages up to 300 µs, and work from
    /// half to twice the estimate.
    pub fn generate(seed: u64, n: usize, workers: usize) -> ReplicaScript {
        let estimate = ServiceEstimate { alpha_ns_per_byte: 10.0, beta_ns: 50_000.0 };
        let mut rng = Rng::new(seed, 0x5eed_4e91);
        let mean_gap = 200.0 * US as f64 / (1.2 * workers as f64);
        let mut at = 0;
        let jobs = (0..n)
            .map(|_| {
                // a third arrive together with the previous one
                if rng.below(3) != 0 {
                    at += (-(1.0 - rng.unit()).ln() * mean_gap * 1.5) as Nanos;
                }
                let size = (10.0 * 10f64.powf(4.0 * rng.unit())) as u64;
                let large = u8::from(size > LARGE);
                let size_class = if rng.below(5) == 0 { 1 - large } else { large };
                let tags =
                    Tags { priority: rng.below(3) as u8, size_class, flow: rng.below(4) as u16, ..Tags::default() };
                let work = (estimate.of(size) as f64 * (0.5 + 1.5 * rng.unit())) as Nanos;
                let op = if rng.below(5) == 0 { Op::Write } else { Op::Read };
                ScriptedJob { at, op, size, tags, age: rng.below(300) as Nanos * US, work: work.max(1) }
            })
            .collect();
        ReplicaScript { jobs, estimate }
    }

    /// Job `job`'s estimated processing time, as both engines compute it from its size.
    pub fn service(&self, job: usize) -> Nanos {
        self.estimate.of(self.jobs[job].size)
    }
}

/// Feed `script` to `driver`: arrivals in order and every started job's end after its work
/// (an end before an arrival at the same time; ends at the same time in start order).
pub fn run(script: &ReplicaScript, driver: &mut dyn ReplicaDriver) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut running: Vec<(Nanos, Started)> = Vec::new();
    let mut next = 0;
    loop {
        let end = running.iter().enumerate().min_by_key(|(_, (t, _))| *t).map(|(i, &(t, _))| (i, t));
        let arrival = script.jobs.get(next).map(|j| j.at);
        let (now, started) = match (end, arrival) {
            (None, None) => return steps,
            (Some((i, t)), a) if a.is_none_or(|a| t <= a) => {
                let (_, done) = running.remove(i);
                (t, driver.finish(t, done, script.jobs[done.job].work))
            }
            (_, a) => {
                let (job, a) = (next, a.expect("no end is due, so an arrival is"));
                next += 1;
                let Some(started) = driver.arrive(a, job, &script.jobs[job], script.service(job)) else {
                    steps.push(Step::Refused { at: a, job });
                    continue;
                };
                (a, started)
            }
        };
        for s in started {
            steps.push(Step::Start { at: now, job: s.job, meta: JobMeta { id: 0, ..s.meta } });
            running.push((now + script.jobs[s.job].work, s));
        }
    }
}

/// The simulator's replica path: one modelled server, admitted, started and finished as the
/// event loop does on a job's arrival (refused when its queue cap is reached, else admitted
/// with the copy's tags and age and the request's nominal time) and at a job's end.
pub struct SimReplica {
    server: Server,
}

impl SimReplica {
    /// A server running local policy `policy` (built with `seed`) on `workers` workers, with
    /// queue cap `max_queue`, as the simulator builds each of its servers.
    pub fn new(policy: &str, cfg: &LocalConfig, seed: u64, workers: usize, max_queue: Option<usize>) -> SimReplica {
        let queue = local::build::<Job>(policy, cfg, seed).expect("a known local policy");
        let mut core = ReplicaCore::new(0, queue, workers, LARGE);
        core.set_max_queue(max_queue);
        SimReplica { server: Server::new(core, 0) }
    }

    /// Fill idle workers from the local queue, as the event loop's `start_jobs` does.
    fn start_jobs(&mut self, now: Nanos) -> Vec<Started> {
        std::iter::from_fn(|| self.server.core.start(now))
            .map(|(meta, job)| Started { job: job.ticket.slot as usize, meta })
            .collect()
    }
}

impl ReplicaDriver for SimReplica {
    fn arrive(&mut self, now: Nanos, job: usize, j: &ScriptedJob, service: Nanos) -> Option<Vec<Started>> {
        if !self.server.core.admits() {
            return None;
        }
        let kind = if j.op == Op::Write { SendKind::Write } else { SendKind::Read };
        let ticket = Ticket { slot: job as u32, id: job as RequestId + 1 };
        let copy = Job { ticket, kind, tags: j.tags, age: j.age };
        let arrival = Arrival { id: copy.ticket.id, age: copy.age, service, size: j.size, tags: copy.tags };
        self.server.core.admit(now, arrival, copy);
        Some(self.start_jobs(now))
    }

    fn finish(&mut self, now: Nanos, done: Started, work: Nanos) -> Vec<Started> {
        self.server.core.finish(now, done.meta.id, work);
        self.start_jobs(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_queues_refuses_and_serves_every_admitted_job_once() {
        let script = ReplicaScript::generate(7, 300, 2);
        let steps = run(&script, &mut SimReplica::new("fcfs", &LocalConfig::default(), 1, 2, Some(4)));
        let refused = steps.iter().filter(|s| matches!(s, Step::Refused { .. })).count();
        let mut started: Vec<usize> =
            steps.iter().filter_map(|s| if let Step::Start { job, .. } = s { Some(*job) } else { None }).collect();
        assert!(refused > 0, "the script is heavy enough for a cap of 4 to refuse");
        assert_eq!(started.len() + refused, script.jobs.len(), "every job is started or refused");
        started.sort_unstable();
        started.dedup();
        assert_eq!(started.len() + refused, script.jobs.len(), "no job starts twice");
        let queued = steps.iter().any(|s| matches!(s, Step::Start { at, job, .. } if *at > script.jobs[*job].at));
        assert!(queued, "some job waited");
    }
}
