//! `eft-sharded`: EFT with size-aware sharding (Euro-Par 2021): long requests only go to the
//! "large" servers, so short ones rarely queue behind them.
//!
//! A server is large when `id % replication == 0` (Euro-Par numbers servers from 1 and uses
//! `b mod k == 0`; ids here start at 0, so server 0 is large), which puts exactly one large server
//! in every ring group of `k` consecutive servers. A request is long when its estimated processing
//! time `hint.service` exceeds `omega`; when the engine has no service estimate, `hint.large`
//! decides **(choice)**. Long requests go to the large servers among the replicas; if the replica
//! set holds none (possible with virtual nodes or a down replica), to any replica **(choice)**.
//! Within the allowed replicas the choice is [`Eft`]'s, exact or estimated.

use super::eft::Eft;
use super::{Decision, ReplicaSelector, SelectorEnv, World};
use crate::facts::Response;
use crate::model::{NodeId, RequestView};
use crate::time::{from_ms, Nanos};
use serde::{Deserialize, Serialize};
use super::registry::{Fact, Needs, Registration, tunable};

/// Tunables of `eft-sharded`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EftShardedConfig {
    /// Processing time above which a request may only run on large servers, in ms (Euro-Par: 26,
    /// about 5 % of requests with its Weibull sizes).
    pub omega_ms: f64,
}

impl EftShardedConfig {
    /// Reject values the strategy cannot run with, naming the field.
    pub fn validate(&self) -> Result<(), super::c3::InvalidConfig> {
        use super::c3::check;
        check("omega_ms", self.omega_ms, ">= 0", |v| v >= 0.0)
    }
}

impl Default for EftShardedConfig {
    fn default() -> Self {
        EftShardedConfig { omega_ms: 26.0 }
    }
}

/// `eft-sharded` selector.
pub struct EftSharded {
    eft: Eft,
    omega: Nanos,
    replication: NodeId,
}

impl EftSharded {
    /// Build for one coordinator.
    pub fn new(cfg: &EftShardedConfig, env: &SelectorEnv) -> Self {
        EftSharded {
            eft: Eft::new(env),
            omega: from_ms(cfg.omega_ms),
            replication: NodeId::try_from(env.replication.max(1)).unwrap_or(NodeId::MAX),
        }
    }

    /// Whether `node` is one of the servers that take long requests.
    pub fn is_large_server(&self, node: NodeId) -> bool {
        node.is_multiple_of(self.replication)
    }

    /// Whether `req` counts as long (restricted to large servers).
    pub fn is_long(&self, req: &RequestView) -> bool {
        req.hint.service.map_or(req.hint.large, |p| p > self.omega)
    }
}

impl ReplicaSelector for EftSharded {
    fn select(&mut self, now: Nanos, req: &RequestView, replicas: &[NodeId], world: &dyn World) -> Decision {
        let restrict = self.is_long(req) && replicas.iter().any(|&r| self.is_large_server(r));
        let k = self.replication;
        debug_assert!(k >= 1, "every k-th server is large, k = {k}");
        debug_assert!(!restrict || replicas.iter().any(|&r| r.is_multiple_of(k)), "a restricted read keeps a replica");
        self.eft.pick(now, replicas, world, |r| !restrict || r.is_multiple_of(k))
    }

    fn on_sent(&mut self, now: Nanos, req: &RequestView, replica: NodeId) {
        self.eft.on_sent(now, req, replica);
    }

    fn on_response(&mut self, now: Nanos, resp: &Response) {
        self.eft.on_response(now, resp);
    }
}


/// `eft-sharded`: EFT with size-aware sharding (Euro-Par 2021).
pub const REGISTRATION: Registration = Registration {
    name: "eft-sharded",
    source: "EFT with size-aware sharding (Euro-Par 2021)",
    needs: Needs { facts: &[Fact::PendingWork, Fact::ServiceTime], size_oracle: true, ..Needs::NOTHING },
    build: |cfg, env| Box::new(EftSharded::new(&cfg.eft_sharded, env)),
    validate: |cfg| cfg.eft_sharded.validate().map_err(|e| tunable("eft_sharded", e)),
};

#[cfg(test)]
mod tests {
    use super::super::eft::tests::Finish;
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::model::SizeHint;
    use crate::time::MS;

    fn svc(ms: u64) -> SizeHint {
        SizeHint { bytes: None, service: Some(ms * MS), large: false }
    }

    #[test]
    fn long_requests_only_go_to_large_servers() {
        let mut s = EftSharded::new(&EftShardedConfig::default(), &env(6));
        // Server 3 is the large one in {2, 3, 4}, and the busiest.
        let w = Finish(vec![5, 0, 10, 500, 20, 0]);
        assert_eq!(replica_of(s.select(0, &read(1, 0, svc(30)), &[2, 3, 4], &w)), 3);
        assert_eq!(replica_of(s.select(0, &read(2, 0, svc(26)), &[2, 3, 4], &w)), 2, "omega itself is short");
        assert_eq!(replica_of(s.select(0, &read(3, 0, svc(1)), &[4, 5, 0], &w)), 5);
        // Without a service estimate, the oracle's large flag decides.
        let flagged = SizeHint { large: true, ..SizeHint::default() };
        assert_eq!(replica_of(s.select(0, &read(4, 0, flagged), &[4, 5, 0], &w)), 0);
        // No large server in the set: any replica.
        assert_eq!(replica_of(s.select(0, &read(5, 0, svc(30)), &[1, 2, 4], &w)), 1);
    }

    #[test]
    fn store_estimate_is_shared_with_eft() {
        let mut s = EftSharded::new(&EftShardedConfig { omega_ms: 5.0 }, &env(6));
        let long = read(1, 0, svc(40));
        assert_eq!(replica_of(s.select(0, &long, &[2, 3, 4], &Blind)), 3);
        s.on_sent(0, &long, 3);
        assert_eq!(replica_of(s.select(0, &read(2, 0, svc(40)), &[2, 3, 4], &Blind)), 3);
        // Short requests avoid the loaded large server.
        for i in 0..20 {
            assert_ne!(replica_of(s.select(0, &read(3 + i, 0, svc(1)), &[2, 3, 4], &Blind)), 3);
        }
    }
}
