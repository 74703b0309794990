//! `tailor cluster up/down/restart/repair`: N node processes on loopback with data dirs and pid files.
//!
//! This file plans a cluster and starts node processes; `supervise.rs` runs `cluster up`;
//! `pids.rs` finds, checks and stops the nodes a cluster directory's pid files name.

mod pids;
mod ready;
mod repair;
mod supervise;

pub use pids::{children, down, restart, stop_pids_within};
pub use ready::http_get;
pub use repair::repair;
pub use supervise::{install_stop_flag, stop_children, up};

use crate::config::{Consistency, Durability, Member, NodeConfig};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Errors managing a local cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was attempted.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// A node did not start listening in time.
    #[error("node {0} did not start within {1:?} (see its node.log)")]
    StartTimeout(u32, Duration),
    /// A node exited before it listened (typically: a planned port was taken meanwhile).
    #[error("node {0} exited while starting (see its node.log)")]
    NodeExited(u32),
    /// Bad options.
    #[error("{0}")]
    Invalid(String),
}

/// Attempts at starting a planned cluster: ports are picked free but bound later by the nodes,
/// so another process may take one in between; a fresh plan then almost surely succeeds.
pub const START_ATTEMPTS: usize = 3;

/// Spawn a node per config and wait until each listens for clients and peers and (when it has a
/// metrics endpoint) sees every peer up; a node that exits first fails fast with
/// [`ClusterError::NodeExited`]. On any error every started node is killed.
pub fn start_nodes(
    exe: &Path,
    cfgs: &[NodeConfig],
    dir: &Path,
    wait: Duration,
    niceness: u8,
) -> Result<Vec<Child>, ClusterError> {
    let mut children = Vec::with_capacity(cfgs.len());
    for cfg in cfgs {
        match spawn_node(exe, cfg, dir, niceness, Lifetime::WithParent) {
            Ok(c) => children.push(c),
            Err(e) => {
                stop_children(&mut children);
                return Err(e);
            }
        }
    }
    let deadline = Instant::now() + wait;
    // Ready once every node listens and sees every peer up at the same time: a node that looked
    // ready early may mark a later one down (its heartbeats missed while that one was starting).
    loop {
        if let Some(i) = children.iter_mut().position(|c| matches!(c.try_wait(), Ok(Some(_)))) {
            stop_children(&mut children);
            return Err(ClusterError::NodeExited(cfgs[i].id));
        }
        let Some(waiting) = cfgs.iter().find(|c| !node_ready(c, cfgs.len() - 1)) else { return Ok(children) };
        if Instant::now() > deadline {
            stop_children(&mut children);
            return Err(ClusterError::StartTimeout(waiting.id, wait));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether node `cfg` takes clients and peers and (when it exports metrics) sees its `peers`
/// peers all up.
fn node_ready(cfg: &NodeConfig, peers: usize) -> bool {
    let up = |a: SocketAddr| TcpStream::connect_timeout(&a, Duration::from_millis(200)).is_ok();
    up(cfg.client_listen()) && up(cfg.peer_listen()) && cfg.metrics_addr.is_none_or(|m| ready::sees_peers_up(m, peers))
}

/// Plan and start a cluster under `dir`, re-planning with fresh ports when a node exits while
/// starting (up to [`START_ATTEMPTS`] times); `tweak` adjusts each config before it is written.
pub fn plan_and_start(
    exe: &Path,
    opts: &ClusterOptions,
    dir: &Path,
    wait: Duration,
    mut tweak: impl FnMut(&mut NodeConfig),
) -> Result<(Vec<NodeConfig>, Vec<Child>), ClusterError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut cfgs = plan(opts, dir)?;
        cfgs.iter_mut().for_each(&mut tweak);
        match start_nodes(exe, &cfgs, dir, wait, opts.niceness) {
            Ok(children) => return Ok((cfgs, children)),
            // fixed ports would be planned the same again
            Err(ClusterError::NodeExited(id)) if attempt < START_ATTEMPTS && opts.base_port.is_none() => {
                tracing::warn!("node {id} exited while starting; retrying with fresh ports");
            }
            Err(e) => return Err(e),
        }
    }
}

pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ClusterError {
    let what = what.into();
    move |source| ClusterError::Io { what, source }
}

/// Options of a local cluster, applied to every node.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// Number of nodes.
    pub nodes: usize,
    /// Replication factor (capped at `nodes`).
    pub replication: usize,
    /// Selector name.
    pub selector: String,
    /// Local policy name.
    pub local: String,
    /// Read parallelism.
    pub workers: usize,
    /// Write consistency.
    pub write_consistency: Consistency,
    /// Read consistency.
    pub read_consistency: Consistency,
    /// Journal durability.
    pub durability: Durability,
    /// CPU niceness of the node processes (0: as this process). Live experiments lower the
    /// nodes' priority so that, on one shared machine, the load generator keeps its schedule
    /// (on a real deployment the two never share cores).
    pub niceness: u8,
    /// Fixed ports instead of free ones picked at random: node `i` takes clients on
    /// `base + i`, peers on `base + PEER_PORT_OFFSET + i` and metrics on
    /// `base + METRICS_PORT_OFFSET + i`, so a script or a README line can name them in advance.
    pub base_port: Option<u16>,
}

