//! The disk watcher: asks the engine every [`CHECK_EVERY`] whether it still takes writes and,
//! on the first failure, applies the node's [`DiskFailurePolicy`] (`disk.rs` says what each
//! policy does and why).

use crate::disk::{cause, free_bytes, probe, DiskFailurePolicy, CHECK_EVERY, DIE_EXIT_CODE, PROBE_EVERY};
use crate::node::Node;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The log target of the watcher (as when it lived in `disk.rs`).
const TARGET: &str = "tailor_store::disk";

/// Watch the engine for the life of the node and apply `policy` on the first failure.
pub async fn watch(node: Arc<Node>) {
    let mut tick = tokio::time::interval(CHECK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let storage = node.storage.clone();
        let checked = tokio::task::spawn_blocking(move || storage.check_engine()).await;
        let Ok(Err(e)) = checked else { continue };
        let dir = &node.cfg.data_dir;
        let cause = cause(&e, dir, free_bytes(dir));
        if !node.storage.disk_state().fail(cause.clone()) {
            continue;
        }
        let policy = node.cfg.disk_failure_policy;
        tracing::error!(
            target: TARGET,
            data_dir = %dir.display(), policy = policy.name(),
            "disk failure: {cause}; this node stops serving clients and reports itself unhealthy to its peers"
        );
        node.metrics.disk_failures.fetch_add(1, Ordering::Relaxed);
        match policy {
            DiskFailurePolicy::Die => {
                tracing::error!(target: TARGET, "disk_failure_policy = die: exiting with code {DIE_EXIT_CODE}");
                std::process::exit(DIE_EXIT_CODE);
            }
            DiskFailurePolicy::Stop => {
                tracing::error!(target: TARGET, "disk_failure_policy = stop: the node stays stopped until it is restarted");
                return;
            }
            DiskFailurePolicy::Restart => return restart_when_writable(&node).await,
        }
    }
}

/// Probe the data directory until it takes writes, then re-execute this process.
async fn restart_when_writable(node: &Node) {
    let dir = node.cfg.data_dir.clone();
    let mut logged_wait = false;
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        let d = dir.clone();
        match tokio::task::spawn_blocking(move || probe(&d)).await {
            Ok(Ok(())) => break,
            Ok(Err(e)) if !logged_wait => {
                logged_wait = true;
                tracing::warn!(target: TARGET, data_dir = %dir.display(), "disk still failing ({e}); probing every {PROBE_EVERY:?}");
            }
            _ => {}
        }
    }
    tracing::warn!(
        target: TARGET,
        data_dir = %dir.display(),
        "the disk takes writes again: re-executing the node to reopen its storage from the journal"
    );
    let err = reexec();
    tracing::error!(target: TARGET, "cannot re-execute the node ({err}); it stays stopped until restarted");
}

/// Replace this process with a fresh run of the same program, arguments and environment
/// (descriptors Rust opened close on exec; stdout and stderr carry over). Returns only on
/// failure.
fn reexec() -> std::io::Error {
    use std::os::unix::process::CommandExt;
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => return e,
    };
    std::process::Command::new(exe).args(std::env::args_os().skip(1)).exec()
}
