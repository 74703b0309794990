//! `p2c-peak-ewma`: power of two choices over a peak-EWMA of round-trip times, the production
//! load balancer of Finagle and Linkerd, as a baseline.
//!
//! Per peer, `cost` follows the RTTs this coordinator measures (`rtt = now - sent_at`, on every
//! response): a sample above the cost replaces it at once (the peak), a lower one is blended in
//! as `cost * w + rtt * (1 - w)` with `w = exp(-dt / tau)`, `dt` being the time since the cost was
//! last touched. As in Finagle, reading the cost first decays it towards 0 over the idle time (an
//! observation of 0), so a peer that was slow long ago is tried again. Load is
//! `cost * (in_flight + 1)`; two distinct replicas are drawn uniformly and the lower load wins
//! (the first drawn on a tie, itself a random choice). A peer never heard from costs 0
//! **(choice: Finagle's extra penalty for unknown peers with requests in flight is not applied)**.

use super::{Decision, Reach, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::Response;
use crate::model::{NodeId, RequestView};
use crate::node_map::NodeMap;
use crate::time::{from_ms, Nanos};
use serde::{Deserialize, Serialize};
use super::registry::{Needs, Registration, tunable};

/// Tunables of `p2c-peak-ewma`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct P2cConfig {
    /// Decay time constant of the RTT average, in ms (Finagle and Linkerd: 10 000).
    pub tau_ms: f64,
}

impl P2cConfig {
    /// Reject values the strategy cannot run with, naming the field.
    pub fn validate(&self) -> Result<(), super::c3::InvalidConfig> {
        use super::c3::check;
        check("tau_ms", self.tau_ms, "> 0", |v| v > 0.0)
    }
}

impl Default for P2cConfig {
    fn default() -> Self {
        P2cConfig { tau_ms: 10_000.0 }
    }
}

/// One peer's peak-EWMA state.
#[derive(Clone, Copy, Debug, Default)]
struct Peer {
    /// Peak-EWMA of the RTT, ns.
    cost: f64,
    /// When `cost` was last updated.
    stamp: Nanos,
    /// Requests this coordinator has in flight there.
    in_flight: u32,
}

impl Peer {
    /// Fold an RTT sample (0 = just decay) observed at `now`.
    fn observe(&mut self, now: Nanos, rtt: f64, tau: f64) {
        let dt = now.saturating_sub(self.stamp) as f64;
        let w = (-dt / tau).exp();
        debug_assert!(rtt.is_finite() && rtt >= 0.0 && tau > 0.0, "rtt {rtt}, tau {tau}");
        debug_assert!((0.0..=1.0).contains(&w), "a decay weight {w} is a fraction");
        self.cost = if rtt > self.cost { rtt } else { self.cost * w + rtt * (1.0 - w) };
        debug_assert!(self.cost >= rtt * (1.0 - 1e-12), "the peak EWMA {} is at least the new sample {rtt}", self.cost);
        self.stamp = now;
        debug_assert!(self.cost.is_finite() && self.cost >= 0.0, "the peak EWMA is finite and not negative: {}", self.cost);
    }
}

/// `p2c-peak-ewma` selector.
pub struct P2cPeakEwma {
    /// Per server this coordinator has sent to or heard from.
    peers: NodeMap<Peer>,
    tau: f64,
    rng: Rng,
}

impl P2cPeakEwma {
    /// Build for one coordinator.
    pub fn new(cfg: &P2cConfig, env: &SelectorEnv) -> Self {
        P2cPeakEwma {
            peers: NodeMap::new(),
            // A zero or negative tau would divide by zero: keep it at least 1 ns.
            tau: from_ms(cfg.tau_ms).max(1) as f64,
            rng: Rng::new(env.seed, 0x0050_3243 + env.coordinator as u64),
        }
    }

    fn peer(&mut self, node: NodeId) -> &mut Peer {
        self.peers.get_or_insert_with(node, Peer::default)
    }

    /// The peer's current load, `cost * (in_flight + 1)`, after decaying its cost to `now`. A
    /// peer without state has load 0 and gets none: decaying a cost of 0 leaves it 0 and only
    /// moves its stamp, and the stamp of a cost of 0 is never read (the sample that raises the
    /// cost is a peak, taken as is). So at scale the peers a coordinator only looks at cost no
    /// memory.
    pub fn load(&mut self, now: Nanos, node: NodeId) -> f64 {
        let tau = self.tau;
        let Some(p) = self.peers.get_mut(node) else { return 0.0 };
        p.observe(now, 0.0, tau);
        let load = p.cost * (f64::from(p.in_flight) + 1.0);
        debug_assert!(load.is_finite() && load >= 0.0, "a load is a cost times a count: {load}");
        load
    }
}

