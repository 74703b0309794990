//! `mongodb-p2c`: MongoDB drivers' server selection among secondaries (the Server Selection
//! specification: the latency window, then "operation count" power of two choices), as a
//! baseline.
//!
//! Rule: the replicas whose round-trip-time average is within `local_threshold_ms` (15 ms by
//! default) of the fastest one's form the window; with one replica in it, that one; otherwise two
//! **distinct** replicas of the window are drawn uniformly and the one with fewer operations in
//! flight from this client (`operationCount`) wins, the first drawn on a tie. A replica never
//! timed is in the window.
//!
//! **Choice (an engine difference):** drivers average the round trip of their monitoring
//! heartbeats (`hello`, EWMA with weight 0.2 on the newest). Tailor's selectors see no heartbeat
//! timing, so the average here is of this coordinator's response times (`now - sent_at`), with
//! the same weight: it includes queueing, so a replica whose queue makes it more than 15 ms
//! slower also leaves the window (at light load the two agree).

use super::registry::{tunable, Needs, Registration};
use super::{Decision, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::{Ewma, Response};
use crate::model::{NodeId, RequestView};
use crate::node_map::NodeMap;
use crate::time::{from_ms, Nanos};
use serde::{Deserialize, Serialize};

/// Weight of the newest round trip in the average (the specification's 0.2).
const RTT_WEIGHT: f64 = 0.2;

/// Tunables of `mongodb-p2c`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MongodbP2cConfig {
    /// Width of the latency window above the fastest replica, in ms (`localThresholdMS`, 15).
    pub local_threshold_ms: f64,
}

impl Default for MongodbP2cConfig {
    fn default() -> Self {
        MongodbP2cConfig { local_threshold_ms: 15.0 }
    }
}

impl MongodbP2cConfig {
    /// Reject values the strategy cannot run with, naming the field.
    pub fn validate(&self) -> Result<(), super::c3::InvalidConfig> {
        super::c3::check("local_threshold_ms", self.local_threshold_ms, ">= 0", |v| v >= 0.0)
    }
}

/// One replica as this client sees it.
#[derive(Clone, Copy, Debug)]
struct Server {
    rtt: Ewma,
    operations: u32,
}

impl Default for Server {
    fn default() -> Self {
        Server { rtt: Ewma::new(RTT_WEIGHT), operations: 0 }
    }
}

/// MongoDB's server selection for one coordinator.
pub struct MongodbP2c {
    threshold: f64,
    servers: NodeMap<Server>,
    window: Vec<NodeId>,
    rng: Rng,
}

impl MongodbP2c {
    /// A selector for one coordinator.
    pub fn new(cfg: &MongodbP2cConfig, env: &SelectorEnv) -> Self {
        let p2c = MongodbP2c {
            threshold: from_ms(cfg.local_threshold_ms.max(0.0)) as f64,
            servers: NodeMap::new(),
            window: Vec::new(),
            rng: Rng::new(env.seed, 0x4D4F_4E47 + env.coordinator as u64),
        };
        debug_assert!(p2c.threshold >= 0.0 && p2c.threshold.is_finite(), "a latency window {}", p2c.threshold);
        p2c
    }

    fn rtt(&self, r: NodeId) -> Option<f64> {
        self.servers.get(r).and_then(|s| s.rtt.get())
    }

    fn operations(&self, r: NodeId) -> u32 {
        self.servers.get(r).map_or(0, |s| s.operations)
    }
}

impl ReplicaSelector for MongodbP2c {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        let fastest = replicas.iter().filter_map(|&r| self.rtt(r)).fold(f64::INFINITY, f64::min);
        let mut window = std::mem::take(&mut self.window);
        window.clear();
        window.extend(replicas.iter().copied().filter(|&r| self.rtt(r).is_none_or(|t| t <= fastest + self.threshold)));
        debug_assert!(!window.is_empty(), "the fastest replica is always in the window");
        let chosen = if window.len() == 1 {
            window[0]
        } else {
            let first = self.rng.below(window.len());
            let second = (first + 1 + self.rng.below(window.len() - 1)) % window.len();
            debug_assert!(first != second && second < window.len(), "two distinct servers of the window");
            let (a, b) = (window[first], window[second]);
            if self.operations(b) < self.operations(a) {
                b
            } else {
                a
            }
        };
        debug_assert!(self.rtt(chosen).is_none_or(|t| t <= fastest + self.threshold), "the choice is within the window");
        self.window = window;
        Decision::to(chosen)
    }

    fn on_sent(&mut self, _now: Nanos, _req: &RequestView, replica: NodeId) {
        let s = self.servers.get_or_insert_with(replica, Server::default);
        s.operations = s.operations.saturating_add(1);
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        let s = self.servers.get_or_insert_with(resp.replica, Server::default);
        s.operations = s.operations.saturating_sub(1);
        let rtt = s.rtt.update(now.saturating_sub(resp.sent_at) as f64);
        debug_assert!(rtt.is_finite() && rtt >= 0.0, "an average round trip {rtt}");
    }
}

/// `mongodb-p2c`: MongoDB's latency window and operation-count power of two choices.
pub const REGISTRATION: Registration = Registration {
    name: "mongodb-p2c",
    source: "MongoDB Server Selection specification (latency window, operationCount power of two)",
    needs: Needs::NOTHING,
    build: |cfg, env| Box::new(MongodbP2c::new(&cfg.mongodb_p2c, env)),
    validate: |cfg| cfg.mongodb_p2c.validate().map_err(|e| tunable("mongodb_p2c", e)),
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::facts::Feedback;
    use crate::model::SizeHint;
    use crate::time::MS;

    fn answered(s: &mut MongodbP2c, replica: NodeId, rtt: Nanos) {
        let a = read(1, 0, SizeHint::default());
        s.on_sent(0, &a, replica);
        s.on_response(rtt, &response(1, replica, 0, false, Feedback::default()));
    }

    #[test]
    fn a_replica_slower_than_the_window_is_left_out() {
        let mut s = MongodbP2c::new(&MongodbP2cConfig::default(), &env(3));
        answered(&mut s, 1, 2 * MS);
        answered(&mut s, 2, 10 * MS);
        answered(&mut s, 3, 40 * MS);
        for i in 0..500 {
            assert_ne!(replica_of(s.select(0, &read(i, 0, SizeHint::default()), &[1, 2, 3], &Blind)), 3);
        }
    }

    #[test]
    fn of_two_distinct_draws_fewer_operations_wins() {
        let mut s = MongodbP2c::new(&MongodbP2cConfig::default(), &env(3));
        let a = read(1, 0, SizeHint::default());
        s.on_sent(0, &a, 1);
        s.on_sent(0, &a, 1);
        // two replicas, drawn distinct: the idle one always wins
        for i in 0..200 {
            assert_eq!(replica_of(s.select(0, &read(i, 0, SizeHint::default()), &[1, 2], &Blind)), 2);
        }
        // three: the busy one wins only if never drawn, so never; the others split
        let picks: Vec<NodeId> =
            (0..3_000).map(|i| replica_of(s.select(0, &read(i, 0, SizeHint::default()), &[1, 2, 3], &Blind))).collect();
        assert!(!picks.contains(&1));
        let twos = picks.iter().filter(|&&r| r == 2).count();
        assert!((1_300..1_700).contains(&twos), "{twos}");
    }
}
