//! `tailor cluster up` cleans up after Ctrl-C: the temporary directory it made goes, a user's
//! `--dir` stays. With `--base-port` its ports are the ones a script names in advance, and a
//! taken or impossible base is refused before any node starts.

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

/// A base whose ports for `nodes` nodes are free now (a race with other processes is possible
/// but the window is milliseconds).
fn free_base(nodes: u16) -> u16 {
    let pid = std::process::id() as u16;
    (0..200u16)
        .map(|i| 20_000 + (pid.wrapping_mul(7) + i * 97) % 30_000)
        .find(|&b| {
            (0..nodes).all(|i| {
                [b + i, b + 1000 + i, b + 2000 + i]
                    .iter()
                    .all(|&p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok())
            })
        })
        .expect("a free base port")
}

#[test]
fn base_port_fixes_every_port_and_refuses_a_taken_one() {
    let tmp = tempfile::tempdir().unwrap();
    let base = free_base(2);
    let mut cmd = Command::new(common::exe());
    cmd.args(["cluster", "up", "--nodes", "2", "--base-port", &base.to_string()])
        .env("TMPDIR", tmp.path())
        .stderr(Stdio::null());
    let mut child = common::cluster_up_started(cmd);
    // a real client on node 1's port, base + 1; its metrics endpoint on base + 2000 + 1
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{}/", base + 1)).unwrap().get_connection().unwrap();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con).unwrap();
    let v: String = redis::cmd("GET").arg("k").query(&mut con).unwrap();
    assert_eq!(v, "v");
    assert!(std::net::TcpStream::connect(("127.0.0.1", base + 2001)).is_ok(), "metrics of node 1");

    let again = Command::new(common::exe())
        .args(["cluster", "up", "--nodes", "2", "--base-port", &base.to_string()])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success() && err.contains(&format!("port {base} is in use")), "{err}");
    // SAFETY: signalling a process this test started
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert!(child.wait().unwrap().success());

    let low = Command::new(common::exe()).args(["cluster", "up", "--base-port", "80"]).output().unwrap();
    let err = String::from_utf8_lossy(&low.stderr);
    assert!(!low.status.success() && err.contains("pick a base from 1024 to 63533"), "{err}");
}
