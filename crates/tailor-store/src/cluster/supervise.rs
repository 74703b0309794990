//! `tailor cluster up`: start the nodes, print their addresses, and watch them until Ctrl-C.
//!
//! A node that exits is reported and the others keep running, so a cluster can be used for
//! crash tests (`kill -9` a node, then `tailor cluster restart --node N`). `up` ends on Ctrl-C /
//! SIGTERM (stopping every node of its directory, restarted ones included) or once no node of
//! its directory runs any more (after `tailor cluster down`).

use super::pids;
use super::{io, plan_and_start, ClusterError, ClusterOptions};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Start the cluster in `dir` (default: a new temporary directory, removed when `up` ends) and
/// supervise it.
pub fn up(opts: &ClusterOptions, dir: Option<PathBuf>) -> Result<(), ClusterError> {
    let temporary = dir.is_none();
    let dir = dir.unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        std::env::temp_dir().join(format!("tailor-cluster-{}-{nanos}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).map_err(io(format!("create {}", dir.display())))?;
    // the stop flag goes in before the start, so a Ctrl-C while nodes start ends in the cleanup
    // below instead of killing `up` with its temporary directory left behind
    let stop = install_stop_flag();
    let outcome = supervise(opts, &dir, &stop);
    if temporary {
        // removed whatever the outcome: only this directory, which `up` created itself
        std::fs::remove_dir_all(&dir).map_err(io(format!("remove {}", dir.display())))?;
    }
    outcome
}

/// Start the nodes in `dir`, print their addresses, watch them until `stop` or until none runs.
fn supervise(opts: &ClusterOptions, dir: &Path, stop: &AtomicBool) -> Result<(), ClusterError> {
    let exe = std::env::current_exe().map_err(io("find the tailor executable"))?;
    let (cfgs, mut children) = plan_and_start(&exe, opts, dir, Duration::from_secs(30), |_| {})?;
    eprintln!(
        "cluster of {} nodes in {} (stop with Ctrl-C or `tailor cluster down --dir {}`)",
        cfgs.len(),
        dir.display(),
        dir.display()
    );
    for cfg in &cfgs {
        println!("{}", cfg.client_addr);
    }
    for cfg in &cfgs {
        if let Some(m) = cfg.metrics_addr {
            eprintln!("node {} metrics: http://{m}/metrics", cfg.id);
        }
    }
    watch(dir, &mut children, stop);
    stop_children(&mut children);
    pids::down(dir).map(|_| ())
}

/// Report nodes that exit; return on a stop signal or once no node of `dir` runs.
fn watch(dir: &Path, children: &mut [Child], stop: &AtomicBool) {
    let mut reported = vec![false; children.len()];
    let mut last_check = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        for (id, child) in children.iter_mut().enumerate() {
            if let (false, Ok(Some(status))) = (reported[id], child.try_wait()) {
                reported[id] = true;
                eprintln!(
                    "node {id} exited ({status}); the other nodes keep running \
                     (`tailor cluster restart --dir {} --node {id}` starts it again)",
                    dir.display()
                );
            }
        }
        // restarted nodes are not our children: their pid files say whether any node is left
        if reported.iter().all(|&r| r) && last_check.elapsed() > Duration::from_millis(500) {
            last_check = Instant::now();
            if pids::live_nodes(dir).is_ok_and(|l| l.is_empty()) {
                eprintln!("no node of {} runs any more", dir.display());
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A flag set on the first SIGINT/SIGTERM: long-running commands poll it to stop their children
/// and clean up instead of dying with them.
pub fn install_stop_flag() -> std::sync::Arc<AtomicBool> {
    static STOP: AtomicBool = AtomicBool::new(false);
    extern "C" fn on_signal(_: i32) {
        STOP.store(true, Ordering::Relaxed);
    }
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let flag = std::sync::Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    std::thread::spawn(move || loop {
        if STOP.load(Ordering::Relaxed) {
            f.store(true, Ordering::Relaxed);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    });
    flag
}

/// Stop node processes: SIGTERM to all, then SIGKILL those still running after 10 s, reaping each.
pub fn stop_children(children: &mut [Child]) {
    // only those not reaped yet: a reaped child's pid may belong to another process by now
    let running: Vec<i32> =
        children.iter_mut().filter_map(|c| matches!(c.try_wait(), Ok(None)).then(|| c.id() as i32)).collect();
    pids::stop_pids(&running);
    for c in children.iter_mut() {
        let _ = c.wait();
    }
}
