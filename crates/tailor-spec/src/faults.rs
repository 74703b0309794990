//! Injected failures (`cluster.faults`) and how failover is measured (`cluster.failover`):
//! the failures operators report (a slow node, a gray node, a node down that comes back cold, a
//! slow coordinator), each over an interval of virtual or wall time, read the same way by every
//! engine.

use crate::{Spec, SpecError};
use serde::{Deserialize, Serialize};

/// Longest delay a `slow-coordinator` fault may ask for, in ms: a minute (the store's knob
/// allows no more).
pub const MAX_COORDINATOR_DELAY_MS: f64 = 60_000.0;

/// Service-time multiplier of a `slow` fault when the spec names none.
pub const DEFAULT_SLOW_FACTOR: f64 = 10.0;

/// Delay a `slow-coordinator` fault adds to each request its node coordinates when the spec names
/// none, in ms.
pub const DEFAULT_COORDINATOR_DELAY_MS: f64 = 10.0;

/// What goes wrong.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// The server serves `factor` times slower (a throttled or overloaded node).
    #[default]
    Slow,
    /// The server still answers probes, but its queries hang (`hang_ms` each, or until the
    /// fault ends): a gray failure.
    Gray,
    /// The server is down (its queued and running requests are lost, new ones get no answer and
    /// time out at the client) and comes back cold: empty queue, empty cache, fresh estimates.
    #[serde(alias = "cold-start")]
    Down,
    /// The node's coordinator is slow (a throttled or overloaded coordinator, scylladb#5715):
    /// every request it coordinates waits `delay_ms` before its coordinator core takes it, while
    /// the node serves copies as a replica at its usual speed. Replica selection cannot route
    /// around it; only the client's choice of coordinator can.
    SlowCoordinator,
}

impl FaultKind {
    /// The name written in specs and results.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Slow => "slow",
            FaultKind::Gray => "gray",
            FaultKind::Down => "down",
            FaultKind::SlowCoordinator => "slow-coordinator",
        }
    }
}

/// One failure of one server during `[start_ms, end_ms)` (from the start of the run).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Fault {
    /// What goes wrong.
    pub kind: FaultKind,
    /// Server index, from 0 (`slow-coordinator`: the coordinator's index, below
    /// `cluster.clients`, or below `cluster.servers` when each server coordinates).
    pub server: usize,
    /// When it starts, in ms.
    pub start_ms: f64,
    /// When it ends, in ms.
    pub end_ms: f64,
    /// `slow` only: service-time multiplier ([`DEFAULT_SLOW_FACTOR`] when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    /// `gray` only: how long each query hangs (unset: until the fault ends).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hang_ms: Option<f64>,
    /// `down` only: after how long the coordinators' failure detector marks the server down
    /// (and stops sending it reads until it is back); unset: never, only timeouts tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detect_ms: Option<f64>,
    /// `slow-coordinator` only: how long each request waits at the coordinator, in ms
    /// ([`DEFAULT_COORDINATOR_DELAY_MS`] when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<f64>,
}

impl Fault {
    /// The service-time multiplier of a `slow` fault.
    pub fn slow_factor(&self) -> f64 {
        self.factor.unwrap_or(DEFAULT_SLOW_FACTOR)
    }

    /// The delay of a `slow-coordinator` fault, in ms.
    pub fn coordinator_delay_ms(&self) -> f64 {
        self.delay_ms.unwrap_or(DEFAULT_COORDINATOR_DELAY_MS)
    }

    /// Whether the fault strikes a coordinator rather than a replica.
    pub fn on_coordinator(&self) -> bool {
        self.kind == FaultKind::SlowCoordinator
    }
}

/// How clients time out copies during faults and how failover is measured; read only when
/// `cluster.faults` is not empty.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FailoverSpec {
    /// A copy unanswered this long fails at its coordinator, which retries another replica
    /// (the driver's read timeout), in ms.
    pub timeout_ms: f64,
    /// Sliding window of the failover measures, in ms.
    pub window_ms: f64,
    /// The faulty server has shed its reads once its share of them stays below this fraction
    /// of its fair share `1/servers`.
    pub share: f64,
    /// p99 has recovered once it stays within this factor of its pre-fault value.
    pub p99_factor: f64,
}

impl Default for FailoverSpec {
    fn default() -> Self {
        FailoverSpec { timeout_ms: 1000.0, window_ms: 100.0, share: 0.5, p99_factor: 2.0 }
    }
}

