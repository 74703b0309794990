//! `--log-format json` writes one JSON object per log line, and `cluster up` hands the format to
//! the nodes it starts; text logs written to a file carry no colour codes.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

/// Run `tailor [format args] cluster up --nodes 1 --dir dir` until its node is up, then SIGTERM
/// it; its stderr.
fn cluster_up(dir: &Path, format: &[&str]) -> String {
    let mut cmd = Command::new(common::exe());
    cmd.args(format).args(["cluster", "up", "--nodes", "1", "--dir", dir.to_str().unwrap()]).stderr(Stdio::piped());
    let child = common::cluster_up_started(cmd);
    // SAFETY: signalling a process this test started
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn json_logs_are_json_lines_in_the_nodes_too() {
    let tmp = tempfile::tempdir().unwrap();
    cluster_up(tmp.path(), &["--log-format", "json"]);
    let log = std::fs::read_to_string(tmp.path().join("node0/node.log")).unwrap();
    let events: Vec<serde_json::Value> =
        log.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    let up = events.iter().find(|e| e["fields"]["message"] == "node up").unwrap_or_else(|| panic!("{log}"));
    assert_eq!(up["level"], "INFO");
    assert_eq!(up["fields"]["id"], 0, "structured fields stay fields: {up}");
    assert!(up["timestamp"].is_string() && up["target"] == "tailor_store::node", "{up}");
    assert!(events.iter().any(|e| e["fields"]["message"] == "node stopping"), "{log}");
}

#[test]
fn text_logs_in_a_file_have_no_colour_codes() {
    let tmp = tempfile::tempdir().unwrap();
    cluster_up(tmp.path(), &[]);
    let log = std::fs::read_to_string(tmp.path().join("node0/node.log")).unwrap();
    assert!(log.contains(" INFO ") && log.contains("node up id=0"), "{log}");
    assert!(!log.contains('\u{1b}'), "no ANSI escapes when stderr is a file: {log:?}");
    assert!(log.lines().all(|l| serde_json::from_str::<serde_json::Value>(l).is_err()), "text, not JSON");
}

#[test]
fn an_unknown_format_is_refused_with_the_choices() {
    let out = Command::new(env!("CARGO_BIN_EXE_tailor")).args(["--log-format", "xml", "presets"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("text") && err.contains("json"), "{err}");
}
