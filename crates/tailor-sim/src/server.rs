//! A modelled server: the replica core (local queue, `P` worker slots, facts) plus what only a
//! model has — a service-rate state that fluctuates and an optional LRU cache.

use crate::lru::Lru;
use tailor_core::coordinator::{SendKind, Ticket};
use tailor_core::model::Tags;
use tailor_core::replica::ReplicaCore;
use tailor_core::selector::World;
use tailor_core::time::{from_ms, round_nonneg, Nanos};
use tailor_core::NodeId;

/// A queued job: which request, why it was sent, and what travelled with it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Job {
    /// The coordinator core's ticket for it (its `id` is the request's).
    pub ticket: Ticket,
    /// Why the coordinator sent it (a measured read, a shadow, a write...).
    pub kind: SendKind,
    /// Tags from the coordinator.
    pub tags: Tags,
    /// Time the request spent at its coordinator before being sent.
    pub age: Nanos,
}

/// One server, in three cache lines of its own: at thousands of servers a job's arrival and
/// its end each find the server out of the cache, and the engine asks for all of it.
#[repr(align(64))]
pub struct Server {
    /// Queue, worker slots and facts.
    pub core: ReplicaCore<Job>,
    /// Service-time multiplier of the current fluctuation state (1 = base).
    pub slowdown: f64,
    /// LRU cache, when modelled (boxed: most setups model none, and its 88 bytes would take a
    /// line of every server).
    pub cache: Option<Box<Lru>>,
    /// The stop/continue duty cycle of a slowed server (boxed: few servers are slowed, and its
    /// bytes would push every server past three lines).
    pub pause: Option<Box<Pause>>,
    /// Whether a wake-up at the end of the current stop is scheduled (one at a time).
    pub resume_armed: bool,
}

const _: () = assert!(size_of::<Server>() == 192, "a server is three cache lines");

/// A stop/continue duty cycle in virtual time: each period runs for `running`, then stands
/// stopped to its end; periods start at t = 0 (`tailor_spec::SlowServer`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pause {
    period: Nanos,
    running: Nanos,
}

impl Pause {
    /// A server stopped `duty` of every `period_ms` (at least 1 ns running and 1 ns stopped).
    pub fn new(duty: f64, period_ms: f64) -> Pause {
        let period = from_ms(period_ms).max(2);
        let running = (round_nonneg((1.0 - duty) * period as f64) as Nanos).clamp(1, period - 1);
        Pause { period, running }
    }

    /// When a server stopped at `t` runs again; `None` when it runs at `t`.
    pub fn stopped_until(&self, t: Nanos) -> Option<Nanos> {
        let phase = t % self.period;
        (phase >= self.running).then(|| t - phase + self.period)
    }

    /// When a job needing `work` of running time, started at `start`, finishes: it progresses
    /// only while the server runs (a stopped JVM keeps its threads where they are).
    pub fn finish(&self, start: Nanos, work: Nanos) -> Nanos {
        let start = self.stopped_until(start).unwrap_or(start);
        let cycle = start - start % self.period;
        // running time counted from the start of `start`'s period
        let work = work.max(1) + start % self.period;
        let full = (work - 1) / self.running;
        cycle + full * self.period + (work - full * self.running)
    }
}

impl Server {
    /// An idle server around `core`.
    pub fn new(core: ReplicaCore<Job>, cache_capacity: usize) -> Self {
        Server {
            core,
            slowdown: 1.0,
            cache: (cache_capacity > 0).then(|| Box::new(Lru::new(cache_capacity))),
            pause: None,
            resume_armed: false,
        }
    }

    /// Jobs waiting or executing.
    pub fn load(&self) -> u32 {
        (self.core.waiting() + self.core.running()) as u32
    }
}

/// The omniscient view the simulator offers to strategies defined with it (eft, oracle).
pub struct SimWorld<'a> {
    /// All servers (none: a blind world, as in the store).
    pub servers: &'a [Server],
    /// Current time.
    pub now: Nanos,
    /// Workers per server.
    pub workers: usize,
    /// Base mean service time in ns (for rates).
    pub base_service_ns: f64,
}

impl World for SimWorld<'_> {
    /// `now + pending / P` from nominal estimates: exact for one worker in the size model
    /// without fluctuation; otherwise a fluid approximation (several workers, exponential
    /// service, fluctuation and caches make real times differ from the nominal ones).
    fn finish_time(&self, node: NodeId) -> Option<Nanos> {
        let s = self.servers.get(node as usize)?;
        Some(self.now + s.core.pending_work(self.now) / self.workers as Nanos)
    }

    fn queue_len(&self, node: NodeId) -> Option<u32> {
        Some(self.servers.get(node as usize)?.load())
    }

    fn service_rate(&self, node: NodeId) -> Option<f64> {
        Some(1e9 / (self.base_service_ns * self.servers.get(node as usize)?.slowdown))
    }
}

#[cfg(test)]
mod tests {
    use super::Pause;
    use tailor_core::time::from_ms;

    #[test]
    fn a_job_makes_no_progress_while_its_server_is_stopped() {
        let p = Pause::new(0.5, 100.0);
        // runs 40..50, stopped 50..100, runs 100..120
        assert_eq!(p.finish(from_ms(40.0), from_ms(30.0)), from_ms(120.0));
        assert_eq!(p.finish(from_ms(0.0), from_ms(50.0)), from_ms(50.0));
        assert_eq!(p.finish(from_ms(0.0), from_ms(100.0)), from_ms(150.0));
        // started while stopped: begins at the next period
        assert_eq!(p.finish(from_ms(70.0), from_ms(10.0)), from_ms(110.0));
        assert_eq!(p.finish(from_ms(10.0), from_ms(230.0)), from_ms(440.0));
    }

    #[test]
    fn a_server_is_stopped_for_the_last_share_of_each_period() {
        let p = Pause::new(0.25, 100.0);
        assert_eq!(p.stopped_until(from_ms(74.9)), None);
        assert_eq!(p.stopped_until(from_ms(75.0)), Some(from_ms(100.0)));
        assert_eq!(p.stopped_until(from_ms(199.0)), Some(from_ms(200.0)));
        assert_eq!(p.stopped_until(from_ms(200.0)), None);
    }
}
