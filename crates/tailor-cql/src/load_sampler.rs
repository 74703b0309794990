//! Reads served per node per time window during a Cassandra run, from each node's own local
//! read count of the table, sampled every window: the report's "load per server over time"
//! (a bright band hopping between nodes is herding). The same polls read each node's ReadStage
//! for its mean read service time over the run ([`RunMean`]).

use crate::facts::{self, ReadTable};
use crate::service_meter::RunMean;
use scylla::client::session::Session;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tailor_core::time::Nanos;
use uuid::Uuid;

/// Most windows kept; a longer run keeps its first ones (an hour of 100 ms windows).
const MAX_WINDOWS: usize = 36_000;

/// A running sampler; [`LoadSampler::finish`] stops it and returns what it saw.
pub struct LoadSampler {
    seen: Arc<Mutex<Sampled>>,
    task: tokio::task::JoinHandle<()>,
}

/// What a sampler saw, one entry per node in the order it was given.
#[derive(Clone, Debug, Default)]
pub struct Sampled {
    /// Reads served per window, rows of equal length.
    pub reads: Vec<Vec<u32>>,
    /// Each node's mean read service time over the run.
    pub service: Vec<RunMean>,
}

impl LoadSampler {
    /// Sample the nodes at `nodes` (rows in this order) every `window`.
    pub fn start(session: Arc<Session>, table: ReadTable, nodes: Vec<IpAddr>, window: Duration) -> LoadSampler {
        let n = nodes.len();
        let seen = Arc::new(Mutex::new(Sampled { reads: vec![Vec::new(); n], service: vec![RunMean::default(); n] }));
        let out = seen.clone();
        let task = tokio::spawn(async move {
            let (hosts, start) = (host_ids(&session, &nodes), Instant::now());
            let mut last: Vec<Option<i64>> = vec![None; n];
            let mut tick = tokio::time::interval(window);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                for (i, host) in hosts.iter().enumerate() {
                    let (now, stage) = match *host {
                        Some(h) => (
                            facts::read_count(&session, h, &table).await.ok(),
                            facts::read_stage(&session, h).await.ok(),
                        ),
                        None => (None, None),
                    };
                    let served = match (last[i], now) {
                        (Some(a), Some(b)) => u32::try_from((b - a).max(0)).unwrap_or(u32::MAX),
                        _ => 0,
                    };
                    last[i] = now.or(last[i]);
                    let mut seen = out.lock().unwrap_or_else(|e| e.into_inner());
                    if seen.reads[i].len() < MAX_WINDOWS {
                        seen.reads[i].push(served);
                    }
                    if let Some(s) = stage {
                        seen.service[i].sample(start.elapsed().as_nanos() as Nanos, s.active, s.completed);
                    }
                }
            }
        });
        LoadSampler { seen, task }
    }

    /// Stop sampling and return what it saw, read rows cut to equal length.
    pub fn finish(self) -> Sampled {
        self.task.abort();
        let mut seen = std::mem::take(&mut *self.seen.lock().unwrap_or_else(|e| e.into_inner()));
        let shortest = seen.reads.iter().map(Vec::len).min().unwrap_or(0);
        for r in &mut seen.reads {
            r.truncate(shortest);
        }
        seen
    }
}

/// The host id of each node address, as the driver knows them.
fn host_ids(session: &Session, nodes: &[IpAddr]) -> Vec<Option<Uuid>> {
    let state = session.get_cluster_state();
    nodes.iter().map(|ip| state.get_nodes_info().iter().find(|n| n.address.ip() == *ip).map(|n| n.host_id)).collect()
}
