//! One Cassandra JVM: spawned with its configuration, waited for until it answers on the CQL
//! port, and stopped. A node's pid is kept in `dir/node<i>.pid` so `tailor cassandra down` can
//! stop a cluster another process started.

use super::config::{self, NodeSettings, CQL_PORT};
use super::LaunchError;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A started node.
pub struct Node {
    /// 0-based index.
    pub index: usize,
    /// Its CQL address.
    pub addr: SocketAddr,
    /// Its directory (configuration, data, `system.log`).
    pub home: PathBuf,
    /// The JVM.
    pub child: Child,
}

/// The directory of node `index` in a cluster directory.
pub fn home(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("node{index}"))
}

/// The pid file of node `index`.
pub fn pid_path(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("node{index}.pid"))
}

/// Write node `s.index`'s files under `dir` and start its JVM (output appended to
/// `home/stdout.log`), under `nice -n niceness` when above 0 (which execs java: the pid stays
/// the JVM's).
pub fn spawn(dir: &Path, s: &NodeSettings, heap_mb: u32, niceness: u8, lib: &Path) -> Result<Node, LaunchError> {
    let home = home(dir, s.index);
    let addr = SocketAddr::new(config::node_ip(s.index), CQL_PORT);
    if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
        return Err(LaunchError::Invalid(format!(
            "{addr} already answers: another Cassandra (or `tailor cassandra up`) runs; stop it first"
        )));
    }
    std::fs::create_dir_all(&home).map_err(LaunchError::io(format!("create {}", home.display())))?;
    let write = |name: &str, text: String| {
        let path = home.join(name);
        std::fs::write(&path, text).map_err(LaunchError::io(format!("write {}", path.display())))
    };
    write("cassandra.yaml", config::cassandra_yaml(s, &home))?;
    write("logback.xml", config::logback_xml(&home))?;
    // appended to: a node started again after a crash keeps its first life's output
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.join("stdout.log"))
        .map_err(LaunchError::io("open stdout.log".into()))?;
    let err = out.try_clone().map_err(LaunchError::io("open stdout.log".into()))?;
    let mut cmd = if niceness > 0 {
        let mut nice = Command::new("nice");
        nice.arg("-n").arg(niceness.to_string()).arg("java");
        nice
    } else {
        Command::new("java")
    };
    let child = cmd
        .args(config::jvm_args(s.index, heap_mb, &home, lib))
        .arg(config::MAIN_CLASS)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(LaunchError::io("start java".into()))?;
    let pid = pid_path(dir, s.index);
    std::fs::write(&pid, child.id().to_string()).map_err(LaunchError::io(format!("write {}", pid.display())))?;
    Ok(Node { index: s.index, addr, home, child })
}

/// Wait until `node` accepts CQL connections; fails if its JVM exits or `deadline` passes.
pub fn wait_ready(node: &mut Node, deadline: Instant) -> Result<(), LaunchError> {
    loop {
        if let Ok(Some(status)) = node.child.try_wait() {
            return Err(LaunchError::NodeExited(node.index, status.to_string(), node.home.join("system.log")));
        }
        if TcpStream::connect_timeout(&node.addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(LaunchError::StartTimeout(node.index, node.home.join("system.log")));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Whether `pid` is a Cassandra JVM of the cluster in `dir` (its command line names the node's
/// configuration there): a stale pid file must not make `down` signal an unrelated process.
pub fn is_cassandra_of(pid: i32, dir: &Path, index: usize) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { return false };
    let cmdline = String::from_utf8_lossy(&cmdline);
    let yaml = home(dir, index).join("cassandra.yaml");
    cmdline.contains(config::MAIN_CLASS) && cmdline.contains(&yaml.display().to_string())
}