fn invalid(field: String, reason: String) -> SpecError {
    SpecError::Invalid { field, reason }
}

/// `Err` naming `field` unless `v` is finite and above `min` (or equal, when `inclusive`).
fn at_least(field: &str, v: f64, min: f64, inclusive: bool) -> Result<(), SpecError> {
    let ok = v.is_finite() && (v > min || (inclusive && v == min));
    let bound = if inclusive { "≥" } else { ">" };
    if ok {
        Ok(())
    } else {
        Err(invalid(field.into(), format!("must be {bound} {min}, got {v}")))
    }
}

impl Spec {
    /// Each fault names an existing server, a non-empty interval after the warm-up (so its
    /// pre-fault p99 is measured), only its kind's fields, and overlaps no other fault of its
    /// server.
    pub(crate) fn validate_faults(&self) -> Result<(), SpecError> {
        let c = &self.cluster;
        for (i, f) in c.faults.iter().enumerate() {
            let field = |name: &str| format!("cluster.faults[{i}].{name}");
            let (bound, of) = if f.on_coordinator() {
                (c.coordinators(), "the coordinators (cluster.clients, or cluster.servers when it is 0)")
            } else {
                (c.servers, "cluster.servers")
            };
            if f.server >= bound {
                let reason = format!("must be below {of} ({bound}), got {}", f.server);
                return Err(invalid(field("server"), reason));
            }
            at_least(&field("start_ms"), f.start_ms, self.workload.warmup_ms, false).map_err(|_| {
                invalid(
                    field("start_ms"),
                    format!(
                        "must be after workload.warmup_ms ({} ms, so that the pre-fault p99 is measured), got {}",
                        self.workload.warmup_ms, f.start_ms
                    ),
                )
            })?;
            at_least(&field("end_ms"), f.end_ms, f.start_ms, false)?;
            let only = |name: &str, given: bool, kind: FaultKind| {
                if given && f.kind != kind {
                    return Err(invalid(field(name), format!("applies to kind \"{}\" only", kind.name())));
                }
                Ok(())
            };
            only("factor", f.factor.is_some(), FaultKind::Slow)?;
            only("hang_ms", f.hang_ms.is_some(), FaultKind::Gray)?;
            only("detect_ms", f.detect_ms.is_some(), FaultKind::Down)?;
            only("delay_ms", f.delay_ms.is_some(), FaultKind::SlowCoordinator)?;
            at_least(&field("factor"), f.slow_factor(), 1.0, true)?;
            at_least(&field("delay_ms"), f.coordinator_delay_ms(), 0.0, false)?;
            if f.coordinator_delay_ms() > MAX_COORDINATOR_DELAY_MS {
                let reason = format!("must be ≤ {MAX_COORDINATOR_DELAY_MS}, got {}", f.coordinator_delay_ms());
                return Err(invalid(field("delay_ms"), reason));
            }
            f.hang_ms.map_or(Ok(()), |h| at_least(&field("hang_ms"), h, 0.0, false))?;
            f.detect_ms.map_or(Ok(()), |d| at_least(&field("detect_ms"), d, 0.0, true))?;
            let overlaps = |o: &Fault| {
                o.server == f.server
                    && o.on_coordinator() == f.on_coordinator()
                    && o.start_ms < f.end_ms
                    && f.start_ms < o.end_ms
            };
            if c.faults[..i].iter().any(overlaps) {
                return Err(invalid(field("start_ms"), format!("overlaps another fault of server {}", f.server)));
            }
        }
        if !c.faults.is_empty() {
            let m = &c.failover;
            at_least("cluster.failover.timeout_ms", m.timeout_ms, 0.0, false)?;
            at_least("cluster.failover.window_ms", m.window_ms, 0.0, false)?;
            at_least("cluster.failover.share", m.share, 0.0, false)?;
            at_least("cluster.failover.p99_factor", m.p99_factor, 1.0, true)?;
        }
        Ok(())
    }
}

/// Every fault's start and end as (time in ns, fault, whether it starts), in time order, ends
/// before starts at one time: the timetable a live engine injects the faults by.
pub fn timetable(faults: &[Fault]) -> Vec<(tailor_core::time::Nanos, &Fault, bool)> {
    use tailor_core::time::from_ms;
    let mut edges: Vec<_> =
        faults.iter().flat_map(|f| [(from_ms(f.start_ms), f, true), (from_ms(f.end_ms), f, false)]).collect();
    edges.sort_by_key(|&(at, _, starts)| (at, starts));
    edges
}

