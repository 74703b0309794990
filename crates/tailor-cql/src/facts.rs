//! Server facts from Cassandra's virtual tables, polled per node and handed to a
//! [`TailorPolicy`] as a periodic fact broadcast.
//!
//! Virtual tables are node-local, so each query is pinned to one node. The facts, in Tailor's
//! meanings (`tailor_core::replica::accountant`):
//! - queue length: `system_views.thread_pools` ReadStage `pending_tasks` (reads waiting, not
//!   running, as Tailor's queue length is defined);
//! - completed: ReadStage `completed_tasks` (a counter; selectors derive a rate);
//! - service time: the median local read latency of the table read, from
//!   `system_views.local_read_latency` (`p50th_ms`), 0 until the table has been read.

use crate::policy::TailorPolicy;
use scylla::client::session::Session;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::Statement;
use std::sync::Arc;
use std::time::Duration;
use tailor_core::facts::Feedback;
use uuid::Uuid;

/// The table whose read latency is the service time.
#[derive(Clone, Debug)]
pub struct ReadTable {
    /// Keyspace.
    pub keyspace: String,
    /// Table.
    pub table: String,
}

/// Facts of one node, or why they could not be read.
pub type Polled = (Uuid, Result<Feedback, String>);

/// Read the facts of every node once.
pub async fn poll(session: &Session, table: &ReadTable) -> Vec<Polled> {
    let hosts: Vec<Uuid> = session.get_cluster_state().get_nodes_info().iter().map(|n| n.host_id).collect();
    let mut out = Vec::with_capacity(hosts.len());
    for host in hosts {
        out.push((host, poll_node(session, host, table).await));
    }
    out
}

/// Poll every `every` until the task is aborted, handing each node's facts to `policy`; a node
/// that cannot be read (down, starting) is skipped until the next round.
pub fn spawn(
    session: Arc<Session>,
    policy: Arc<TailorPolicy>,
    table: ReadTable,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            for (host, facts) in poll(&session, &table).await {
                match facts {
                    Ok(f) => policy.polled(host, f),
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

async fn poll_node(session: &Session, host: Uuid, table: &ReadTable) -> Result<Feedback, String> {
    let pools =
        pinned("SELECT pending_tasks, completed_tasks FROM system_views.thread_pools WHERE name = 'ReadStage'", host);
    let rows = session.query_unpaged(pools, &[]).await.map_err(|e| e.to_string())?;
    let rows = rows.into_rows_result().map_err(|e| e.to_string())?;
    let (pending, completed): (i32, i64) = rows.first_row().map_err(|e| e.to_string())?;
    let reads = local_reads(session, host, table).await?;
    Ok(Feedback {
        queue_len: pending.max(0) as u32,
        completed: completed.max(0) as u64,
        service_time: if reads.count > 0 { (reads.p50_ms * 1e6) as u64 } else { 0 },
        ..Feedback::default()
    })
}