/// Where the peer ports start above `--base-port` (7000 → peers from 8000).
pub const PEER_PORT_OFFSET: u16 = 1000;

/// Where the metrics ports start above `--base-port` (7000 → metrics from 9000).
pub const METRICS_PORT_OFFSET: u16 = 2000;

impl Default for ClusterOptions {
    fn default() -> Self {
        let d = NodeConfig::default();
        ClusterOptions {
            nodes: 3,
            replication: d.replication,
            selector: d.selector,
            local: d.local,
            workers: d.workers,
            write_consistency: d.write_consistency,
            read_consistency: d.read_consistency,
            durability: d.durability,
            niceness: 0,
            base_port: None,
        }
    }
}

/// Ports this process has already handed out: the OS may offer a just-released port again, and
/// two clusters planned concurrently in one process (parallel tests, sweeps) must not share one.
static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());

/// Ask the kernel to SIGTERM the child when its parent thread exits; kept across the `nice`
/// exec. A parent that died between fork and the request is caught by comparing parent pids.
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid is async-signal-safe and runs before the fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: prctl, getppid and _exit are async-signal-safe, as a pre_exec hook requires.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(0);
            }
            Ok(())
        });
    }
}

/// `n` distinct free loopback ports, never one this process handed out before (all bound at
/// once, then released).
pub fn free_ports(n: usize) -> Result<Vec<u16>, ClusterError> {
    let mut given = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let mut held = Vec::new();
    let mut ports = Vec::with_capacity(n);
    // bounded: each failed pick keeps its port bound, so the OS cannot offer it again
    while ports.len() < n && held.len() < n + 4096 {
        let l = TcpListener::bind("127.0.0.1:0").map_err(io("bind a free port"))?;
        let port = l.local_addr().map_err(io("read a bound port"))?.port();
        if !given.contains(&port) {
            ports.push(port);
        }
        held.push(l);
    }
    if ports.len() < n {
        return Err(ClusterError::Invalid(format!("could not find {n} unused loopback ports")));
    }
    given.extend_from_slice(&ports);
    Ok(ports)
}

/// The ports of `--base-port base` for `nodes` nodes, in [`plan`]'s order (client, peer,
/// metrics per node), each checked free now so a taken one is named before any node starts.
fn fixed_ports(base: u16, nodes: usize) -> Result<Vec<u16>, ClusterError> {
    let span = METRICS_PORT_OFFSET as usize + nodes;
    if base < 1024 || base as usize + span > 65_536 || nodes > PEER_PORT_OFFSET as usize {
        return Err(ClusterError::Invalid(format!(
            "--base-port {base} with {nodes} nodes needs ports {base}..{} (clients from {base}, peers from +{PEER_PORT_OFFSET}, metrics from +{METRICS_PORT_OFFSET}): pick a base from 1024 to {} and at most {PEER_PORT_OFFSET} nodes",
            base as usize + span - 1,
            65_536usize.saturating_sub(span)
        )));
    }
    let mut ports = Vec::with_capacity(3 * nodes);
    for i in 0..nodes as u16 {
        ports.extend([base + i, base + PEER_PORT_OFFSET + i, base + METRICS_PORT_OFFSET + i]);
    }
    if let Some(&taken) = ports.iter().find(|&&p| TcpListener::bind(("127.0.0.1", p)).is_err()) {
        return Err(ClusterError::Invalid(format!(
            "port {taken} is in use (--base-port {base} gives node i clients on {base}+i, peers on {}+i, metrics on {}+i): stop what holds it or pick another base",
            base + PEER_PORT_OFFSET,
            base + METRICS_PORT_OFFSET
        )));
    }
    Ok(ports)
}

