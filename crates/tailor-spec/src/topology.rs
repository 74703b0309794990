//! Racks or datacenters with a delay between them (`cluster.topology`): the fifth failure
//! scenario of docs/failures.md, read the same way by the simulator and the store.

use crate::{Spec, SpecError};
use serde::{Deserialize, Serialize};

/// Servers and coordinators spread over racks; a message between two racks takes
/// `cross_delay_ms` more than `cluster.network_delay_ms`. Node (or coordinator) `i` sits in
/// rack `i mod racks` (`tailor_core::topology::rack_of`). Absent (0 racks) by default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TopologySpec {
    /// Number of racks (or datacenters); 0 or 1: one rack, no cross delay.
    pub racks: usize,
    /// Extra one-way delay of a message between two racks, in ms.
    pub cross_delay_ms: f64,
}

impl TopologySpec {
    /// Whether messages between racks take longer than within one.
    pub fn is_split(&self) -> bool {
        self.racks > 1 && self.cross_delay_ms > 0.0
    }
}

impl Spec {
    /// The selectors' tunables with the static facts of `cluster.topology` they read filled in
    /// (`rack-aware`'s racks), as every engine builds them.
    pub fn selector_config(&self) -> tailor_core::selector::SelectorConfig {
        let mut cfg = self.selector.clone();
        if cfg.rack_aware.racks == 0 {
            cfg.rack_aware.racks = self.cluster.topology.racks;
        }
        cfg
    }

    /// At most one rack per server, a finite non-negative delay, and a delay only with racks.
    pub(crate) fn validate_topology(&self) -> Result<(), SpecError> {
        let t = &self.cluster.topology;
        let invalid = |field: &str, reason: String| SpecError::Invalid { field: field.into(), reason };
        if t.racks > self.cluster.servers {
            let reason = format!("must be at most cluster.servers ({}), got {}", self.cluster.servers, t.racks);
            return Err(invalid("cluster.topology.racks", reason));
        }
        if !(t.cross_delay_ms.is_finite() && t.cross_delay_ms >= 0.0) {
            return Err(invalid("cluster.topology.cross_delay_ms", format!("must be ≥ 0, got {}", t.cross_delay_ms)));
        }
        if t.cross_delay_ms > 0.0 && t.racks < 2 {
            let reason = format!("needs cluster.topology.racks ≥ 2, got {}", t.racks);
            return Err(invalid("cluster.topology.cross_delay_ms", reason));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::Spec;

    #[test]
    fn topology_is_absent_by_default_and_round_trips() {
        assert!(!Spec::default().to_toml().contains("topology"));
        let spec = Spec::default().with_overrides(&["cluster.topology={racks=2,cross_delay_ms=5.0}"]).unwrap();
        let back = Spec::from_toml(&spec.to_toml()).unwrap();
        assert_eq!(back.cluster.topology, spec.cluster.topology);
        assert!(back.cluster.topology.is_split());
    }

    #[test]
    fn topology_errors_name_the_field() {
        for (set, field) in [
            ("cluster.topology={racks=13}", "cluster.topology.racks"),
            ("cluster.topology={racks=2,cross_delay_ms=-1}", "cluster.topology.cross_delay_ms"),
            ("cluster.topology={racks=1,cross_delay_ms=3}", "cluster.topology.cross_delay_ms"),
        ] {
            let err = Spec::default().with_overrides(&[set]).unwrap_err().to_string();
            assert!(err.contains(field), "{set}: {err}");
        }
    }
}
