//! Command-line arguments of `tailor node` and `tailor cluster`, and what they run.

use crate::cluster::{self, ClusterOptions};
use crate::config::{Consistency, Durability, NodeConfig};
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Errors of the node and cluster commands.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The node failed (boxed: its errors are large).
    #[error(transparent)]
    Node(Box<crate::start::NodeError>),
    /// Bad configuration.
    #[error(transparent)]
    Config(Box<crate::config::ConfigError>),
    /// Cluster management failed.
    #[error(transparent)]
    Cluster(#[from] cluster::ClusterError),
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

impl From<crate::start::NodeError> for CliError {
    fn from(e: crate::start::NodeError) -> Self {
        CliError::Node(Box::new(e))
    }
}

impl From<crate::config::ConfigError> for CliError {
    fn from(e: crate::config::ConfigError) -> Self {
        CliError::Config(Box::new(e))
    }
}

/// `tailor node`: run one node.
#[derive(Args, Debug, Clone)]
pub struct NodeArgs {
    /// Node configuration file (TOML).
    #[arg(long)]
    pub config: PathBuf,
}

/// `tailor cluster`: manage a loopback cluster.
#[derive(Args, Debug, Clone)]
pub struct ClusterArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ClusterCommand,
}

/// Consistency levels as flags.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum Level {
    /// One replica.
    One,
    /// A majority.
    Quorum,
    /// Every replica.
    All,
}

impl From<Level> for Consistency {
    fn from(l: Level) -> Self {
        match l {
            Level::One => Consistency::One,
            Level::Quorum => Consistency::Quorum,
            Level::All => Consistency::All,
        }
    }
}

/// Cluster sub-commands.
#[derive(Subcommand, Debug, Clone)]
pub enum ClusterCommand {
    /// Start N nodes on loopback ports, print their client addresses, wait for Ctrl-C.
    Up {
        /// Number of nodes.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Directory for data, configs, logs and pid files (default: a new temp dir).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Replica selector.
        #[arg(long, default_value = "c3")]
        selector: String,
        /// Local queue policy.
        #[arg(long, default_value = "fcfs")]
        local: String,
        /// Replication factor (capped at the number of nodes).
        #[arg(long, default_value_t = 3)]
        replication: usize,
        /// Worker threads per node.
        #[arg(long, default_value_t = 4)]
        workers: usize,
        /// Write consistency.
        #[arg(long, value_enum, default_value = "quorum")]
        write_consistency: Level,
        /// Read consistency.
        #[arg(long, value_enum, default_value = "one")]
        read_consistency: Level,
        /// Flush the journal to OS buffers only (survives a process crash, not power loss).
        #[arg(long)]
        no_fsync: bool,
        /// Fixed ports: node i takes clients on BASE+i, peers on BASE+1000+i, metrics on
        /// BASE+2000+i (default: free ports picked at random, printed at start).
        #[arg(long, value_name = "BASE")]
        base_port: Option<u16>,
    },
    /// Stop the nodes of a cluster started with `--dir DIR` (only processes that are its nodes).
    Down {
        /// The cluster's directory.
        #[arg(long)]
        dir: PathBuf,
    },
    /// Run an anti-entropy pass on every running node of a cluster started with `--dir DIR`
    /// (each compares Merkle trees of its token ranges with the other replicas' and writes the
    /// newest version of the keys that differ where a replica is behind); prints each report.
    Repair {
        /// The cluster's directory.
        #[arg(long)]
        dir: PathBuf,
    },
    /// Stop node N of a cluster started with `--dir DIR` if it runs, and start it again from
    /// its configuration and data (a crash test's recovery step).
    Restart {
        /// The cluster's directory.
        #[arg(long)]
        dir: PathBuf,
        /// The node's id.
        #[arg(long)]
        node: u32,
    },
}

/// Run one node until SIGINT/SIGTERM.
pub fn run_node(args: &NodeArgs) -> Result<(), CliError> {
    let cfg = NodeConfig::load(&args.config)?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(CliError::Runtime)?;
    rt.block_on(crate::start::run(cfg, shutdown_signal()))?;
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Run `cluster up`, `down` or `restart`.
pub fn run_cluster(args: &ClusterArgs) -> Result<(), CliError> {
    match &args.command {
        ClusterCommand::Up {
            nodes,
            dir,
            selector,
            local,
            replication,
            workers,
            write_consistency,
            read_consistency,
            no_fsync,
            base_port,
        } => {
            if !tailor_core::selector::is_known(selector) {
                return Err(cluster::ClusterError::Invalid(format!("unknown selector `{selector}`")).into());
            }
            if !tailor_core::local::is_known(local) {
                return Err(cluster::ClusterError::Invalid(format!("unknown local policy `{local}`")).into());
            }
            let opts = ClusterOptions {
                nodes: *nodes,
                replication: *replication,
                selector: selector.clone(),
                local: local.clone(),
                workers: *workers,
                write_consistency: (*write_consistency).into(),
                read_consistency: (*read_consistency).into(),
                durability: if *no_fsync { Durability::Buffer } else { Durability::Sync },
                niceness: 0,
                base_port: *base_port,
            };
            cluster::up(&opts, dir.clone())?;
        }
        ClusterCommand::Down { dir } => {
            let n = cluster::down(dir)?;
            eprintln!("stopped {n} nodes");
        }
        ClusterCommand::Repair { dir } => {
            for (id, done) in cluster::repair(dir)? {
                println!("node {id}: {done}");
            }
        }
        ClusterCommand::Restart { dir, node } => {
            let addr = cluster::restart(dir, *node, std::time::Duration::from_secs(30))?;
            eprintln!("node {node} runs again");
            println!("{addr}");
        }
    }
    Ok(())
}
