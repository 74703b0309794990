//! Pid files of a cluster directory (`dir/node{id}.pid`), and the commands that act on them.
//!
//! A pid file can outlive its process (a crash, a reboot) and the pid be reused by anything,
//! so a pid is signalled only after `/proc/<pid>/cmdline` shows it is `tailor node --config
//! dir/node{id}/node.toml`: this cluster's node, not whatever holds the number now.

use super::{io, spawn_node, wait_listening, ClusterError, Lifetime};
use crate::config::NodeConfig;
use crate::process::stat_fields;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a node gets to stop after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);

fn pid_path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("node{id}.pid"))
}

/// The configuration file node `id` of the cluster in `dir` runs with.
pub(crate) fn config_path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("node{id}")).join("node.toml")
}

/// Record that node `id` runs as process `pid`.
pub(crate) fn write(dir: &Path, id: u32, pid: u32) -> Result<(), ClusterError> {
    let path = pid_path(dir, id);
    std::fs::write(&path, pid.to_string()).map_err(io(format!("write {}", path.display())))
}

/// The node ids that have a pid file in `dir`, with the pid each names.
fn read_all(dir: &Path) -> Result<Vec<(u32, i32)>, ClusterError> {
    let entries = std::fs::read_dir(dir).map_err(io(format!("read {}", dir.display())))?;
    let mut found = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(id) = name.strip_prefix("node").and_then(|n| n.strip_suffix(".pid")) else { continue };
        let Ok(id) = id.parse::<u32>() else { continue };
        let text = std::fs::read_to_string(e.path()).map_err(io(format!("read {name}")))?;
        match text.trim().parse::<i32>() {
            Ok(pid) if pid > 0 => found.push((id, pid)),
            _ => return Err(ClusterError::Invalid(format!("{name} does not hold a pid: `{}`", text.trim()))),
        }
    }
    found.sort();
    Ok(found)
}

/// Whether process `pid` is node `id` of the cluster in `dir` (its command line names that
/// node's config file).
pub(crate) fn is_node(pid: i32, dir: &Path, id: u32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { return false };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let expected = config_path(dir, id);
    let canonical = expected.canonicalize().ok();
    let same = |a: &[u8]| {
        let p = Path::new(std::ffi::OsStr::from_bytes(a));
        p == expected || (canonical.is_some() && p.canonicalize().ok() == canonical)
    };
    args.iter().any(|a| *a == b"node") && args.windows(2).any(|w| w[0] == b"--config" && same(w[1]))
}

fn signal(pid: i32, sig: i32) -> bool {
    // SAFETY: kill(2) has no memory effects; a stale pid only yields ESRCH.
    unsafe { libc::kill(pid, sig) == 0 }
}

/// Whether process `pid` exists (a zombie counts until its parent reaps it).
fn alive(pid: i32) -> bool {
    signal(pid, 0)
}

/// SIGTERM to each pid, then SIGKILL to those still running after [`STOP_GRACE`] (an exited
/// process that waits to be reaped counts as stopped).
pub(crate) fn stop_pids(pids: &[i32]) {
    stop_pids_within(pids, STOP_GRACE);
}

/// SIGTERM to each pid, then SIGKILL to those still running after `grace`.
pub fn stop_pids_within(pids: &[i32], grace: Duration) {
    for &pid in pids {
        signal(pid, libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    for &pid in pids {
        while alive(pid) && !is_zombie(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if alive(pid) && !is_zombie(pid) {
            signal(pid, libc::SIGKILL);
        }
    }
}

/// Whether `pid` has exited and waits for its parent (another process: `cluster up`) to reap it.
fn is_zombie(pid: i32) -> bool {
    stat_fields(&pid.to_string()).is_some_and(|f| f.first().is_some_and(|s| s == "Z"))
}

/// Pids of this process's children (a process still starting its cluster holds nodes that are
/// not registered anywhere yet).
pub fn children() -> Vec<i32> {
    let me = std::process::id().to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| stat_fields(&pid.to_string()).is_some_and(|f| f.get(1).is_some_and(|p| *p == me)))
        .collect()
}

/// The live nodes of the cluster in `dir` (id, pid); pid files naming anything else are
/// removed as stale, with a warning.
pub(crate) fn live_nodes(dir: &Path) -> Result<Vec<(u32, i32)>, ClusterError> {
    let mut live = Vec::new();
    for (id, pid) in read_all(dir)? {
        if alive(pid) && !is_zombie(pid) && is_node(pid, dir, id) {
            live.push((id, pid));
        } else {
            tracing::warn!("node{id}.pid names pid {pid}, which is not this cluster's node {id}: stale, removed");
            let _ = std::fs::remove_file(pid_path(dir, id));
        }
    }
    Ok(live)
}

/// Stop every node of the cluster in `dir` (SIGTERM, then SIGKILL after 10 s); returns how many
/// were running. Only processes that are this cluster's nodes are signalled.
pub fn down(dir: &Path) -> Result<usize, ClusterError> {
    let live = live_nodes(dir)?;
    stop_pids(&live.iter().map(|&(_, pid)| pid).collect::<Vec<_>>());
    for (id, _) in &live {
        let _ = std::fs::remove_file(pid_path(dir, *id));
    }
    Ok(live.len())
}

/// Stop node `id` of the cluster in `dir` if it runs, start it again from its configuration
/// (same ports, same data directory), and wait until it listens. Returns its client address.
pub fn restart(dir: &Path, id: u32, wait: Duration) -> Result<std::net::SocketAddr, ClusterError> {
    let path = config_path(dir, id);
    if !path.exists() {
        return Err(ClusterError::Invalid(format!(
            "{} has no node {id} ({} is missing)",
            dir.display(),
            path.display()
        )));
    }
    let cfg = NodeConfig::load(&path).map_err(|e| ClusterError::Invalid(e.to_string()))?;
    if let Some(&(_, pid)) = live_nodes(dir)?.iter().find(|(n, _)| *n == id) {
        stop_pids(&[pid]);
    }
    let exe = std::env::current_exe().map_err(io("find the tailor executable"))?;
    let child = spawn_node(&exe, &cfg, dir, 0, Lifetime::Detached)?;
    let deadline = Instant::now() + wait;
    if !(wait_listening(cfg.client_listen(), deadline) && wait_listening(cfg.peer_listen(), deadline)) {
        stop_pids(&[child.id() as i32]);
        return Err(ClusterError::StartTimeout(id, wait));
    }
    Ok(cfg.client_listen())
}