/// Configurations for a loopback cluster under `dir` (node `i` keeps its files in `dir/node{i}`).
pub fn plan(opts: &ClusterOptions, dir: &Path) -> Result<Vec<NodeConfig>, ClusterError> {
    if opts.nodes == 0 {
        return Err(ClusterError::Invalid("--nodes must be at least 1".into()));
    }
    let ports = match opts.base_port {
        Some(base) => fixed_ports(base, opts.nodes)?,
        None => free_ports(3 * opts.nodes)?,
    };
    // every cluster's peer port is signed: nothing that reaches it without the secret gets in
    let secret = (opts.nodes > 1).then(cluster_secret).transpose()?;
    let addr = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
    let members: Vec<Member> = (0..opts.nodes).map(|i| Member { id: i as u32, peer: addr(ports[3 * i + 1]) }).collect();
    Ok((0..opts.nodes)
        .map(|i| NodeConfig {
            id: i as u32,
            data_dir: dir.join(format!("node{i}")).join("data"),
            client_addr: addr(ports[3 * i]),
            metrics_addr: Some(addr(ports[3 * i + 2])),
            members: members.clone(),
            replication: opts.replication.min(opts.nodes),
            selector: opts.selector.clone(),
            local: opts.local.clone(),
            workers: opts.workers,
            write_consistency: opts.write_consistency,
            read_consistency: opts.read_consistency,
            durability: opts.durability,
            seed: 1,
            cluster_secret: secret.clone(),
            ..NodeConfig::default()
        })
        .collect())
}

/// A fresh cluster secret: 32 hex digits from the OS's random source (128 bits).
fn cluster_secret() -> Result<String, ClusterError> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(io("read /dev/urandom for a cluster secret"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether a node process outlives the process that starts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifetime {
    /// The node gets SIGTERM when the thread that spawned it exits (Linux's parent-death
    /// signal): `cluster up` and live experiments leave no node behind even when killed with
    /// SIGKILL or interrupted while a start is being retried.
    WithParent,
    /// The node runs on after its starter exits (`cluster restart`, a one-shot command).
    Detached,
}

/// The environment variable naming the `--log-format` of the `tailor` process (it sets it at
/// start): the nodes it starts are given the same flag, so a cluster logs in one format.
pub const LOG_FORMAT_ENV: &str = "TAILOR_LOG_FORMAT";

/// Start one node process (`exe node --config dir/node{id}/node.toml`, under `nice -n
/// niceness` when above 0, which execs it: the pid stays the node's), logging to `node.log`
/// beside its config (in the format [`LOG_FORMAT_ENV`] names) and writing `dir/node{id}.pid`.
pub fn spawn_node(
    exe: &Path,
    cfg: &NodeConfig,
    dir: &Path,
    niceness: u8,
    lifetime: Lifetime,
) -> Result<Child, ClusterError> {
    let home = dir.join(format!("node{}", cfg.id));
    std::fs::create_dir_all(&home).map_err(io(format!("create {}", home.display())))?;
    let path = home.join("node.toml");
    std::fs::write(&path, cfg.to_toml()).map_err(io(format!("write {}", path.display())))?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.join("node.log"))
        .map_err(io("open node.log"))?;
    let log2 = log.try_clone().map_err(io("open node.log"))?;
    let mut cmd = if niceness > 0 {
        let mut nice = Command::new("nice");
        nice.arg("-n").arg(niceness.to_string()).arg(exe);
        nice
    } else {
        Command::new(exe)
    };
    if lifetime == Lifetime::WithParent {
        die_with_parent(&mut cmd);
    }
    if let Ok(format) = std::env::var(LOG_FORMAT_ENV) {
        cmd.arg("--log-format").arg(format);
    }
    let child = cmd
        .arg("node")
        .arg("--config")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(io(format!("start {}", exe.display())))?;
    pids::write(dir, cfg.id, child.id())?;
    Ok(child)
}

/// Poll until `addr` accepts a TCP connection or `deadline` passes.
pub fn wait_listening(addr: SocketAddr, deadline: Instant) -> bool {
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}
