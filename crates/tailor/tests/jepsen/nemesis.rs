//! Nemeses that need the machine's help: a network partition of one node on loopback
//! (iptables and a cgroup v2), a full disk (a small tmpfs as one node's data_dir), and frames
//! sent to the peer port without the cluster's signature. Each guard undoes its fault when
//! dropped, panics included.

use crate::common::TestCluster;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tailor_store::internode::Message;

/// Run a command, returning its stderr (and stdout) as the error.
fn run(cmd: &str, args: &[&str]) -> Result<(), String> {
    match Command::new(cmd).args(args).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "`{cmd} {}` failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim(),
            String::from_utf8_lossy(&o.stdout).trim()
        )),
        Err(e) => Err(format!("`{cmd}` cannot run: {e}")),
    }
}

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup` on a pure v2 machine,
/// `/sys/fs/cgroup/unified` on a hybrid one).
fn cgroup2_root() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        (f.len() > 2 && f[2] == "cgroup2").then(|| PathBuf::from(f[1]))
    })
}

/// A tag on every rule, so that rules a killed test left behind can be found
/// (`iptables -S OUTPUT | grep tailor-jepsen`).
const TAG: &str = "tailor-jepsen";

/// One node cut off from its peers (not from its clients), all on 127.0.0.1, so by ports:
/// packets to or from its peer port are dropped (its peers' connections to it), and so are its
/// own connections to its peers' ports: those opened from now on by their cgroup (the node's
/// process is moved into a cgroup of its own, matched with `-m cgroup --path`), those already
/// open by their exact ports (read from /proc). Dropping the guard removes every rule and moves
/// the node back.
pub struct Partition {
    rules: Vec<Vec<String>>,
    cgroup: PathBuf,
    root: PathBuf,
    pid: u32,
}

impl Partition {
    /// Why a partition cannot be made on this machine, if it cannot.
    pub fn unavailable() -> Option<String> {
        if let Err(e) = run("iptables", &["-L", "OUTPUT", "-n"]) {
            return Some(format!("iptables does not work here ({e}); .ci/run installs the iptables package"));
        }
        let Some(root) = cgroup2_root() else {
            return Some(
                "no cgroup v2 hierarchy is mounted (the isolated node's connections are matched by cgroup)".into(),
            );
        };
        let probe = root.join(format!("{TAG}-probe-{}", std::process::id()));
        if let Err(e) = std::fs::create_dir_all(&probe) {
            return Some(format!("cannot create a cgroup under {} ({e})", root.display()));
        }
        // a process can be moved into it (a container may not delegate its cgroups)
        let moved = Command::new("sleep").arg("30").spawn().map_err(|e| e.to_string()).and_then(|mut child| {
            let r = std::fs::write(probe.join("cgroup.procs"), child.id().to_string()).map_err(|e| e.to_string());
            let _ = child.kill();
            let _ = child.wait();
            r
        });
        if let Err(e) = moved {
            let _ = std::fs::remove_dir(&probe);
            return Some(format!("cannot move a process into a cgroup under {} ({e})", root.display()));
        }
        let path = probe.strip_prefix(&root).expect("under the root").display().to_string();
        let rule = ["OUTPUT", "-p", "tcp", "-m", "cgroup", "--path", &path, "--dport", "1", "-j", "DROP"];
        let added = run("iptables", &[&["-A"][..], &rule].concat());
        if added.is_ok() {
            let _ = run("iptables", &[&["-D"][..], &rule].concat());
        }
        // (the probe process leaves the cgroup a moment after it is reaped)
        crate::common::eventually(5, || std::fs::remove_dir(&probe).is_ok());
        added.err().map(|e| format!("iptables cannot match a cgroup v2 path ({e}; the xt_cgroup/nft_socket module)"))
    }

    pub fn isolate(cl: &TestCluster, i: usize) -> Partition {
        let root = cgroup2_root().expect("cgroup v2");
        let pid = cl.pid(i);
        let cgroup = root.join(format!("{TAG}-{}-{pid}", std::process::id()));
        std::fs::create_dir_all(&cgroup).expect("create the cgroup");
        std::fs::write(cgroup.join("cgroup.procs"), pid.to_string()).expect("move the node into its cgroup");
        let path = cgroup.strip_prefix(&root).expect("under the root").display().to_string();
        let port = |j: usize| cl.cfgs[j].peer_listen().port();
        let me = port(i).to_string();
        let peers: Vec<u16> = (0..cl.cfgs.len()).filter(|&j| j != i).map(port).collect();
        let mut rules = vec![vec!["--dport".to_string(), me.clone()], vec!["--sport".into(), me]];
        for p in &peers {
            rules.push(vec![
                "-m".into(),
                "cgroup".into(),
                "--path".into(),
                path.clone(),
                "--dport".into(),
                p.to_string(),
            ]);
        }
        for (local, remote) in open_connections(pid).into_iter().filter(|(_, r)| peers.contains(r)) {
            let (l, r) = (local.to_string(), remote.to_string());
            rules.push(vec!["--sport".into(), l.clone(), "--dport".into(), r.clone()]);
            rules.push(vec!["--sport".into(), r, "--dport".into(), l]);
        }
        let mut guard = Partition { rules: Vec::new(), cgroup, root, pid };
        for r in rules {
            let rule: Vec<String> = [
                &["OUTPUT", "-p", "tcp"][..],
                &r.iter().map(String::as_str).collect::<Vec<_>>(),
                &["-m", "comment", "--comment", TAG, "-j", "DROP"],
            ]
            .concat()
            .into_iter()
            .map(String::from)
            .collect();
            let args: Vec<&str> = rule.iter().map(String::as_str).collect();
            run("iptables", &[&["-I"][..], &args].concat()).expect("add a partition rule");
            guard.rules.push(rule);
        }
        guard
    }

    pub fn rules(&self) -> usize {
        self.rules.len()
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        for rule in &self.rules {
            let args: Vec<&str> = rule.iter().map(String::as_str).collect();
            if let Err(e) = run("iptables", &[&["-D"][..], &args].concat()) {
                eprintln!("could not remove a partition rule: {e}");
            }
        }
        // back to the root cgroup (fails harmlessly when the node is gone)
        let _ = std::fs::write(self.root.join("cgroup.procs"), self.pid.to_string());
        crate::common::eventually(5, || std::fs::remove_dir(&self.cgroup).is_ok());
    }
}

/// The (local, remote) ports of process `pid`'s TCP connections, from /proc.
fn open_connections(pid: u32) -> Vec<(u16, u16)> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter_map(|l| l.to_str()?.strip_prefix("socket:[")?.strip_suffix(']').map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let port = |a: &str| a.rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok());
    ["tcp", "tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(format!("/proc/{pid}/net/{f}")).ok())
        .flat_map(|t| t.lines().skip(1).map(String::from).collect::<Vec<_>>())
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 9 && inodes.iter().any(|i| i == f[9])).then(|| Some((port(f[1])?, port(f[2])?)))?
        })
        .collect()
}

/// A small tmpfs, to be one node's data_dir: a disk that fills up. Unmounted when dropped.
pub struct SmallDisk {
    pub dir: PathBuf,
}

impl SmallDisk {
    /// Mount a tmpfs of `mb` MB at `dir`, or say why it cannot be.
    pub fn mount(dir: &Path, mb: u64) -> Result<SmallDisk, String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let size = format!("size={mb}m");
        run("mount", &["-t", "tmpfs", "-o", &size, "tailor-jepsen", &dir.display().to_string()])?;
        Ok(SmallDisk { dir: dir.to_path_buf() })
    }

    fn filler(&self) -> PathBuf {
        self.dir.join("filler")
    }

    /// Fill the disk to the last byte with a file; returns how many bytes it took.
    pub fn fill(&self) -> u64 {
        let mut f = std::fs::File::create(self.filler()).expect("create the filler");
        let chunk = vec![0u8; 64 << 10];
        let mut n = 0;
        loop {
            match f.write(&chunk) {
                Ok(0) | Err(_) => break,
                Ok(w) => n += w as u64,
            }
        }
        // the last bytes: one at a time
        while f.write(&[0]).is_ok_and(|w| w == 1) {
            n += 1;
        }
        n
    }

    pub fn free(&self) {
        std::fs::remove_file(self.filler()).expect("remove the filler");
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = run("umount", &["-l", &self.dir.display().to_string()]);
    }
}

/// Send `frame` to a peer port as is and read whatever comes back before the node closes the
/// connection (or 5 s pass): an unsigned or wrongly signed frame must get nothing.
pub fn send_raw(peer: std::net::SocketAddr, frame: &[u8]) -> Vec<u8> {
    let mut s = std::net::TcpStream::connect(peer).expect("connect to the peer port");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(frame).expect("send the frame");
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    reply
}

/// A write that would win over every earlier one (a version 100 ms ahead, within
/// `max_clock_offset_ms`) if a replica took it.
pub fn forged_write(key: &str, value: &str) -> Message {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970");
    Message::Write {
        id: 7,
        key: key.as_bytes().to_vec(),
        version: tailor_store::hlc::first_version_at(now.as_micros() as u64 + 100_000),
        value: Some(value.as_bytes().to_vec()),
        tags: Default::default(),
        age: 0,
    }
}
