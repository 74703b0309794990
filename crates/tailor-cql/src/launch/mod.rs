//! `tailor cassandra up/down`: a real Apache Cassandra cluster of N nodes on loopback.
//!
//! `jars.rs` fetches the server's class path once; `config.rs` writes what each node starts
//! with; `node.rs` starts, waits for and identifies one JVM. Nodes join one at a time (Cassandra
//! refuses concurrent bootstraps), each waited for until it answers CQL.

pub mod config;
pub mod jars;
pub mod node;
pub mod slow;

use node::Node;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Errors starting or stopping a local Cassandra cluster.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was attempted.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// Java or Maven is missing.
    #[error("{0}")]
    MissingTool(String),
    /// Maven could not fetch the jars.
    #[error("{0}")]
    Fetch(String),
    /// A node did not answer CQL in time.
    #[error("Cassandra node {0} did not answer CQL in time (see {1})")]
    StartTimeout(usize, PathBuf),
    /// A node's JVM exited while starting.
    #[error("Cassandra node {0} exited while starting ({1}; see {2})")]
    NodeExited(usize, String, PathBuf),
    /// Bad options.
    #[error("{0}")]
    Invalid(String),
}

impl LaunchError {
    /// A mapper from an I/O error to [`LaunchError::Io`] saying what was attempted.
    pub fn io(what: String) -> impl FnOnce(std::io::Error) -> LaunchError {
        move |source| LaunchError::Io { what, source }
    }
}

/// Options of `tailor cassandra up`.
#[derive(Clone, Debug)]
pub struct CassandraOptions {
    /// Number of nodes (1..=9).
    pub nodes: usize,
    /// Heap of each JVM in MiB.
    pub heap_mb: u32,
    /// Cassandra version (a `cassandra-all` version in Maven's central repository).
    pub version: String,
    /// Jar cache directory.
    pub cache: PathBuf,
    /// Whether Cassandra's dynamic snitch reorders replicas on the server.
    pub dynamic_snitch: bool,
    /// How long each node may take to answer CQL.
    pub start_timeout: Duration,
    /// CPU niceness of the JVMs (0: as this process). Experiments lower the nodes' priority so
    /// that on one shared machine the load generator keeps its schedule first, as for the store.
    pub niceness: u8,
}

impl Default for CassandraOptions {
    fn default() -> Self {
        CassandraOptions {
            nodes: 3,
            heap_mb: 512,
            version: jars::DEFAULT_VERSION.to_string(),
            cache: jars::default_cache(),
            dynamic_snitch: false,
            start_timeout: Duration::from_secs(180),
            niceness: 0,
        }
    }
}

/// Most nodes `up` starts: each JVM needs about a GiB of memory and a share of the cores.
pub const MAX_NODES: usize = 9;

impl CassandraOptions {
    fn validate(&self) -> Result<(), LaunchError> {
        if !(1..=MAX_NODES).contains(&self.nodes) {
            return Err(LaunchError::Invalid(format!("--nodes {} is not within 1..={MAX_NODES}", self.nodes)));
        }
        if !(256..=32_768).contains(&self.heap_mb) {
            return Err(LaunchError::Invalid(format!("--heap-mb {} is not within 256..=32768", self.heap_mb)));
        }
        Ok(())
    }
}

/// A running local cluster; dropping it stops every JVM (SIGTERM, then SIGKILL after 10 s).
pub struct LocalCassandra {
    dir: PathBuf,
    nodes: Vec<Node>,
    /// What the nodes started with, so that one can be started again the same way.
    opts: CassandraOptions,
    /// The server's class path.
    lib: PathBuf,
}

impl LocalCassandra {
    /// Fetch the jars if needed, then start `opts.nodes` nodes in `dir`, one at a time, each
    /// waited for until it answers CQL. On failure every node started so far is stopped.
    pub fn start(opts: &CassandraOptions, dir: &Path) -> Result<LocalCassandra, LaunchError> {
        opts.validate()?;
        jars::require_tool("java", "-version", "Java 11 or 17 is needed to run Cassandra")?;
        let lib = jars::ensure(&opts.cache, &opts.version)?;
        std::fs::create_dir_all(dir).map_err(LaunchError::io(format!("create {}", dir.display())))?;
        let mut cluster =
            LocalCassandra { dir: dir.to_path_buf(), nodes: Vec::new(), opts: opts.clone(), lib: lib.clone() };
        for index in 0..opts.nodes {
            let node = cluster.spawn_ready(index)?;
            cluster.nodes.push(node);
        }
        Ok(cluster)
    }

