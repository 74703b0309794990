//! How the simulator's cost grows with the cluster: the `c3` setup (T = 500 ms) at 50, 500 and
//! 5,000 servers (10,000 with `TAILOR_SCALE_MAX=10000`), clients 3x servers and requests
//! `TAILOR_SCALE_REQS_PER_SERVER` (default 2,000) per server (`common::size_overrides`), one
//! selector at a time, each size in a fresh process on one thread so its peak memory is its own. Prints simulated requests
//! per second and peak RSS per size; asserts nothing. Run with
//! `cargo bench -p tailor-sim --bench scale` (`TAILOR_SCALE_SELECTORS=c3,random` to choose,
//! `TAILOR_SCALE_REPEAT=3` to run each size three times and print the fastest: on a shared
//! machine one run can be off by a quarter).

mod common;

use common::{size_overrides, CLIENTS_PER_SERVER, REQUESTS_PER_SERVER};
use std::process::Command;
use std::time::Instant;
use tailor_spec::{expand, presets::preset};

/// Set in a child process: `servers,requests,selector` of the one run it measures.
const CHILD: &str = "TAILOR_SCALE_CHILD";

fn main() {
    match std::env::var(CHILD) {
        Ok(job) => child(&job),
        Err(_) => parent(),
    }
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn parent() {
    let max: usize = env_or("TAILOR_SCALE_MAX", "5000").parse().expect("TAILOR_SCALE_MAX is a number");
    let per_server: u64 = env_or("TAILOR_SCALE_REQS_PER_SERVER", &REQUESTS_PER_SERVER.to_string())
        .parse()
        .expect("TAILOR_SCALE_REQS_PER_SERVER is a number");
    let selectors = env_or("TAILOR_SCALE_SELECTORS", "random,c3");
    let repeat: usize = env_or("TAILOR_SCALE_REPEAT", "1").parse().expect("TAILOR_SCALE_REPEAT is a number");
    println!(
        "{:<10} {:>8} {:>8} {:>11} {:>9} {:>13} {:>14}",
        "selector", "servers", "clients", "requests", "seconds", "requests/s", "peak RSS (MB)"
    );
    for selector in selectors.split(',') {
        for servers in [50usize, 500, 5_000, 10_000].into_iter().filter(|&s| s <= max) {
            let requests = per_server * servers as u64;
            let runs = (0..repeat.max(1)).map(|_| run_child(servers, requests, selector));
            let fastest = runs.min_by(|a, b| seconds(a).total_cmp(&seconds(b))).expect("one run at least");
            print!("{fastest}");
        }
    }
}

/// One size in a child process: its line.
fn run_child(servers: usize, requests: u64, selector: &str) -> String {
    let out = Command::new(std::env::current_exe().expect("own path"))
        .env(CHILD, format!("{servers},{requests},{selector}"))
        .output()
        .expect("run a size in a child process");
    assert!(out.status.success(), "size {servers} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("a line of text")
}

/// The seconds column of a child's line.
fn seconds(line: &str) -> f64 {
    line.split_whitespace().nth(4).and_then(|s| s.parse().ok()).expect("a seconds column")
}

/// Run one size and print its line: seconds, requests/s and this process's peak RSS.
fn child(job: &str) {
    let [servers, requests, selector] = job.split(',').collect::<Vec<_>>()[..] else {
        panic!("{CHILD} is servers,requests,selector")
    };
    let servers: usize = servers.parse().expect("servers");
    let requests: u64 = requests.parse().expect("requests");
    let mut sets = vec![
        "seeds=[1]".to_string(),
        "sweep.cluster.fluctuation.interval_ms=500".to_string(),
        format!("compare.selectors={selector}"),
    ];
    sets.extend(size_overrides(servers, requests));
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let spec = preset("c3").expect("c3 preset").with_overrides(&sets).expect("overrides");
    let plan = expand(&spec).expect("plans").remove(0);
    let started = Instant::now();
    let out = tailor_sim::run(&plan, None).expect("run");
    let secs = started.elapsed().as_secs_f64();
    assert!(out.result.requests > 0, "the run measured requests");
    println!(
        "{:<10} {:>8} {:>8} {:>11} {:>9.2} {:>13.0} {:>14.0}",
        selector,
        servers,
        CLIENTS_PER_SERVER * servers,
        requests,
        secs,
        requests as f64 / secs,
        peak_rss_kb() as f64 / 1024.0
    );
}

/// This process's peak resident set (`VmHWM`), in KB.
fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM line");
    line.split_whitespace().nth(1).and_then(|kb| kb.parse().ok()).expect("VmHWM in kB")
}
