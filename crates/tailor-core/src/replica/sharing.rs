//! A device whose jobs in service share its capacity (`cluster.shared_capacity`, the store's
//! `shared_capacity` knob): each of the `n` jobs in service progresses at `min(1, capacity / n)`
//! of full speed, so a long job slows every job beside it, which workers of their own never do
//! (Héron's Cassandra: 32 read threads on two disks). Clock-free: the simulator's events and the
//! store's worker threads drive the same state machine.
//!
//! Kept in virtual time: every job in service has received the same service since it started,
//! so one clock `v` (work done per job, in ns at full speed) advancing at `rate(n)` replaces a
//! countdown per job, and a job that needs `work` finishes when `v` reaches `v_start + work`.
//! The next completion is the job with the least finish clock; its real time changes whenever a
//! job starts or ends, so an engine that schedules completions (the simulator) tags each with a
//! [`Sharing::generation`] and ignores those a later change made stale, and an engine whose
//! jobs wait on their own (the store's threads) asks [`Sharing::remaining`] again after every
//! change.

use crate::time::Nanos;

/// A job in service and the clock value at which it has received all its work.
#[derive(Clone, Debug)]
struct InService<J> {
    job: J,
    finish: f64,
}

/// One device's jobs in service and its virtual clock.
#[derive(Clone, Debug)]
pub struct Sharing<J> {
    capacity: f64,
    /// Work each job in service has received since the clock's origin, in ns at full speed.
    clock: f64,
    /// Real time at which `clock` was last advanced.
    at: Nanos,
    jobs: Vec<InService<J>>,
    /// Bumped at every change of the jobs in service or the capacity.
    generation: u32,
    /// The generation whose completion [`Sharing::reschedule`] last handed out.
    scheduled: u32,
}

impl<J> Sharing<J> {
    /// An idle device of `capacity` units (at least 1).
    pub fn new(capacity: usize) -> Self {
        debug_assert!(capacity > 0, "a shared device has capacity");
        Sharing { capacity: capacity.max(1) as f64, clock: 0.0, at: 0, jobs: Vec::new(), generation: 0, scheduled: 0 }
    }

    /// Speed of each job in service, with `n` of them.
    fn rate(&self, n: usize) -> f64 {
        let rate = (self.capacity / n.max(1) as f64).min(1.0);
        debug_assert!(rate > 0.0 && rate <= 1.0, "a job's rate {rate} is a positive share of one worker");
        debug_assert!(
            rate * n as f64 <= self.capacity * (1.0 + 1e-12),
            "{n} jobs at {rate} exceed the capacity {}",
            self.capacity
        );
        rate
    }

    /// Run the clock to `now` (never backwards).
    fn advance(&mut self, now: Nanos) {
        let now = now.max(self.at);
        let before = self.clock;
        if self.jobs.is_empty() {
            // idle: restart the clock so it never grows large (its precision stays in the ns)
            self.clock = 0.0;
        } else {
            self.clock += (now - self.at) as f64 * self.rate(self.jobs.len());
            debug_assert!(self.clock >= before, "the virtual clock never goes back: {before} -> {}", self.clock);
        }
        debug_assert!(self.clock.is_finite() && self.clock >= 0.0, "virtual clock {}", self.clock);
        self.at = now;
    }

