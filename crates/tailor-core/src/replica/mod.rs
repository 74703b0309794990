//! The replica core: a sans-IO state machine for everything between a request reaching a replica
//! and a worker running it — the local queue, the worker slots and the facts accountant.
//!
//! Engines drive it with three calls and own nothing else about scheduling: [`ReplicaCore::admit`]
//! when a request arrives, [`ReplicaCore::start`] whenever a worker may be free (it answers the
//! job to run, if a slot and a job are available), and [`ReplicaCore::finish`] when a job's work
//! is done (it answers the facts to piggyback). The simulator's workers are events; the store's
//! are threads that call `start` under a lock; both see the same queue order and the same facts.
//!
//! Queue cap: with [`ReplicaCore::set_max_queue`], a request that finds that many jobs waiting
//! is refused ([`ReplicaCore::admits`] says no and counts it): the engine answers it "busy" at
//! once, a failed copy at its coordinator, which retries it elsewhere. Off by default.
//!
//! Release time (choice): a job's release is its arrival here minus the time it spent at its
//! coordinator before being sent (`age`, measured on the coordinator's clock and carried with
//! the request). It is the one definition both engines can compute: the two clocks are not
//! comparable, a duration is; the one-way network delay is not counted.

pub mod accountant;
pub mod cancel;
pub mod estimate;
pub mod sharing;

use crate::facts::Feedback;
use crate::local::LocalQueue;
use crate::model::{JobMeta, NodeId, RequestId, Tags};
use crate::time::Nanos;
pub use accountant::{Accountant, ProbeReply, RifLatency};
use cancel::{Cancels, Withdrawn};
pub use estimate::ServiceEstimate;

/// A request as it reaches a replica.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arrival {
    /// Request id (unique among this replica's queued and running jobs).
    pub id: RequestId,
    /// Time the request spent at its coordinator before being sent.
    pub age: Nanos,
    /// Estimated processing time from the replica's exact size, at least 1 ns
    /// ([`ServiceEstimate::of`]).
    pub service: Nanos,
    /// Exact value size in bytes.
    pub size: u64,
    /// Tags from the coordinator.
    pub tags: Tags,
}

/// One replica's queue, worker slots and facts.
pub struct ReplicaCore<T> {
    queue: Box<dyn LocalQueue<T>>,
    /// Worker slots (u32, beside the cap: a simulated server is three cache lines to the byte).
    slots: u32,
    /// Most jobs waiting before a new one is refused (`u32::MAX`: no cap).
    max_queue: u32,
    large_threshold: u64,
    accountant: Accountant,
    /// Latency per requests-in-flight level, for probes (boxed: off unless asked for).
    rif_latency: Option<Box<RifLatency>>,
    /// Waiting jobs that may be cancelled (boxed: off unless asked for, see [`cancel`]).
    cancels: Option<Box<Cancels>>,
}

impl<T> ReplicaCore<T> {
    /// Replica `id` ordering its queue with `queue`, running `workers` jobs at once; values
    /// strictly above `large_threshold` bytes are large (Héron's busy status).
    pub fn new(id: NodeId, queue: Box<dyn LocalQueue<T>>, workers: usize, large_threshold: u64) -> Self {
        assert!(workers > 0, "a replica needs at least one worker");
        ReplicaCore {
            queue,
            slots: slots(workers),
            max_queue: u32::MAX,
            large_threshold,
            accountant: Accountant::new(id),
            rif_latency: None,
            cancels: None,
        }
        .with_workers(workers)
    }

    fn with_workers(mut self, workers: usize) -> Self {
        self.set_workers(workers);
        self
    }

    /// The same, keeping the latency per requests-in-flight level that probe answers carry
    /// (Prequal); without it a probe's latency estimate is 0.
    pub fn with_probe_estimates(mut self) -> Self {
        self.rif_latency = Some(Box::default());
        self
    }

    /// The same, able to cancel waiting jobs ([`ReplicaCore::cancel`]): it keeps their ids.
    pub fn with_cancellation(mut self) -> Self {
        self.cancels = Some(Box::default());
        self
    }

    /// Drop waiting job `id` (its copy is no longer wanted, [`cancel`]): true if it was waiting
    /// and will not run; false if it runs or ran already, is unknown, or this core was not
    /// built [`ReplicaCore::with_cancellation`].
    pub fn cancel(&mut self, id: RequestId) -> bool {
        let Some(job) = self.cancels.as_mut().and_then(|c| c.cancel(id)) else { return false };
        self.accountant.withdraws(job.service, job.large);
        if let Some(r) = &mut self.rif_latency {
            r.forgets(id);
        }
        debug_assert_eq!(self.accountant.waiting() as usize, self.queued(), "the accountant counts the queue");
        true
    }

