//! A modelled server: a local queue feeding `P` workers, a service-rate state that fluctuates,
//! an optional LRU cache, and the facts it piggybacks on responses.

use crate::lru::Lru;
use tailor_core::facts::Feedback;
use tailor_core::local::LocalQueue;
use tailor_core::selector::World;
use tailor_core::time::{Nanos, MS};
use tailor_core::NodeId;

/// What a queued job is: which request, and whether it is a measured read, a write or a shadow read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    /// Request index.
    pub req: u32,
    /// Kind of work.
    pub kind: JobKind,
}

/// Kind of work a server does for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    /// The read the selector routed here.
    Read,
    /// One replica's share of a write.
    Write,
    /// A read-repair shadow read (loads the server, never measured).
    Shadow,
}

/// Window over which TAP's `dq` (queue-size change) is measured.
const DQ_WINDOW: Nanos = 20 * MS;

/// One server.
pub struct Server {
    /// Local queue of waiting jobs.
    pub queue: Box<dyn LocalQueue<Job>>,
    /// Jobs executing now.
    pub running: usize,
    /// Service-time multiplier of the current fluctuation state (1 = base).
    pub slowdown: f64,
    /// LRU cache, when modelled.
    pub cache: Option<Lru>,
    /// Requests completed so far.
    pub completed: u64,
    /// Large-value jobs executing now (Héron's busy status).
    pub running_large: u32,
    /// Large-value jobs waiting.
    pub queued_large: u32,
    /// Sum of nominal processing times of waiting jobs.
    pub queued_work: Nanos,
    /// Sum of the end times of executing jobs (their remaining work is this minus `running × now`).
    pub running_end_sum: Nanos,
    dq_window_start: Nanos,
    dq_base: i64,
}

impl Server {
    /// An idle server with `queue` as its local policy.
    pub fn new(queue: Box<dyn LocalQueue<Job>>, cache_capacity: usize) -> Self {
        Server {
            queue,
            running: 0,
            slowdown: 1.0,
            cache: (cache_capacity > 0).then(|| Lru::new(cache_capacity)),
            completed: 0,
            running_large: 0,
            queued_large: 0,
            queued_work: 0,
            running_end_sum: 0,
            dq_window_start: 0,
            dq_base: 0,
        }
    }

    /// Jobs waiting or executing.
    pub fn load(&self) -> u32 {
        (self.queue.len() + self.running) as u32
    }

    /// Work queued or executing at `now`, in nanoseconds of nominal processing time.
    pub fn pending_work(&self, now: Nanos) -> Nanos {
        self.queued_work + self.running_end_sum.saturating_sub(self.running as Nanos * now)
    }

    /// The facts this server piggybacks at `now` on a response whose service took `service`.
    pub fn feedback(&mut self, id: NodeId, now: Nanos, service: Nanos) -> Feedback {
        let load = self.load() as i64;
        if now >= self.dq_window_start + DQ_WINDOW {
            self.dq_window_start = now;
            self.dq_base = load;
        }
        Feedback {
            from: id,
            timestamp: now,
            queue_len: load as u32,
            service_time: service,
            completed: self.completed,
            busy: self.running_large > 0,
            dq: load - self.dq_base,
            pending_work: self.pending_work(now),
            bloom_bits: Vec::new(),
            bloom_generation: 0,
        }
    }
}

/// The omniscient view the simulator offers to strategies defined with it (eft, oracle).
pub struct SimWorld<'a> {
    /// All servers.
    pub servers: &'a [Server],
    /// Current time.
    pub now: Nanos,
    /// Workers per server.
    pub workers: usize,
    /// Base mean service time in ns (for rates).
    pub base_service_ns: f64,
}

impl World for SimWorld<'_> {
    /// Exact for one worker (every job's nominal time is its real time in the size model);
    /// with `P` workers, the fluid approximation `now + pending / P`.
    fn finish_time(&self, node: NodeId) -> Option<Nanos> {
        let s = &self.servers[node as usize];
        Some(self.now + s.pending_work(self.now) / self.workers as Nanos)
    }

    fn queue_len(&self, node: NodeId) -> Option<u32> {
        Some(self.servers[node as usize].load())
    }

    fn service_rate(&self, node: NodeId) -> Option<f64> {
        Some(1e9 / (self.base_service_ns * self.servers[node as usize].slowdown))
    }
}
