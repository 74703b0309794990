//! `tailor cluster up` cleans up after Ctrl-C: the temporary directory it made goes, a user's
//! `--dir` stays.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

/// Start `cluster up` (one node) with `TMPDIR=tmp` and extra args, wait for its address, SIGINT
/// it and wait for its exit.
fn up_then_interrupt(tmp: &Path, extra: &[&str]) {
    let mut cmd = Command::new(common::exe());
    cmd.args(["cluster", "up", "--nodes", "1"]).args(extra).env("TMPDIR", tmp).stderr(Stdio::null());
    let mut child = common::cluster_up_started(cmd);
    // SAFETY: signalling a process this test started
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert!(child.wait().unwrap().success());
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

#[test]
fn ctrl_c_removes_the_temporary_directory_up_created() {
    let tmp = tempfile::tempdir().unwrap();
    up_then_interrupt(tmp.path(), &[]);
    assert!(entries(tmp.path()).iter().all(|e| !e.starts_with("tailor-cluster-")), "{:?}", entries(tmp.path()));
}

#[test]
fn ctrl_c_keeps_a_directory_the_user_named() {
    let tmp = tempfile::tempdir().unwrap();
    let mine = tmp.path().join("mine");
    up_then_interrupt(tmp.path(), &["--dir", mine.to_str().unwrap()]);
    assert!(mine.join("node0.toml").exists() || !entries(&mine).is_empty(), "the user's directory is kept");
}
