//! `tailor cassandra fetch/up/down`: arguments and what they run.

use crate::experiment::SlowNode;
use crate::launch::{self, CassandraOptions, LaunchError, LocalCassandra};
use clap::Subcommand;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The `tailor cassandra` sub-commands that manage a cluster (the CLI adds `experiment`).
#[derive(Subcommand, Debug, Clone)]
pub enum CassandraCommand {
    /// Fetch the Cassandra jars into the cache (once; `up` does it when needed).
    Fetch {
        /// Cassandra version.
        #[arg(long, default_value = launch::jars::DEFAULT_VERSION)]
        version: String,
        /// Jar cache directory (default: $TAILOR_CASSANDRA_CACHE or ~/.cache/tailor/cassandra).
        #[arg(long)]
        cache: Option<PathBuf>,
    },
    /// Start N nodes on 127.0.0.1, .2, ..., print the contact points, stop them on Ctrl-C.
    Up {
        /// Number of nodes.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Heap of each JVM in MiB.
        #[arg(long, default_value_t = 512)]
        heap_mb: u32,
        /// Cassandra version.
        #[arg(long, default_value = launch::jars::DEFAULT_VERSION)]
        version: String,
        /// Jar cache directory (default: $TAILOR_CASSANDRA_CACHE or ~/.cache/tailor/cassandra).
        #[arg(long)]
        cache: Option<PathBuf>,
        /// Cluster directory (default: a temporary one, removed when `up` ends).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Let Cassandra's dynamic snitch reorder replicas (off: the chosen node reads).
        #[arg(long)]
        dynamic_snitch: bool,
        /// Seconds each node may take to answer CQL.
        #[arg(long, default_value_t = 180)]
        start_timeout_s: u64,
        /// Slow this node down with a stop/continue duty cycle of its JVM (docs/cassandra.md).
        #[arg(long)]
        slow_node: Option<usize>,
        /// Share of each period the slowed node's JVM is stopped.
        #[arg(long, default_value_t = 0.5)]
        slow_duty: f64,
        /// Period of the duty cycle in ms.
        #[arg(long, default_value_t = 100)]
        slow_period_ms: u64,
    },
    /// Stop the nodes of a cluster directory started by `up --dir`.
    Down {
        /// Cluster directory.
        #[arg(long)]
        dir: PathBuf,
    },
}

/// Run a `tailor cassandra` command.
pub fn run(command: &CassandraCommand) -> Result<(), LaunchError> {
    match command {
        CassandraCommand::Fetch { version, cache } => {
            let lib = launch::jars::ensure(&cache.clone().unwrap_or_else(launch::jars::default_cache), version)?;
            println!("{}", lib.display());
            Ok(())
        }
        CassandraCommand::Up {
            nodes,
            heap_mb,
            version,
            cache,
            dir,
            dynamic_snitch,
            start_timeout_s,
            slow_node,
            slow_duty,
            slow_period_ms,
        } => {
            let opts = CassandraOptions {
                nodes: *nodes,
                heap_mb: *heap_mb,
                version: version.clone(),
                cache: cache.clone().unwrap_or_else(launch::jars::default_cache),
                dynamic_snitch: *dynamic_snitch,
                start_timeout: Duration::from_secs(*start_timeout_s),
                niceness: 0,
            };
            let slow = slow_node.map(|index| SlowNode {
                index,
                duty: *slow_duty,
                period: Duration::from_millis(*slow_period_ms),
            });
            up(&opts, dir.clone(), slow)
        }
        CassandraCommand::Down { dir } => {
            let n = launch::down(dir)?;
            eprintln!("stopped {n} Cassandra node(s) of {}", dir.display());
            Ok(())
        }
    }
}

/// Start the cluster, print its contact points, and keep it until Ctrl-C/SIGTERM or until every
/// node has exited; a temporary directory is removed at the end whatever happened.
fn up(opts: &CassandraOptions, dir: Option<PathBuf>, slow: Option<SlowNode>) -> Result<(), LaunchError> {
    let temporary = dir.is_none();
    let dir = dir.unwrap_or_else(|| std::env::temp_dir().join(format!("tailor-cassandra-{}", std::process::id())));
    let stop = tailor_store::cluster::install_stop_flag();
    let started = LocalCassandra::start(opts, &dir).and_then(|cluster| {
        let slowdown = slow.map(|s| cluster.slow(s.index, s.duty, s.period)).transpose()?;
        if let Some(s) = slow {
            eprintln!("{s}");
        }
        Ok((cluster, slowdown))
    });
    let outcome = started.map(|(mut cluster, slowdown)| {
        eprintln!("Cassandra cluster of {} nodes in {} (stop with Ctrl-C)", opts.nodes, dir.display());
        for addr in cluster.contact_points() {
            println!("{addr}");
        }
        let mut reported = Vec::new();
        while !stop.load(Ordering::Relaxed) && reported.len() < opts.nodes {
            for (index, how) in cluster.exited() {
                if !reported.contains(&index) {
                    eprintln!(
                        "Cassandra node {index} exited ({how}); see {}",
                        dir.join(format!("node{index}/system.log")).display()
                    );
                    reported.push(index);
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        drop(slowdown);
        cluster.stop();
    });
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    outcome
}