    /// Jobs cancelled so far and their estimated work ([`ReplicaCore::cancel`]).
    pub fn cancelled(&self) -> (u64, Nanos) {
        self.cancels.as_ref().map_or((0, 0), |c| c.totals())
    }

    /// Jobs waiting in the queue, cancelled ones left out.
    #[inline]
    fn queued(&self) -> usize {
        self.queue.len() - self.cancels.as_ref().map_or(0, |c| c.zombies())
    }

    /// The queue's next job that was not cancelled.
    #[inline]
    fn pop_live(&mut self, now: Nanos) -> Option<(JobMeta, T)> {
        loop {
            let (meta, payload) = self.queue.pop(now)?;
            if self.cancels.as_mut().is_none_or(|c| c.popped(meta.id)) {
                return Some((meta, payload));
            }
        }
    }

    /// The same, not measuring the queue-length trend `dq` (the facts carry 0): see
    /// [`Accountant::without_dq`].
    pub fn without_dq(mut self) -> Self {
        self.accountant = self.accountant.without_dq();
        self
    }

    /// The same, not measuring `utilization` ([`Accountant::without_utilization`]).
    pub fn without_utilization(mut self) -> Self {
        self.accountant = self.accountant.without_utilization();
        self
    }

    /// Answer a probe at `now`, at once and without queueing it: the requests in flight and the
    /// latency estimate for a request arriving now.
    pub fn probe(&self, _now: Nanos) -> ProbeReply {
        let rif = self.queued() as u32 + self.accountant.running() as u32;
        ProbeReply { rif, latency: self.rif_latency.as_ref().map_or(0, |r| r.estimate(rif)) }
    }

    /// Whether `size` bytes is a large value here.
    pub fn is_large(&self, size: u64) -> bool {
        size > self.large_threshold
    }

    /// Queue a request that arrived at `now`. Returns true if it cannot start at once and a
    /// large-value request is queued or running before it (Héron's small-behind-large count).
    pub fn admit(&mut self, now: Nanos, a: Arrival, payload: T) -> bool {
        debug_assert!(self.accountant.waiting() < self.max_queue, "job {} admitted past the queue cap", a.id);
        let (waiting, running) = (self.queued(), self.accountant.running());
        let behind_large = self.accountant.running() >= self.slots as usize && self.accountant.large_present();
        let release = now.saturating_sub(a.age);
        let meta = JobMeta { id: a.id, release, enqueued: now, service: a.service.max(1), size: a.size, tags: a.tags };
        let rif = (waiting + running) as u32;
        if let Some(r) = &mut self.rif_latency {
            r.arrives(now, a.id, rif);
        }
        let large = self.is_large(a.size);
        self.accountant.waits(now, meta.service, large);
        if let Some(c) = &mut self.cancels {
            c.queued(a.id, Withdrawn { service: meta.service, large });
        }
        self.queue.push(now, meta, payload);
        debug_assert!(meta.release <= meta.enqueued && meta.service > 0, "release before arrival, some work: {meta:?}");
        debug_assert_eq!(self.accountant.waiting() as usize, self.queued(), "the accountant counts the queue");
        debug_assert_eq!((self.queued(), self.accountant.running()), (waiting + 1, running), "an admitted job waits");
        behind_large
    }

    /// The next job to run at `now`, if a worker slot is free and a job waits.
    pub fn start(&mut self, now: Nanos) -> Option<(JobMeta, T)> {
        // the accountant counts what the queue holds: an empty queue is known without asking it
        debug_assert_eq!(self.accountant.waiting() as usize, self.queued(), "the accountant counts the queue");
        if self.accountant.running() >= self.slots as usize || self.accountant.waiting() == 0 {
            return None;
        }
        let (waiting, running) = (self.queued(), self.accountant.running());
        let (meta, payload) = self.pop_live(now)?;
        debug_assert!(meta.enqueued <= now, "job {} starts before it arrived", meta.id);
        debug_assert!(
            meta.release <= meta.enqueued && meta.service > 0,
            "a started job is one that was queued: {meta:?}"
        );
        self.accountant.starts(now, meta.id, meta.service, self.is_large(meta.size));
        debug_assert!(self.accountant.running() <= self.slots as usize, "a job started without a free worker slot");
        debug_assert_eq!(self.accountant.waiting() as usize, self.queued(), "the accountant counts the queue");
        debug_assert_eq!((self.queued(), self.accountant.running()), (waiting - 1, running + 1), "a waiting job runs");
        Some((meta, payload))
    }

