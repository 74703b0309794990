//! Engine limits: what an engine cannot do that the core would ask of it, and what the core
//! does instead. Named once, here; an engine declares its limits with
//! [`super::CoordinatorCore::with_limits`] and keeps no rule of its own in their place.
//!
//! **The simulator** has no limit: it does everything the core asks, at the exact time asked.
//!
//! **The store** (`tailor-store`) has one difference and no limit: its wake-up timer fires on
//! tokio's 1 ms ticks, so a parked read (C3's rate limiter) is offered again up to 1 ms after the
//! time [`super::CoordinatorCore::next_wake`] asked for (`tailor-store/tests/differential.rs`
//! names and tests it; with the simulator's driver on the same 1 ms tick every decision matches).
//!
//! **Cassandra** (`tailor-cql`'s policy, a scylla-driver `LoadBalancingPolicy`;
//! [`EngineLimits::CASSANDRA_DRIVER`]):
//! 1. *No parking.* The driver asks for a replica in `pick`, a synchronous call that must name
//!    one; a read cannot wait there. With [`EngineLimits::park`] off, a read the selector answers
//!    `Wait` for (its own attempt or a retry) is sent at once to the fallback
//!    ([`fallback_order`]: the up untried replica with the fewest attempts in flight from this
//!    coordinator, ties in replica order, primary first), with the selector told it was sent
//!    (`on_sent`), and counted in [`super::CoreStats::forced`]. Nothing is ever parked, so the
//!    park capacity and timeout are unused. The same order ranks the driver's fallback plan
//!    after the core's own retry ([`super::CoordinatorCore::fallback_order`]).
//! 2. *No timer.* The driver calls the policy only on its own events (a pick, an answer, a
//!    failure, a fact poll), so the core's wake-up runs at the first such event at or after
//!    [`super::CoordinatorCore::next_wake`]; at the request rate that is soon after.
//! 3. *No request id in answers.* The driver reports an attempt's end with the node and the
//!    attempt's latency only. The engine keeps each node's outstanding tickets with their send
//!    times and hands the core the one whose send time is nearest now − latency; a ticket the
//!    driver never reports on (a node the plan skipped for want of a connection, an attempt cut
//!    by the client timeout, a retry the driver's retry policy did not take) is reported to the
//!    core as failed after a bound, and counted.
//! 4. *Facts by polling, not piggybacked.* Cassandra's answers carry no facts; the engine polls
//!    its virtual tables. A poll goes through the freshness gate and the selector's `on_facts`
//!    ([`super::CoordinatorCore::polled`]) and is kept to ride on the node's next answer
//!    ([`super::CoordinatorCore::answered_bare`]), fresh that one time only: it passes the gate
//!    again (an equal timestamp passes), and once shown it is gone, so a later answer carries no
//!    facts and is stale. Each poll is thus applied once by `on_response` (C3), neither lost nor
//!    applied twice, as if the node had piggybacked it.
//! 5. *No hedges, no shadows.* The driver owns speculative execution and Cassandra its read
//!    repair; a `Send` the core emits outside a driver's `pick` or retry has no driver call to
//!    carry it. The engine configures neither (read repair 0, no speculation), and fails back to
//!    the core at once any such `Send` it cannot carry.
//! 6. *No service-time estimate of a job.* Cassandra schedules its own reads; what the engine
//!    knows of service times is a measurement of the node (`tailor-cql/src/service_meter.rs`:
//!    a node's mean read service time by Little's law over ReadStage polls, handed to C3 as the
//!    `service_time` fact), not the estimate a replica core gives a job.

use crate::model::NodeId;

/// What an engine can do of what the core asks (all `true`: no limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineLimits {
    /// The engine can hold a read the selector told to wait and offer it again later; when it
    /// cannot, the core sends such a read to the fallback at once (limit 1).
    pub park: bool,
    /// Replicas piggyback facts on their answers; when they do not, facts come by polling and
    /// ride on the node's next answer (limit 4).
    pub piggyback: bool,
}

impl EngineLimits {
    /// An engine that can do everything (the simulator, the store).
    pub const NONE: EngineLimits = EngineLimits { park: true, piggyback: true };

    /// The Cassandra driver's policy: no parking inside `pick`, facts by polling.
    pub const CASSANDRA_DRIVER: EngineLimits = EngineLimits { park: false, piggyback: false };
}

impl Default for EngineLimits {
    fn default() -> Self {
        EngineLimits::NONE
    }
}

/// Order `replicas` as the core falls back on them when it may not park: fewest attempts in
/// flight from this coordinator first (`in_flight`), ties in the order given (primary first).
pub fn fallback_order(replicas: &mut [NodeId], in_flight: impl Fn(NodeId) -> u32) {
    replicas.sort_by_cached_key(|&r| in_flight(r));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_is_the_least_loaded_replica_ties_in_replica_order() {
        let load = |r: NodeId| [0, 2, 1, 1, 0][r as usize];
        let mut set = [1, 2, 3, 4, 0];
        fallback_order(&mut set, load);
        assert_eq!(set, [4, 0, 2, 3, 1]);
    }
}
