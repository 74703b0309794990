//! Reads served per node per time window during a Cassandra run, from each node's own local
//! read count of the table, sampled every window: the report's "load per server over time"
//! (a bright band hopping between nodes is herding).

use crate::facts::{self, ReadTable};
use scylla::client::session::Session;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

/// Most windows kept; a longer run keeps its first ones (an hour of 100 ms windows).
const MAX_WINDOWS: usize = 36_000;

/// A running sampler; [`LoadSampler::finish`] stops it and returns one row per node.
pub struct LoadSampler {
    rows: Arc<Mutex<Vec<Vec<u32>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl LoadSampler {
    /// Sample the nodes at `nodes` (rows in this order) every `window`.
    pub fn start(session: Arc<Session>, table: ReadTable, nodes: Vec<IpAddr>, window: Duration) -> LoadSampler {
        let rows = Arc::new(Mutex::new(vec![Vec::new(); nodes.len()]));
        let out = rows.clone();
        let task = tokio::spawn(async move {
            let hosts = host_ids(&session, &nodes);
            let mut last: Vec<Option<i64>> = vec![None; nodes.len()];
            let mut tick = tokio::time::interval(window);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                for (i, host) in hosts.iter().enumerate() {
                    let now = match host {
                        Some(h) => facts::read_count(&session, *h, &table).await.ok(),
                        None => None,
                    };
                    let served = match (last[i], now) {
                        (Some(a), Some(b)) => u32::try_from((b - a).max(0)).unwrap_or(u32::MAX),
                        _ => 0,
                    };
                    last[i] = now.or(last[i]);
                    let mut rows = out.lock().unwrap_or_else(|e| e.into_inner());
                    if rows[i].len() < MAX_WINDOWS {
                        rows[i].push(served);
                    }
                }
            }
        });
        LoadSampler { rows, task }
    }

    /// Stop sampling; rows of equal length, one per node.
    pub fn finish(self) -> Vec<Vec<u32>> {
        self.task.abort();
        let mut rows = std::mem::take(&mut *self.rows.lock().unwrap_or_else(|e| e.into_inner()));
        let shortest = rows.iter().map(Vec::len).min().unwrap_or(0);
        for r in &mut rows {
            r.truncate(shortest);
        }
        rows
    }
}

/// The host id of each node address, as the driver knows them.
fn host_ids(session: &Session, nodes: &[IpAddr]) -> Vec<Option<Uuid>> {
    let state = session.get_cluster_state();
    nodes.iter().map(|ip| state.get_nodes_info().iter().find(|n| n.address.ip() == *ip).map(|n| n.host_id)).collect()
}
