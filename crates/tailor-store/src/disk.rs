//! What a node does when its disk fails (issue 36: a full disk once left a healthy-looking node
//! that refused every write until someone restarted it), as Cassandra's `disk_failure_policy`.
//!
//! Detection: fjall poisons its database on the first journal I/O error and refuses every
//! write after it, even once space is freed; there is no way to clear the poison, because the
//! journal's state after a failed write is unknown, and only a fresh open recovers it from the
//! journal. A watcher asks the engine every [`CHECK_EVERY`] whether it still takes writes
//! ([`crate::storage::Storage::check_engine`]), so a failure is seen even on an idle node.
//!
//! Reaction, by [`DiskFailurePolicy`]:
//! - every policy: the real error is logged with the free space of the data directory; the
//!   replica reports itself unhealthy (`tailor_healthy 0`, heartbeat answers say so, so peers
//!   mark the node down at once and hint what it misses); `tailor_disk_failed 1` and INFO's
//!   `disk_failed:1`; clients are told why and closed, new ones refused, so no read at ONE is
//!   answered from a replica that misses every new write;
//! - `restart` (the default): once a probe file of [`PROBE_BYTES`] can be written and synced
//!   in the data directory again, the node re-executes itself (same binary, arguments,
//!   environment and pid): the engine reopens from its journal, every acknowledged write is
//!   there, and the peers' hints bring what it missed meanwhile. A node run inside another
//!   program (tests) re-executes that program, so tests that embed a node pick `stop`;
//! - `stop`: stays up, stopped, for an operator to inspect (its metrics port still answers);
//! - `die`: exits with [`DIE_EXIT_CODE`] at once, for a supervisor that restarts it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often the watcher asks the engine whether it still takes writes.
pub const CHECK_EVERY: Duration = Duration::from_millis(250);

/// How often a failed disk is probed under `restart`.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);

/// Bytes a probe must write and sync before `restart` re-executes the node: room for a few
/// journal batches, so a disk with a few bytes free does not make the node flap.
pub const PROBE_BYTES: usize = 4 << 20;

/// Exit code of a node that `die`s on a disk failure.
pub const DIE_EXIT_CODE: i32 = 70;

pub use crate::config::DiskFailurePolicy;

/// A node's disk state: healthy until the first failure, then failed for the life of the
/// process (a fresh open is the only way back, see the module doc).
#[derive(Default)]
pub struct DiskState {
    failed: AtomicBool,
    cause: parking_lot::Mutex<Option<String>>,
}

impl DiskState {
    /// Whether the engine has refused writes.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Why, once failed.
    pub fn cause(&self) -> Option<String> {
        self.cause.lock().clone()
    }

    /// Record the failure; true the first time (the caller logs and reacts once).
    pub fn fail(&self, cause: String) -> bool {
        let mut held = self.cause.lock();
        if held.is_some() {
            return false;
        }
        *held = Some(cause);
        self.failed.store(true, Ordering::Relaxed);
        true
    }
}

/// Bytes free for this process on the file system holding `dir` (`None` if unknown).
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain data, for which all zero bytes are a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string and `st` a valid out-pointer for the call.
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// What a client and the log are told: the engine's error (after the first I/O error fjall
/// only says "Poisoned"; its own log line above names the I/O error) and the free space, which
/// names the usual cause.
pub fn cause(engine: &str, dir: &Path, free: Option<u64>) -> String {
    let space = match free {
        Some(b) if b < PROBE_BYTES as u64 => format!("{b} bytes free in {}: the disk is full", dir.display()),
        Some(b) => format!("{b} bytes free in {}", dir.display()),
        None => format!("free space in {} unknown", dir.display()),
    };
    format!("the storage engine refuses writes after an I/O error ({engine}); {space}")
}

/// Whether `dir` takes a [`PROBE_BYTES`] file written and synced (the file is removed).
pub fn probe(dir: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let path = dir.join(".disk-probe");
    let written = (|| {
        let mut f = std::fs::File::create(&path)?;
        f.write_all(&vec![0u8; PROBE_BYTES])?;
        f.sync_all()
    })();
    let _ = std::fs::remove_file(&path);
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn a_failure_is_recorded_once_with_its_first_cause() {
        let d = DiskState::default();
        assert!(!d.failed() && d.cause().is_none());
        assert!(d.fail("No space left on device".into()));
        assert!(!d.fail("Poisoned".into()), "the first failure is the one reported");
        assert!(d.failed());
        assert_eq!(d.cause().as_deref(), Some("No space left on device"));
    }

    #[test]
    fn a_probe_writes_syncs_and_removes_its_file() {
        let dir = tempfile::tempdir().unwrap();
        probe(dir.path()).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        assert!(free_bytes(dir.path()).unwrap() > 0);
        assert!(probe(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn the_cause_names_a_full_disk() {
        let dir = Path::new("/data");
        assert!(cause("Poisoned", dir, Some(0)).ends_with("0 bytes free in /data: the disk is full"));
        assert!(!cause("Poisoned", dir, Some(1 << 30)).contains("full"));
        assert!(cause("Poisoned", dir, None).contains("unknown"));
    }

    #[test]
    fn policies_read_as_configured() {
        #[derive(Deserialize)]
        struct C {
            p: DiskFailurePolicy,
        }
        for name in ["restart", "stop", "die"] {
            let c: C = toml::from_str(&format!("p = \"{name}\"")).unwrap();
            assert_eq!(c.p.name(), name);
        }
        assert!(toml::from_str::<C>("p = \"ignore\"").is_err());
    }
}
