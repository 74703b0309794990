//! The replica-side differential test: one scripted sequence of jobs (reads and writes with the
//! coordinator's tags, ages, sizes, arrival times and the work each takes) drives the
//! simulator's replica path and the store's, for every local policy, with one worker and
//! several, with and without a queue cap; both must start the same jobs in the same order at
//! the same times with the same metadata, and refuse the same ones.
//!
//! The store's replica is threads on the real clock; its decisions are `Admission`'s, a step
//! function that takes the time. The store's driver here calls it as the threads do: a request
//! enters (refused, run inline on the caller, or queued with one idle worker woken), a worker
//! that finishes asks for the next job, an inline caller that finishes wakes a worker if jobs
//! wait. The simulator's driver is `tailor_sim::replica_script::SimReplica`, its modelled
//! server driven as its event loop drives it.
//!
//! The test is not vacuous: `lost_tags_or_ages_are_caught` feeds the store default tags (as its
//! internode writes once did) or no age, and the comparison parts for the policies that read
//! them.

use std::collections::HashSet;
use tailor_core::local::{self, LocalConfig, LOCALS};
use tailor_core::model::{JobMeta, Tags};
use tailor_core::time::Nanos;
use tailor_core::RequestId;
use tailor_sim::replica_script::{self, ReplicaDriver, ReplicaScript, ScriptedJob, SimReplica, Started, Step, LARGE};
use tailor_store::replica::{Admission, Entry, Incoming};

/// What the store's driver drops from what reaches it (the non-vacuity check).
#[derive(Clone, Copy, PartialEq)]
enum Loss {
    Nothing,
    Tags,
    Age,
}

/// The store's replica path: its decision step, driven as its worker threads and callers do.
struct StoreReplica {
    admission: Admission<usize>,
    /// Whether a request may run on the caller's thread (emulation off).
    inline: bool,
    /// Worker threads waiting for work (the store spawns one per worker slot).
    idle: usize,
    /// Jobs running on a caller's thread rather than a worker's.
    inline_jobs: HashSet<RequestId>,
    loss: Loss,
}

impl StoreReplica {
    fn new(policy: &str, seed: u64, workers: usize, max_queue: Option<usize>, inline: bool, loss: Loss) -> Self {
        let queue = local::build::<usize>(policy, &LocalConfig::default(), seed).expect("a known local policy");
        let mut admission = Admission::new(0, queue, workers, LARGE);
        if let Some(max) = max_queue {
            admission.set_max_queue(max);
        }
        StoreReplica { admission, inline, idle: workers, inline_jobs: HashSet::new(), loss }
    }

    /// `notify_one`: an idle worker wakes and asks the core for a job.
    fn wake_one(&mut self, now: Nanos) -> Vec<Started> {
        if self.idle == 0 {
            return Vec::new();
        }
        let started: Vec<Started> =
            self.admission.next(now).map(|(meta, job)| Started { job, meta }).into_iter().collect();
        self.idle -= started.len();
        started
    }
}

impl ReplicaDriver for StoreReplica {
    fn arrive(&mut self, now: Nanos, job: usize, j: &ScriptedJob, service: Nanos) -> Option<Vec<Started>> {
        let tags = if self.loss == Loss::Tags { Tags::default() } else { j.tags };
        let age = if self.loss == Loss::Age { 0 } else { j.age };
        match self.admission.enter(now, Incoming { service, size: j.size, tags, age }, job, self.inline) {
            Entry::Refused { .. } => None,
            Entry::Inline(meta, job) => {
                self.inline_jobs.insert(meta.id);
                Some(vec![Started { job, meta }])
            }
            Entry::Queued => Some(self.wake_one(now)),
        }
    }

    fn finish(&mut self, now: Nanos, done: Started, work: Nanos) -> Vec<Started> {
        self.admission.finish(now, done.meta.id, work);
        if self.inline_jobs.remove(&done.meta.id) {
            // the caller returns; it wakes a worker when jobs wait (`Replica::submit`)
            return if self.admission.core().waiting() > 0 { self.wake_one(now) } else { Vec::new() };
        }
        // the worker's loop asks for its next job
        match self.admission.next(now) {
            Some((meta, job)) => vec![Started { job, meta }],
            None => {
                self.idle += 1;
                Vec::new()
            }
        }
    }
}

/// One setup of the comparison.
#[derive(Clone, Copy, Debug)]
struct Setup {
    workers: usize,
    max_queue: Option<usize>,
    inline: bool,
}

const SETUPS: &[Setup] = &[
    Setup { workers: 1, max_queue: None, inline: true },
    Setup { workers: 1, max_queue: Some(5), inline: false },
    Setup { workers: 4, max_queue: None, inline: false },
    Setup { workers: 4, max_queue: Some(6), inline: true },
];

/// A step as `first_difference` compares it: everything, or only what started or was refused
/// when (the order of service starts and refusals).
fn compared(step: &Step, order_only: bool) -> Step {
    match *step {
        Step::Start { at, job, meta } if order_only => {
            Step::Start { at, job, meta: JobMeta { tags: Tags::default(), release: 0, ..meta } }
        }
        other => other,
    }
}

/// The first step where the store parts from the simulator on `policy` under `setup`.
fn first_difference(policy: &str, setup: Setup, seed: u64, loss: Loss, order_only: bool) -> Option<String> {
    let script = ReplicaScript::generate(seed, 400, setup.workers);
    let sim = replica_script::run(
        &script,
        &mut SimReplica::new(policy, &LocalConfig::default(), seed, setup.workers, setup.max_queue),
    );
    let mut store = StoreReplica::new(policy, seed, setup.workers, setup.max_queue, setup.inline, loss);
    let store = replica_script::run(&script, &mut store);
    assert!(sim.iter().any(|s| matches!(s, Step::Start { .. })), "{policy}: the script starts jobs");
    if setup.max_queue.is_some() {
        assert!(sim.iter().any(|s| matches!(s, Step::Refused { .. })), "{policy} {setup:?}: the cap refuses some");
    }
    let same = |i: usize| sim.get(i).map(|s| compared(s, order_only)) == store.get(i).map(|s| compared(s, order_only));
    let at = (0..sim.len().max(store.len())).find(|&i| !same(i))?;
    Some(format!(
        "local policy {policy}, {setup:?}, seed {seed}: step {at} differs\n  simulator: {:?}\n  store:     {:?}",
        sim.get(at),
        store.get(at)
    ))
}

#[test]
fn the_store_and_the_simulator_serve_a_replica_alike_under_every_local_policy() {
    let mut failures = Vec::new();
    for policy in LOCALS {
        for &setup in SETUPS {
            for seed in [1, 2] {
                failures.extend(first_difference(policy, setup, seed, Loss::Nothing, false));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The order alone tells: the metadata a started job carries (which would part at once) is left
/// out of the comparison here.
#[test]
fn lost_tags_or_ages_are_caught() {
    let setup = SETUPS[0];
    // the size class picks the sub-queue or the share class, the flow the las flow
    for policy in ["rml", "fair-share", "las"] {
        assert!(first_difference(policy, setup, 1, Loss::Tags, true).is_some(), "{policy}: default tags go unnoticed");
    }
    // release = arrival - age orders by stretch (max-wait-over-size counts from the enqueue)
    assert!(
        first_difference("max-stretch", setup, 1, Loss::Age, true).is_some(),
        "max-stretch: a lost age goes unnoticed"
    );
}