    /// Job `id` finished at `now` after `service` of real work: the facts its reply carries.
    pub fn finish(&mut self, now: Nanos, id: RequestId, service: Nanos) -> Feedback {
        let (waiting, running) = (self.queued(), self.accountant.running());
        debug_assert!(running > 0, "job {id} finished with no job running");
        self.accountant.finishes(now, id);
        debug_assert_eq!((self.queued(), self.accountant.running()), (waiting, running - 1), "a finish frees one slot");
        if let Some(r) = &mut self.rif_latency {
            r.finishes(now, id);
        }
        self.accountant.facts(now, service)
    }

    /// The facts at `now` for a message that answers no job (heartbeat, metrics).
    pub fn facts(&self, now: Nanos) -> Feedback {
        self.accountant.facts(now, 0)
    }

    /// Change the number of jobs run at once (running jobs above it finish normally).
    pub fn set_workers(&mut self, workers: usize) {
        assert!(workers > 0, "a replica needs at least one worker");
        self.slots = slots(workers);
        self.accountant.set_workers(self.slots);
        debug_assert_eq!(self.workers(), workers, "the slots are the workers");
    }

    /// Jobs run at once.
    pub fn workers(&self) -> usize {
        self.slots as usize
    }

    /// Refuse new requests while `max` jobs wait (`None`: never, the default).
    pub fn set_max_queue(&mut self, max: Option<usize>) {
        self.max_queue = max.map_or(u32::MAX, |m| u32::try_from(m).unwrap_or(u32::MAX));
        debug_assert_eq!(
            self.max_queue(),
            max.filter(|&m| m < u32::MAX as usize),
            "the cap is kept (2^32 - 1 and above: none)"
        );
    }

    /// The queue cap (`None`: none).
    pub fn max_queue(&self) -> Option<usize> {
        (self.max_queue != u32::MAX).then_some(self.max_queue as usize)
    }

    /// Whether a request arriving now may queue: no, and counted ([`ReplicaCore::refused`]),
    /// when [`ReplicaCore::max_queue`] jobs already wait. The engine answers a refused request
    /// "busy" at once, without admitting it.
    #[inline]
    pub fn admits(&mut self) -> bool {
        let refused = self.accountant.refused();
        let room = self.accountant.waiting() < self.max_queue;
        if !room {
            self.accountant.refuses();
        }
        debug_assert!(
            room || self.accountant.refused() > refused || refused == u64::from(u32::MAX),
            "a refusal is counted"
        );
        room
    }

    /// Requests refused by the queue cap so far.
    pub fn refused(&self) -> u64 {
        self.accountant.refused()
    }

    /// Jobs waiting.
    pub fn waiting(&self) -> usize {
        self.queued()
    }

    /// Jobs running.
    pub fn running(&self) -> usize {
        self.accountant.running()
    }

    /// Where the next admit, start or finish touches memory beyond the core itself, reading
    /// only the core: the queue and the accountant's lists. Addresses never read through, for
    /// an engine that asks the CPU for them ahead (the simulator at thousands of servers).
    pub fn footprint(&self) -> [*const u8; 4] {
        let [running, first_step, last_step] = self.accountant.footprint();
        let queue = (&*self.queue as *const dyn LocalQueue<T>).cast();
        [queue, running, first_step, last_step]
    }

    /// Where the queue's next pop and push land (see [`LocalQueue::footprint`]); reads the
    /// queue, so an engine asks for [`ReplicaCore::footprint`] first.
    pub fn queue_footprint(&self) -> [*const u8; 2] {
        self.queue.footprint()
    }

    /// Estimated work waiting or still to run at `now`.
    pub fn pending_work(&self, now: Nanos) -> Nanos {
        self.accountant.pending_work(now)
    }
}

