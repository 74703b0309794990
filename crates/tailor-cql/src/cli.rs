//! `tailor cassandra up/down`: arguments and what they run.

use crate::launch::{self, CassandraOptions, LaunchError, LocalCassandra};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// `tailor cassandra`: a real Apache Cassandra cluster on loopback.
#[derive(Args, Debug, Clone)]
pub struct CassandraArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: CassandraCommand,
}

/// The `tailor cassandra` sub-commands.
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
    },
    /// Stop the nodes of a cluster directory started by `up --dir`.
    Down {
        /// Cluster directory.
        #[arg(long)]
        dir: PathBuf,
    },
}

/// Run a `tailor cassandra` command.
pub fn run(args: &CassandraArgs) -> Result<(), LaunchError> {
    match &args.command {
        CassandraCommand::Fetch { version, cache } => {
            let lib = launch::jars::ensure(&cache.clone().unwrap_or_else(launch::jars::default_cache), version)?;
            println!("{}", lib.display());
            Ok(())
        }
        CassandraCommand::Up { nodes, heap_mb, version, cache, dir, dynamic_snitch, start_timeout_s } => {
            let opts = CassandraOptions {
                nodes: *nodes,
                heap_mb: *heap_mb,
                version: version.clone(),
                cache: cache.clone().unwrap_or_else(launch::jars::default_cache),
                dynamic_snitch: *dynamic_snitch,
                start_timeout: Duration::from_secs(*start_timeout_s),
                niceness: 0,
            };
            up(&opts, dir.clone())
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
fn up(opts: &CassandraOptions, dir: Option<PathBuf>) -> Result<(), LaunchError> {
    let temporary = dir.is_none();
    let dir = dir.unwrap_or_else(|| std::env::temp_dir().join(format!("tailor-cassandra-{}", std::process::id())));
    let stop = tailor_store::cluster::install_stop_flag();
    let outcome = LocalCassandra::start(opts, &dir).map(|mut cluster| {
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
        cluster.stop();
    });
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    outcome
}