impl ReplicaSelector for P2cPeakEwma {
    fn select(&mut self, now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        match replicas.len() {
            0 => Decision::Wait { retry_at: None },
            1 => Decision::to(replicas[0]),
            n => {
                let a = self.rng.below(n);
                let mut b = self.rng.below(n - 1);
                if b >= a {
                    b += 1;
                }
                debug_assert!(a != b && b < n, "two distinct replicas: {a}, {b} of {n}");
                let (ra, rb) = (replicas[a], replicas[b]);
                let (la, lb) = (self.load(now, ra), self.load(now, rb));
                Decision::to(if lb < la { rb } else { ra })
            }
        }
    }

    fn footprint(&self, servers: &[NodeId], reach: Reach, out: &mut dyn FnMut(*const u8)) -> bool {
        self.peers.footprint(servers, reach, out);
        true
    }

    fn on_sent(&mut self, _now: Nanos, _req: &RequestView, replica: NodeId) {
        self.peer(replica).in_flight += 1;
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        let tau = self.tau;
        let p = self.peer(resp.replica);
        let before = p.in_flight;
        p.in_flight = p.in_flight.saturating_sub(1);
        debug_assert!(p.in_flight <= before, "in flight never underflows");
        p.observe(now, now.saturating_sub(resp.sent_at) as f64, tau);
    }
}


/// `p2c-peak-ewma`: power of two choices with peak EWMA latency (Finagle, Linkerd).
pub const REGISTRATION: Registration = Registration {
    name: "p2c-peak-ewma",
    source: "power of two choices with peak EWMA latency (Finagle, Linkerd)",
    needs: Needs::NOTHING,
    build: |cfg, env| Box::new(P2cPeakEwma::new(&cfg.p2c_peak_ewma, env)),
    validate: |cfg| cfg.p2c_peak_ewma.validate().map_err(|e| tunable("p2c_peak_ewma", e)),
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::facts::Feedback;
    use crate::model::SizeHint;
    use crate::time::{MS, SEC};

    #[test]
    fn peak_then_exponential_decay() {
        let mut s = P2cPeakEwma::new(&P2cConfig::default(), &env(3));
        s.on_response(10 * MS, &response(1, 0, 0, false, Feedback::default()));
        assert!((s.load(10 * MS, 0) - 10e6).abs() < 1e-6, "first sample is the peak");
        // A lower sample 10 s later: w = e^-1.
        s.on_response(10 * SEC + 10 * MS, &response(2, 0, 10 * SEC + 8 * MS, false, Feedback::default()));
        let w = (-1.0f64).exp();
        let expected = 10e6 * w + 2e6 * (1.0 - w);
        assert!((s.load(10 * SEC + 10 * MS, 0) - expected).abs() < 1.0);
        // A higher one replaces it.
        s.on_response(11 * SEC, &response(3, 0, 11 * SEC - 30 * MS, false, Feedback::default()));
        assert!((s.load(11 * SEC, 0) - 30e6).abs() < 1e-6);
        // Idle time decays it towards 0.
        assert!((s.load(21 * SEC, 0) - 30e6 * w).abs() < 1.0);
    }

    #[test]
    fn lower_load_of_two_wins() {
        let mut s = P2cPeakEwma::new(&P2cConfig::default(), &env(3));
        let h = SizeHint::default();
        // Costs: 0 -> 4 ms, 1 -> 2 ms, 2 -> 3 ms.
        for (id, r, rtt) in [(1, 0, 4), (2, 1, 2), (3, 2, 3)] {
            s.on_response(SEC, &response(id, r, SEC - rtt * MS, false, Feedback::default()));
        }
        // With two replicas both are always drawn: the cheaper one wins.
        for i in 0..10 {
            assert_eq!(replica_of(s.select(SEC, &read(i, SEC, h), &[0, 1], &Blind)), 1);
        }
        // In-flight requests multiply the cost: 1 has 2 in flight -> 6 ms > 4 ms.
        s.on_sent(SEC, &read(20, SEC, h), 1);
        s.on_sent(SEC, &read(21, SEC, h), 1);
        assert_eq!(replica_of(s.select(SEC, &read(22, SEC, h), &[0, 1], &Blind)), 0);
        // Of three, the most loaded (1: 6 ms) is never chosen; the others are.
        let mut seen = [0; 3];
        for i in 0..300 {
            seen[replica_of(s.select(SEC, &read(100 + i, SEC, h), &[0, 1, 2], &Blind)) as usize] += 1;
        }
        assert_eq!(seen[1], 0, "{seen:?}");
        assert!(seen[0] > 50 && seen[2] > 50, "{seen:?}");
        // Unknown peers cost 0 and win.
        let mut t = P2cPeakEwma::new(&P2cConfig::default(), &env(3));
        t.on_response(SEC, &response(1, 0, 0, false, Feedback::default()));
        assert_eq!(replica_of(t.select(SEC, &read(1, SEC, h), &[0, 2], &Blind)), 2);
    }
}