    /// Start node `index` with the cluster's settings and wait until it answers CQL.
    fn spawn_ready(&self, index: usize) -> Result<Node, LaunchError> {
        let started = Instant::now();
        let o = &self.opts;
        let settings = config::NodeSettings { index, dynamic_snitch: o.dynamic_snitch, num_tokens: 16 };
        let mut node = node::spawn(&self.dir, &settings, o.heap_mb, o.niceness, &self.lib)?;
        if let Err(e) = node::wait_ready(&mut node, started + o.start_timeout) {
            let _ = node.child.kill();
            let _ = node.child.wait();
            return Err(e);
        }
        eprintln!("cassandra node {index} answers on {} after {:.0?}", node.addr, started.elapsed());
        Ok(node)
    }

    /// Start node `index` again after [`LocalCassandra::kill`], in its own directory with its
    /// settings (it replays its commit log and rejoins the ring), and wait until it answers CQL.
    pub fn restart(&mut self, index: usize) -> Result<(), LaunchError> {
        let n = self.nodes.get_mut(index).ok_or_else(|| {
            LaunchError::Invalid(format!("node {index}: the cluster has nodes 0..{}", self.opts.nodes))
        })?;
        if matches!(n.child.try_wait(), Ok(None)) {
            return Err(LaunchError::Invalid(format!("node {index} still runs: kill it before restarting it")));
        }
        let node = self.spawn_ready(index)?;
        self.nodes[index] = node;
        Ok(())
    }

    /// The CQL contact points, node 0 first.
    pub fn contact_points(&self) -> Vec<std::net::SocketAddr> {
        self.nodes.iter().map(|n| n.addr).collect()
    }

    /// The JVMs' process ids, node 0 first (the bench reads their scheduler counters).
    pub fn pids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.child.id()).collect()
    }

    /// The cluster directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stop node `index` (SIGKILL: a crash, not a drain).
    pub fn kill(&mut self, index: usize) {
        let n = &mut self.nodes[index];
        let _ = n.child.kill();
        let _ = n.child.wait();
    }

    /// Slow node `index` down with a stop/continue duty cycle (see [`slow`]).
    pub fn slow(&self, index: usize, duty: f64, period: Duration) -> Result<slow::Slowdown, LaunchError> {
        let node = self.nodes.get(index).ok_or_else(|| {
            LaunchError::Invalid(format!("--slow-node {index}: the cluster has nodes 0..{}", self.nodes.len()))
        })?;
        slow::Slowdown::start(node.child.id() as i32, duty, period).map_err(LaunchError::Invalid)
    }

    /// Indexes of nodes whose JVM has exited, with how it ended.
    pub fn exited(&mut self) -> Vec<(usize, String)> {
        self.nodes.iter_mut().filter_map(|n| Some((n.index, n.child.try_wait().ok()??.to_string()))).collect()
    }

    /// Stop every JVM and remove the pid files.
    pub fn stop(&mut self) {
        let pids: Vec<i32> = self
            .nodes
            .iter_mut()
            .filter_map(|n| matches!(n.child.try_wait(), Ok(None)).then(|| n.child.id() as i32))
            .collect();
        tailor_store::cluster::stop_pids_within(&pids, Duration::from_secs(10));
        for n in &mut self.nodes {
            let _ = n.child.wait();
            let _ = std::fs::remove_file(node::pid_path(&self.dir, n.index));
        }
        self.nodes.clear();
    }
}

impl Drop for LocalCassandra {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `tailor cassandra down`: stop the nodes whose pid files are in `dir`; returns how many ran.
pub fn down(dir: &Path) -> Result<usize, LaunchError> {
    if !dir.is_dir() {
        return Err(LaunchError::Invalid(format!("{} is not a cluster directory (see `up --dir`)", dir.display())));
    }
    let mut pids = Vec::new();
    for index in 0..=MAX_NODES {
        let path = node::pid_path(dir, index);
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        match text.trim().parse::<i32>() {
            Ok(pid) if pid > 0 && node::is_cassandra_of(pid, dir, index) => pids.push(pid),
            _ => eprintln!("{} names no running node of this cluster: stale, removed", path.display()),
        }
        let _ = std::fs::remove_file(&path);
    }
    tailor_store::cluster::stop_pids_within(&pids, Duration::from_secs(10));
    Ok(pids.len())
}