#[cfg(test)]
mod tests {
    use crate::{FaultKind, Spec};

    #[test]
    fn fault_errors_name_the_field() {
        let base = ["workload.warmup_ms=100"];
        for (set, field) in [
            ("cluster.faults=[{kind=\"slow\",server=12,start_ms=200,end_ms=300}]", "cluster.faults[0].server"),
            ("cluster.faults=[{kind=\"slow\",server=1,start_ms=50,end_ms=300}]", "cluster.faults[0].start_ms"),
            ("cluster.faults=[{kind=\"slow\",server=1,start_ms=200,end_ms=200}]", "cluster.faults[0].end_ms"),
            ("cluster.faults=[{kind=\"down\",server=1,start_ms=200,end_ms=300,factor=3}]", "cluster.faults[0].factor"),
            ("cluster.faults=[{kind=\"slow\",server=1,start_ms=200,end_ms=300,factor=0.5}]", "cluster.faults[0].factor"),
            ("cluster.faults=[{kind=\"gray\",server=1,start_ms=200,end_ms=300,hang_ms=0}]", "cluster.faults[0].hang_ms"),
            ("cluster.faults=[{kind=\"slow\",server=1,start_ms=200,end_ms=300,delay_ms=5}]", "cluster.faults[0].delay_ms"),
            (
                "cluster.faults=[{kind=\"slow-coordinator\",server=1,start_ms=200,end_ms=300,delay_ms=0}]",
                "cluster.faults[0].delay_ms",
            ),
            (
                "cluster.faults=[{kind=\"slow-coordinator\",server=1,start_ms=200,end_ms=300,delay_ms=1e6}]",
                "cluster.faults[0].delay_ms",
            ),
            (
                "cluster.faults=[{kind=\"gray\",server=1,start_ms=200,end_ms=300},{kind=\"down\",server=1,start_ms=250,end_ms=400}]",
                "cluster.faults[1].start_ms",
            ),
        ] {
            let err = Spec::default().with_overrides(&[base[0], set]).unwrap_err().to_string();
            assert!(err.contains(field), "{set}: {err}");
        }
        let share = ["cluster.faults=[{kind=\"slow\",server=1,start_ms=200,end_ms=300}]", "cluster.failover.share=0"];
        let err = Spec::default().with_overrides(&share).unwrap_err().to_string();
        assert!(err.contains("cluster.failover.share"), "{err}");
    }

    #[test]
    fn a_slow_coordinator_names_a_coordinator_and_may_overlap_its_nodes_replica_fault() {
        let w = "workload.warmup_ms=100";
        let sc = |server: usize| format!("{{kind=\"slow-coordinator\",server={server},start_ms=200,end_ms=300}}");
        let err = Spec::default()
            .with_overrides(&[w, "cluster.clients=2", &format!("cluster.faults=[{}]", sc(3))])
            .unwrap_err()
            .to_string();
        assert!(err.contains("cluster.faults[0].server") && err.contains("coordinators"), "{err}");
        let both = format!("cluster.faults=[{},{{kind=\"slow\",server=1,start_ms=250,end_ms=400}}]", sc(1));
        let spec = Spec::default().with_overrides(&[w, &both]).unwrap();
        assert_eq!(spec.cluster.faults[0].coordinator_delay_ms(), super::DEFAULT_COORDINATOR_DELAY_MS);
        let twice = format!("cluster.faults=[{},{}]", sc(1), sc(1));
        let err = Spec::default().with_overrides(&[w, &twice]).unwrap_err().to_string();
        assert!(err.contains("cluster.faults[1].start_ms"), "{err}");
    }

    #[test]
    fn faults_round_trip_and_are_absent_by_default() {
        let text = Spec::default().to_toml();
        assert!(!text.contains("faults") && !text.contains("failover"), "{text}");
        let set = "cluster.faults=[{kind=\"cold-start\",server=2,start_ms=100,end_ms=900,detect_ms=50}]";
        let spec = Spec::default().with_overrides(&[set]).unwrap();
        let back = Spec::from_toml(&spec.to_toml()).unwrap();
        assert_eq!(back.cluster.faults, spec.cluster.faults);
        assert_eq!(back.cluster.faults[0].kind, FaultKind::Down);
    }
}