/// A worker count as the core keeps it.
fn slots(workers: usize) -> u32 {
    assert!(workers > 0, "a replica needs at least one worker");
    u32::try_from(workers).expect("fewer than 2^32 workers")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    fn core(workers: usize) -> ReplicaCore<char> {
        ReplicaCore::new(4, crate::local::build("fcfs", &Default::default(), 1).unwrap(), workers, 100)
    }

    fn arrival(id: u64, size: u64) -> Arrival {
        Arrival { id, age: 0, service: size * 10, size, tags: Tags::default() }
    }

    #[test]
    fn slots_bound_running_jobs_and_facts_follow() {
        let mut c = core(1);
        assert!(!c.admit(0, arrival(1, 500), 'a'));
        assert_eq!(c.start(0).map(|j| j.1), Some('a'));
        // a small one behind the running large one
        assert!(c.admit(MS, arrival(2, 5), 'b'));
        assert!(c.start(MS).is_none(), "the only slot is taken");
        let f = c.finish(2 * MS, 1, 4_000);
        assert_eq!((f.from, f.queue_len, f.service_time, f.completed, f.busy), (4, 1, 4_000, 1, false));
        assert_eq!(c.start(2 * MS).map(|j| j.1), Some('b'));
        assert!(c.facts(2 * MS).pending_work == 50 && c.running() == 1 && c.waiting() == 0);
        c.set_workers(3);
        assert_eq!(c.workers(), 3);
    }

    #[test]
    fn the_queue_cap_refuses_while_that_many_wait_and_counts_refusals() {
        let mut c = core(1);
        assert_eq!((c.max_queue(), c.admits()), (None, true), "no cap by default");
        c.set_max_queue(Some(1));
        assert!(c.admits());
        c.admit(0, arrival(1, 1), 'a');
        c.start(0);
        // running jobs do not count: only those waiting
        assert!(c.admits());
        c.admit(0, arrival(2, 1), 'b');
        assert!(!c.admits() && !c.admits());
        assert_eq!((c.refused(), c.waiting()), (2, 1), "refused requests are counted, not queued");
        c.finish(MS, 1, MS);
        c.start(MS);
        assert!(c.admits(), "room again once the waiting job started");
        c.set_max_queue(Some(0));
        assert!(!c.admits(), "a cap of 0 refuses everything");
        c.set_max_queue(None);
        assert_eq!((c.max_queue(), c.refused()), (None, 3));
    }

    #[test]
    fn a_probe_reads_requests_in_flight_and_the_latency_at_that_level() {
        let mut c = core(1).with_probe_estimates();
        assert_eq!(c.probe(0), ProbeReply { rif: 0, latency: 0 });
        c.admit(0, arrival(1, 1), 'a');
        c.admit(0, arrival(2, 1), 'b');
        assert_eq!(c.probe(0).rif, 2, "waiting and running count alike");
        c.start(0);
        c.finish(4 * MS, 1, 4 * MS);
        c.start(4 * MS);
        c.finish(6 * MS, 2, 2 * MS);
        // request 1 found 0 in flight and took 4 ms; request 2 found 1 and took 6 ms
        assert_eq!(c.probe(6 * MS), ProbeReply { rif: 0, latency: 4 * MS });
        c.admit(7 * MS, arrival(3, 1), 'c');
        assert_eq!(c.probe(7 * MS), ProbeReply { rif: 1, latency: 6 * MS });
        assert_eq!(core(1).probe(0).latency, 0, "no estimates unless asked for");
    }

    #[test]
    fn a_cancelled_waiting_job_never_starts_and_leaves_the_facts() {
        let mut c = core(1).with_probe_estimates().with_cancellation();
        for (id, name) in [(1, 'a'), (2, 'b'), (3, 'c')] {
            c.admit(0, arrival(id, 5), name);
        }
        c.start(0);
        assert!(!c.cancel(1), "a running job finishes");
        assert!(c.cancel(2) && !c.cancel(2), "a waiting one is cancelled once");
        assert!(!c.cancel(9), "an unknown job");
        assert_eq!((c.waiting(), c.facts(0).queue_len, c.probe(0).rif), (1, 1, 2), "the cancelled job is not counted");
        assert_eq!(c.facts(0).pending_work, 50 + 50, "job 1's remaining work and job 3's");
        c.finish(MS, 1, MS);
        assert_eq!(c.start(MS).map(|j| j.1), Some('c'), "the cancelled job is skipped");
        assert_eq!((c.cancelled(), core(1).cancel(1)), ((1, 50), false), "nothing cancels without being asked to");
    }

    #[test]
    fn release_is_arrival_minus_the_age_at_the_coordinator() {
        let mut c = core(1);
        c.admit(10 * MS, Arrival { age: 3 * MS, ..arrival(1, 1) }, 'a');
        let (meta, _) = c.start(10 * MS).unwrap();
        assert_eq!((meta.release, meta.enqueued), (7 * MS, 10 * MS));
    }
}