    fn changed(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    /// The capacity becomes `capacity` units at `now` (the store's knob changed).
    pub fn set_capacity(&mut self, now: Nanos, capacity: usize) {
        if capacity.max(1) as f64 != self.capacity {
            self.advance(now);
            self.capacity = capacity.max(1) as f64;
            self.changed();
        }
    }

    /// `job` starts at `now` needing `work` ns at full speed.
    pub fn start(&mut self, now: Nanos, job: J, work: Nanos) {
        self.advance(now);
        self.jobs.push(InService { job, finish: self.clock + work as f64 });
        self.changed();
        debug_assert!(self.jobs.iter().all(|s| s.finish.is_finite()), "finish tags are finite");
    }

    /// Jobs in service.
    pub fn in_service(&self) -> usize {
        self.jobs.len()
    }

    /// Changes so far: a completion computed before the last change is stale.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The job that finishes first (the earliest started among equals).
    fn first(&self) -> Option<usize> {
        (0..self.jobs.len()).min_by(|&a, &b| self.jobs[a].finish.total_cmp(&self.jobs[b].finish))
    }

    /// Real ns from the last change until job `i` finishes if nothing changes, rounded up.
    fn real_left(&self, i: usize) -> Nanos {
        let left = (self.jobs[i].finish - self.clock).max(0.0) / self.rate(self.jobs.len());
        debug_assert!(left.is_finite() && left >= 0.0, "remaining time {left} of job {i}");
        left.ceil() as Nanos
    }

    /// [`Sharing::real_left`], at least 1 ns: a completion always moves time on.
    fn left(&self, i: usize) -> Nanos {
        self.real_left(i).max(1)
    }

    /// When the next job finishes if nothing starts before (`None`: nothing in service); at
    /// least 1 ns after the last change, so time always moves on.
    pub fn next_completion(&self) -> Option<Nanos> {
        let next = self.first().map(|i| self.at + self.left(i));
        debug_assert!(next.is_none_or(|t| t > self.at), "a completion {next:?} is after the last change {}", self.at);
        next
    }

    /// The completion to schedule, with its generation, when the jobs in service changed since
    /// the last one was handed out (so one completion per device is live at a time).
    pub fn reschedule(&mut self) -> Option<(Nanos, u32)> {
        if self.scheduled == self.generation {
            return None;
        }
        self.scheduled = self.generation;
        debug_assert!(self.jobs.is_empty() == self.next_completion().is_none(), "a completion exactly when busy");
        Some((self.next_completion()?, self.generation))
    }

    /// The first job finishes at `now` (its completion came due): removed and returned.
    pub fn finish_first(&mut self, now: Nanos) -> Option<J> {
        self.advance(now);
        let i = self.first()?;
        self.changed();
        let done = self.jobs.remove(i);
        debug_assert!(self.jobs.iter().all(|s| s.finish >= done.finish), "the earliest finish tag leaves first");
        Some(done.job)
    }

    /// The device lost its jobs in service at `now` (a crash).
    pub fn clear(&mut self, now: Nanos) {
        self.advance(now);
        self.jobs.clear();
        self.changed();
    }
}

impl<J: PartialEq> Sharing<J> {
    /// Real ns from `now` until `job` has received all its work if nothing changes (0: done;
    /// `None`: not in service).
    pub fn remaining(&mut self, now: Nanos, job: &J) -> Option<Nanos> {
        self.advance(now);
        let i = self.jobs.iter().position(|s| s.job == *job)?;
        Some(self.real_left(i))
    }

    /// `job` leaves at `now` (done, or given up); whether it was in service.
    pub fn remove(&mut self, now: Nanos, job: &J) -> bool {
        self.advance(now);
        let Some(i) = self.jobs.iter().position(|s| s.job == *job) else { return false };
        self.jobs.remove(i);
        self.changed();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::Sharing;

    #[test]
    fn a_long_job_slows_a_short_one_on_one_unit() {
        let mut s = Sharing::new(1);
        s.start(0, 1, 100); // alone: would end at 100
        assert_eq!(s.next_completion(), Some(100));
        s.start(50, 2, 10); // from 50 both at half speed: job 2 needs 20 ns
        assert_eq!(s.next_completion(), Some(70));
        assert_eq!(s.finish_first(70), Some(2));
        // job 1 had 50 + 10 of its 100: 40 left alone
        assert_eq!(s.next_completion(), Some(110));
        assert_eq!(s.finish_first(110), Some(1));
        assert_eq!((s.next_completion(), s.finish_first(120)), (None, None));
    }

    #[test]
    fn jobs_up_to_the_capacity_run_at_full_speed() {
        let mut s = Sharing::new(2);
        s.start(0, 1, 100);
        s.start(0, 2, 40);
        assert_eq!(s.next_completion(), Some(40));
        s.start(20, 3, 40); // three on two units: each at 2/3; job 2 has 20 left: 30 ns
        assert_eq!(s.next_completion(), Some(50));
        let g = s.generation();
        s.clear(30);
        assert!(s.next_completion().is_none() && s.generation() != g);
    }

    #[test]
    fn one_completion_is_handed_out_per_change() {
        let mut s = Sharing::new(1);
        assert_eq!(s.reschedule(), None, "nothing changed, nothing in service");
        s.start(0, 1, 10);
        let (at, g) = s.reschedule().unwrap();
        assert_eq!((at, g), (10, s.generation()));
        assert_eq!(s.reschedule(), None, "already handed out");
        s.start(5, 2, 10);
        assert_eq!(s.reschedule().map(|(at, _)| at), Some(15), "job 1's last 5 ns at half speed");
    }

    #[test]
    fn threads_waiting_on_their_own_see_their_remaining_time_move() {
        let mut s = Sharing::new(1);
        s.start(0, 7, 100);
        assert_eq!(s.remaining(0, &7), Some(100));
        s.start(40, 8, 100);
        assert_eq!(s.remaining(40, &7), Some(120), "60 left at half speed");
        assert!(s.remove(60, &8));
        assert_eq!(s.remaining(60, &7), Some(50), "10 more done in 20 ns, 50 left alone");
        assert_eq!(s.remaining(200, &7), Some(0));
        assert!(!s.remove(200, &8) && s.remaining(200, &8).is_none());
        s.set_capacity(200, 2);
        assert!(s.remove(200, &7));
    }
}
