//! A server whose jobs in service share its capacity (`cluster.shared_capacity`): each of the
//! `n` jobs in service progresses at `min(1, capacity / n)` of full speed, so a long job slows
//! every job beside it, which workers of their own never do.
//!
//! Kept in virtual time: every job in service has received the same service since it started,
//! so one clock `v` (work done per job, in ns at full speed) advancing at `rate(n)` replaces a
//! countdown per job, and a job that needs `work` finishes when `v` reaches `v_start + work`.
//! The next completion is the job with the least finish clock; its real time changes whenever a
//! job starts or ends, so the engine schedules one completion event per server, tagged with a
//! generation, and ignores events a later change made stale.

use crate::server::Job;
use tailor_core::time::Nanos;

/// A job in service on a shared server.
#[derive(Clone, Copy, Debug)]
struct InService {
    job: Job,
    /// The clock value at which it has received all its work.
    finish: f64,
    /// When it started, and when its server admitted it.
    started: Nanos,
    enqueued: Nanos,
}

/// One server's jobs in service and its virtual clock.
#[derive(Clone, Debug)]
pub struct Shared {
    capacity: f64,
    /// Work each job in service has received since the clock's origin, in ns at full speed.
    clock: f64,
    /// Real time at which `clock` was last advanced.
    at: Nanos,
    jobs: Vec<InService>,
    /// Bumped at every change of the jobs in service: a completion event of an older
    /// generation is stale.
    pub generation: u32,
    /// The generation whose completion is scheduled.
    scheduled: u32,
}

/// A job the shared server finished.
pub struct Finished {
    pub job: Job,
    pub started: Nanos,
    pub enqueued: Nanos,
}

impl Shared {
    /// An idle server of `capacity` units.
    pub fn new(capacity: usize) -> Self {
        Shared { capacity: capacity as f64, clock: 0.0, at: 0, jobs: Vec::new(), generation: 0, scheduled: 0 }
    }

    /// Speed of each job in service, with `n` of them.
    fn rate(&self, n: usize) -> f64 {
        (self.capacity / n.max(1) as f64).min(1.0)
    }

    /// Run the clock to `now`.
    fn advance(&mut self, now: Nanos) {
        if self.jobs.is_empty() {
            // idle: restart the clock so it never grows large (its precision stays in the ns)
            self.clock = 0.0;
        } else {
            self.clock += (now - self.at) as f64 * self.rate(self.jobs.len());
        }
        self.at = now;
    }

    /// `job`, admitted at `enqueued`, starts at `now` needing `work` ns at full speed.
    pub fn start(&mut self, now: Nanos, job: Job, work: Nanos, enqueued: Nanos) {
        self.advance(now);
        self.jobs.push(InService { job, finish: self.clock + work as f64, started: now, enqueued });
        self.generation = self.generation.wrapping_add(1);
    }

    /// The job that finishes first (the earliest started among equals).
    fn first(&self) -> Option<usize> {
        (0..self.jobs.len()).min_by(|&a, &b| self.jobs[a].finish.total_cmp(&self.jobs[b].finish))
    }

    /// When the next job finishes if nothing starts before (`None`: nothing in service); at
    /// least 1 ns after the last change, so time always moves on.
    pub fn next_completion(&self) -> Option<Nanos> {
        let first = self.first()?;
        let left = (self.jobs[first].finish - self.clock).max(0.0) / self.rate(self.jobs.len());
        Some(self.at + (left.ceil() as Nanos).max(1))
    }

    /// The completion to schedule, with its generation, when the jobs in service changed since
    /// the last one was scheduled (so one event per server is live at a time).
    pub fn reschedule(&mut self) -> Option<(Nanos, u32)> {
        if self.scheduled == self.generation {
            return None;
        }
        self.scheduled = self.generation;
        Some((self.next_completion()?, self.generation))
    }

    /// The first job finishes at `now` (its completion event came due).
    pub fn finish(&mut self, now: Nanos) -> Finished {
        self.advance(now);
        let i = self.first().expect("a completion is scheduled only with jobs in service");
        let done = self.jobs.remove(i);
        self.generation = self.generation.wrapping_add(1);
        Finished { job: done.job, started: done.started, enqueued: done.enqueued }
    }

    /// The server crashed: its jobs in service are lost.
    pub fn clear(&mut self, now: Nanos) {
        self.advance(now);
        self.jobs.clear();
        self.generation = self.generation.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::Shared;
    use crate::server::Job;
    use tailor_core::coordinator::{SendKind, Ticket};

    fn job(id: u64) -> Job {
        Job { ticket: Ticket { slot: id as u32, id }, kind: SendKind::Read, tags: Default::default(), age: 0 }
    }

    #[test]
    fn a_long_job_slows_a_short_one_on_one_unit() {
        let mut s = Shared::new(1);
        s.start(0, job(1), 100, 0); // alone: would end at 100
        assert_eq!(s.next_completion(), Some(100));
        s.start(50, job(2), 10, 50); // from 50 both at half speed: job 2 needs 20 ns
        assert_eq!(s.next_completion(), Some(70));
        let f = s.finish(70);
        assert_eq!((f.job.ticket.id, f.started), (2, 50));
        // job 1 had 50 + 10 of its 100: 40 left alone
        assert_eq!(s.next_completion(), Some(110));
        assert_eq!(s.finish(110).job.ticket.id, 1);
        assert_eq!(s.next_completion(), None);
    }

    #[test]
    fn jobs_up_to_the_capacity_run_at_full_speed() {
        let mut s = Shared::new(2);
        s.start(0, job(1), 100, 0);
        s.start(0, job(2), 40, 0);
        assert_eq!(s.next_completion(), Some(40));
        s.start(20, job(3), 40, 0); // three on two units: each at 2/3
                                    // job 2 has 20 left: 30 ns at 2/3
        assert_eq!(s.next_completion(), Some(50));
        let g = s.generation;
        s.clear(30);
        assert!(s.next_completion().is_none() && s.generation != g);
    }
}
