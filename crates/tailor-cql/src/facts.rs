//! Server facts from Cassandra's virtual tables, polled per node and handed to a
//! [`TailorPolicy`] as a periodic fact broadcast.
//!
//! Virtual tables are node-local, so each query is pinned to one node. The facts, in Tailor's
//! meanings (`tailor_core::replica::accountant`):
//! - queue length: `system_views.thread_pools` ReadStage `pending_tasks` (reads waiting, not
//!   running, as Tailor's queue length is defined);
//! - completed: ReadStage `completed_tasks` (a counter; selectors derive a rate);
//! - service time: the mean time a read executes, by Little's law over ReadStage's
//!   `active_tasks` and `completed_tasks` across polls ([`ServiceMeter`]), 0 until reads
//!   completed between two polls.

use crate::policy::TailorPolicy;
use crate::service_meter::ServiceMeter;
use scylla::client::session::Session;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::Statement;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tailor_core::facts::Feedback;
use tailor_core::time::Nanos;
use uuid::Uuid;

/// The table whose read latency is the service time.
#[derive(Clone, Debug)]
pub struct ReadTable {
    /// Keyspace.
    pub keyspace: String,
    /// Table.
    pub table: String,
}

/// One node's ReadStage at one poll.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStage {
    /// Reads waiting for a thread.
    pub pending: u32,
    /// Reads executing.
    pub active: u32,
    /// Reads done since the node started.
    pub completed: u64,
}

/// One node's ReadStage, or why it could not be read.
pub type Polled = (Uuid, Result<ReadStage, String>);

/// Read every node's ReadStage once.
pub async fn poll(session: &Session) -> Vec<Polled> {
    let hosts: Vec<Uuid> = session.get_cluster_state().get_nodes_info().iter().map(|n| n.host_id).collect();
    let mut out = Vec::with_capacity(hosts.len());
    for host in hosts {
        out.push((host, read_stage(session, host).await));
    }
    out
}

/// Each node's facts from its polls: the stage's counts as they are, the service time from the
/// node's [`ServiceMeter`].
#[derive(Default)]
pub struct FactsFromPolls {
    meters: HashMap<Uuid, ServiceMeter>,
}

impl FactsFromPolls {
    /// Node `host`'s facts from its stage polled at `at` (ns on a monotonic clock).
    pub fn feedback(&mut self, host: Uuid, at: Nanos, stage: ReadStage) -> Feedback {
        let service_time = self.meters.entry(host).or_default().sample(at, stage.active, stage.completed);
        Feedback { queue_len: stage.pending, completed: stage.completed, service_time, ..Feedback::default() }
    }
}

/// Poll every `every` until the task is aborted, handing each node's facts to `policy`; a node
/// that cannot be read (down, starting) is skipped until the next round.
pub fn spawn(session: Arc<Session>, policy: Arc<TailorPolicy>, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (start, mut facts) = (Instant::now(), FactsFromPolls::default());
        loop {
            tick.tick().await;
            for (host, stage) in poll(&session).await {
                match stage {
                    Ok(stage) => {
                        let at = start.elapsed().as_nanos() as Nanos;
                        policy.polled(host, facts.feedback(host, at, stage));
                    }
                    Err(e) => tracing::debug!(%host, error = %e, "fact poll failed"),
                }
            }
        }
    })
}

/// A node's local reads of a table: Cassandra's count and median time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LocalReads {
    /// Reads served.
    pub count: i64,
    /// Median local read latency in ms (Cassandra's recent-reads histogram; 0 before any read).
    pub p50_ms: f64,
}

/// Node `host`'s local reads of `table`, from `system_views.local_read_latency`.
pub async fn local_reads(session: &Session, host: Uuid, table: &ReadTable) -> Result<LocalReads, String> {
    let cql = "SELECT count, p50th_ms FROM system_views.local_read_latency WHERE keyspace_name = ? AND table_name = ?";
    let rows =
        session.query_unpaged(pinned(cql, host), (&table.keyspace, &table.table)).await.map_err(|e| e.to_string())?;
    let rows = rows.into_rows_result().map_err(|e| e.to_string())?;
    let (count, p50_ms): (i64, f64) = rows.maybe_first_row().map_err(|e| e.to_string())?.unwrap_or((0, 0.0));
    Ok(LocalReads { count, p50_ms })
}

/// How many local reads of `table` node `host` has served (Cassandra's own count).
pub async fn read_count(session: &Session, host: Uuid, table: &ReadTable) -> Result<i64, String> {
    Ok(local_reads(session, host, table).await?.count)
}

fn pinned(cql: &str, host: Uuid) -> Statement {
    let mut s = Statement::new(cql);
    s.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(NodeIdentifier::HostId(host), None)));
    s.set_request_timeout(Some(Duration::from_secs(1)));
    s
}

/// Node `host`'s ReadStage now.
pub async fn read_stage(session: &Session, host: Uuid) -> Result<ReadStage, String> {
    let cql =
        "SELECT pending_tasks, active_tasks, completed_tasks FROM system_views.thread_pools WHERE name = 'ReadStage'";
    let rows = session.query_unpaged(pinned(cql, host), &[]).await.map_err(|e| e.to_string())?;
    let rows = rows.into_rows_result().map_err(|e| e.to_string())?;
    let (pending, active, completed): (i32, i32, i64) = rows.first_row().map_err(|e| e.to_string())?;
    let count = |n: i32| n.max(0) as u32;
    Ok(ReadStage { pending: count(pending), active: count(active), completed: completed.max(0) as u64 })
}
