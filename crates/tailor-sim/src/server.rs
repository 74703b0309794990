//! A modelled server: the replica core (local queue, `P` worker slots, facts) plus what only a
//! model has — a service-rate state that fluctuates and an optional LRU cache.

use crate::lru::Lru;
use tailor_core::coordinator::{SendKind, Ticket};
use tailor_core::model::Tags;
use tailor_core::replica::ReplicaCore;
use tailor_core::selector::World;
use tailor_core::time::Nanos;
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

/// One server.
pub struct Server {
    /// Queue, worker slots and facts.
    pub core: ReplicaCore<Job>,
    /// Service-time multiplier of the current fluctuation state (1 = base).
    pub slowdown: f64,
    /// LRU cache, when modelled.
    pub cache: Option<Lru>,
}

impl Server {
    /// An idle server around `core`.
    pub fn new(core: ReplicaCore<Job>, cache_capacity: usize) -> Self {
        Server { core, slowdown: 1.0, cache: (cache_capacity > 0).then(|| Lru::new(cache_capacity)) }
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
