//! The failover figures of a Cassandra run with faults, computed by the simulator's own code
//! (`tailor_spec::failover`): every read attempt the driver made, with the node it went to
//! (`crate::attempts`), and every read the bench measured.
//!
//! Unlike the store's live runs no read is left out: the driver picks each read's coordinator
//! among the replicas, so a read sent to a dead node is the replica selection's doing, and it
//! counts (as in the simulator).

use crate::attempts::{Attempt, AttemptEnd};
use std::net::SocketAddr;
use std::time::Instant;
use tailor_bench::record::ReadRecord;
use tailor_core::results::Failover;
use tailor_core::time::Nanos;
use tailor_spec::failover::FailoverLog;
use tailor_spec::Spec;

/// The failover section of a run of `spec` on `nodes` (CQL addresses, node 0 first) whose time
/// 0 was `epoch`: attempts to a node not in `nodes` are left out.
pub fn figures(
    spec: &Spec,
    epoch: Instant,
    nodes: &[SocketAddr],
    attempts: &[Attempt],
    reads: &[ReadRecord],
) -> Failover {
    let mut log = FailoverLog::new(spec);
    for a in attempts {
        let Some(node) = nodes.iter().position(|n| n.ip() == a.node.ip()) else { continue };
        let at = a.sent.saturating_duration_since(epoch).as_nanos() as Nanos;
        log.sent(at, node as u32);
        if matches!(a.end, AttemptEnd::TimedOut | AttemptEnd::Unheard) {
            log.timed_out(at, node as u32);
        }
    }
    for r in reads {
        log.read(r.intended, r.latency, r.failed);
    }
    log.finish(spec, nodes.len(), true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tailor_spec::{Fault, FaultKind};

    #[test]
    fn a_dead_node_is_shed_once_the_driver_stops_sending_it_reads() {
        let mut spec = Spec::default();
        spec.workload.warmup_ms = 500.0;
        spec.cluster.faults =
            vec![Fault { kind: FaultKind::Down, server: 0, start_ms: 1000.0, end_ms: 2000.0, ..Fault::default() }];
        let nodes: Vec<SocketAddr> = (1..=3).map(|i| format!("127.0.0.{i}:9042").parse().unwrap()).collect();
        let epoch = Instant::now();
        let at = |ms: u64| epoch + Duration::from_millis(ms);
        // one read a ms, round robin over the nodes, but none to node 0 from 1,100 ms to 2,000 ms;
        // the attempts to node 0 in its first 100 ms break (and are retried on node 1)
        let mut attempts = Vec::new();
        let mut reads = Vec::new();
        for ms in 0..3000u64 {
            let mut node = (ms % 3) as usize;
            let dead = (1000..2000).contains(&ms);
            if node == 0 && dead {
                if ms < 1100 {
                    attempts.push(Attempt { sent: at(ms), node: nodes[0], end: AttemptEnd::Failed });
                }
                node = 1;
            }
            attempts.push(Attempt { sent: at(ms), node: nodes[node], end: AttemptEnd::Answered });
            let slow = dead && ms < 1100;
            let latency = if slow { 20_000_000 } else { 2_000_000 };
            reads.push(ReadRecord { intended: ms * 1_000_000, latency, node: 0, failed: false });
        }
        reads.push(ReadRecord { intended: 1_500_000_000, latency: 2_000_000_000, node: 0, failed: true });
        attempts.push(Attempt { sent: at(1500), node: "10.0.0.1:9042".parse().unwrap(), end: AttemptEnd::Unheard });
        let f = figures(&spec, epoch, &nodes, &attempts, &reads);
        let o = &f.faults[0];
        assert_eq!(o.failed, 1, "{o:?}");
        assert_eq!(o.timeouts, 0, "broken connections are not timeouts, an unknown node is left out");
        let shed = o.shed_ms.expect("shed");
        assert!(shed > 0.0 && shed <= 110.0, "{o:?}");
        assert_eq!(o.p99_before_ms, 2.0);
        assert!(o.p99_during_ms >= 20.0, "{o:?}");
        assert_eq!(f.timeline.len(), 30, "100 ms windows over 3 s");
        assert!(f.timeline[15].share[0] == 0.0 && f.timeline[25].share[0] > 0.3, "{:?}", f.timeline[25]);
    }
}
