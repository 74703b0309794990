//! A full disk under one node of three (issue 36, item 5). Before `disk_failure_policy`, the
//! node refused every write with "FjallError: Poisoned" (the real error logged nowhere), kept
//! failing after space was freed until someone restarted it, and reported itself healthy, so
//! reads at ONE through it answered nil for new keys. Now, on a small tmpfs filled to the brim:
//! - every policy: the node logs the real error, reports `tailor_healthy 0` and
//!   `tailor_disk_failed 1`, its peers mark it down and hint what it misses, and its clients are
//!   told why (`DISKFAIL`), so no acknowledged write is lost and no read is answered from it;
//! - `restart`: once space is freed it re-executes itself and gets every write it missed;
//! - `stop`: it stays stopped after space is freed; `die`: it exits with its own code.
//!
//! Needs to mount a tmpfs (root); skipped with a message elsewhere.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tailor_store::cluster::ClusterOptions;
use tailor_store::config::Consistency;
use tailor_store::disk::DiskFailurePolicy;

/// A small tmpfs, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// A tmpfs of `mb` MiB, or why none can be mounted here.
    fn mount(mb: u32) -> Result<SmallDisk, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mb}m"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !out.status.success() {
            return Err(format!("mount -t tmpfs failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fill the file system with one file until it refuses more.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.path().join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        let chunk = vec![7u8; 1 << 20];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// A 3-node cluster whose node 2 keeps its data on `disk`, with `policy`.
fn cluster_on(disk: &SmallDisk, policy: DiskFailurePolicy) -> TestCluster {
    let opts = ClusterOptions { nodes: 3, write_consistency: Consistency::Quorum, ..ClusterOptions::default() };
    let data = disk.path().join("node2");
    TestCluster::start(opts, |c| {
        c.disk_failure_policy = policy;
        // small engine buffers, so the tmpfs holds a node's files with room to spare
        c.cache_mb = 8;
        c.row_cache_mb = 8;
        if c.id == 2 {
            c.data_dir = data.clone();
        }
    })
}

/// Fill node 2's disk and write through node 0 until node 2 says its disk failed; the keys
/// written (each acknowledged at QUORUM).
fn fail_node_2(cl: &TestCluster, disk: &SmallDisk) -> (PathBuf, Vec<String>) {
    let filler = disk.fill();
    let mut con = cl.conn(0);
    let mut acked = Vec::new();
    let failed = eventually(30, || {
        for _ in 0..20 {
            let k = format!("while-full-{}", acked.len());
            set(&mut con, &k, &value(2048, acked.len() as u64)).expect("QUORUM holds on two nodes");
            acked.push(k);
        }
        cl.metric(2, "tailor_disk_failed", &[]) == 1.0
    });
    assert!(failed, "node 2 never saw its disk fail: {}", cl.log(2));
    (filler, acked)
}

/// A 48 MiB tmpfs, or `None` after saying why the test is skipped.
fn small_disk() -> Option<SmallDisk> {
    SmallDisk::mount(48)
        .map_err(|why| eprintln!("SKIPPED: {why} (this test needs to mount a small tmpfs, as root)"))
        .ok()
}

#[test]
fn a_node_whose_disk_fills_stops_serving_and_restarts_once_space_is_freed() {
    let Some(disk) = small_disk() else { return };
    let cl = cluster_on(&disk, DiskFailurePolicy::Restart);
    let pid = cl.pid(2);
    set(&mut cl.conn(2), "before", b"full").unwrap();
    let (filler, mut acked) = fail_node_2(&cl, &disk);

    // the node says so everywhere, and nothing is served from it
    assert_eq!(cl.metric(2, "tailor_healthy", &[]), 0.0);
    assert!(eventually(10, || cl.metric(0, "tailor_peer_up", &["peer=\"2\""]) == 0.0), "node 0 still sees node 2 up");
    let log = cl.log(2);
    assert!(log.contains("disk failure") && log.contains("No space left on device"), "the real error: {log}");
    let mut on_2 = cl.conn(2);
    let refused = get(&mut on_2, "before").unwrap_err().to_string();
    assert!(refused.contains("DISKFAIL") && refused.contains("restart"), "{refused}");
    let info: String = redis::cmd("INFO").arg("tailor").query(&mut on_2).unwrap();
    assert!(info.contains("disk_failed:1"), "{info}");

    // writes go on through the others, hinted for node 2
    let mut con = cl.conn(0);
    for i in 0..200 {
        let k = format!("after-{i}");
        set(&mut con, &k, b"while node 2 is down").unwrap();
        acked.push(k);
    }

    // space freed: the node re-executes itself (same pid) and catches up
    std::fs::remove_file(filler).unwrap();
    let try_set = || {
        let client = redis::Client::open(format!("redis://{}/", cl.cfgs[2].client_addr)).unwrap();
        let con = client.get_connection_with_timeout(Duration::from_secs(2));
        con.is_ok_and(|mut c| set(&mut c, "back", b"again").is_ok())
    };
    let back = eventually(40, try_set);
    assert!(back, "node 2 did not come back: {}", cl.log(2));
    assert_eq!(cl.pid(2), pid);
    assert!(cl.log(2).contains("re-executing the node"));
    assert_eq!(cl.metric(2, "tailor_disk_failed", &[]), 0.0);
    let missing = || acked.iter().filter(|k| replica_value(&cl, 2, k).is_none()).count();
    assert!(eventually(40, || missing() == 0), "node 2 misses {} of {} acknowledged writes", missing(), acked.len());
    eprintln!("restart: {} writes acknowledged while node 2's disk was full or it was down, 0 lost", acked.len());
}

#[test]
fn stop_keeps_the_node_stopped_and_die_exits() {
    let Some(disk) = small_disk() else { return };
    let cl = cluster_on(&disk, DiskFailurePolicy::Stop);
    let (filler, _) = fail_node_2(&cl, &disk);
    std::fs::remove_file(filler).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let refused = set(&mut cl.conn(2), "k", b"v").unwrap_err().to_string();
    assert!(refused.contains("DISKFAIL") && refused.contains("stop"), "{refused}");
    assert_eq!(cl.metric(2, "tailor_healthy", &[]), 0.0);
    drop(cl);

    let disk = SmallDisk::mount(48).unwrap();
    let mut cl = cluster_on(&disk, DiskFailurePolicy::Die);
    let _filler = disk.fill();
    let mut con = cl.conn(0);
    let exited = eventually(30, || {
        let _ = set(&mut con, "k", &value(2048, 1));
        cl.exit_code(2).is_some()
    });
    assert!(exited, "node 2 did not exit: {}", cl.log(2));
    assert_eq!(cl.exit_code(2), Some(tailor_store::disk::DIE_EXIT_CODE));
}
