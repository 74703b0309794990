//! Tailor's open-loop load generator against live store nodes.
//!
//! [`run`] takes a spec (one point: sweeps are the experiment runner's job), generates the run's
//! requests up front with tailor-core's workload generators ([`schedule`]), writes every key the
//! run will read (the load phase, not measured), then sends each request at its intended time
//! and records its latency from that time ([`record`]), so a stalled cluster cannot hide its
//! stall by slowing the generator down (no coordinated omission).
//!
//! Choices (where the brief left room):
//! - **Connections**: `connections` TCP connections (default 64) spread round-robin over the
//!   nodes; each carries **one request at a time** (no pipelining). A request waits in its
//!   coordinator's FIFO queue until one of that node's connections is free, and the wait counts.
//! - **Coordinators**: round-robin over the nodes by request index, or, when the spec has a
//!   `workload.skew`, drawn with that demand skew across the nodes.
//! - **Timing**: a dedicated OS thread sleeps until each intended time (precise to tens of µs,
//!   finer than tokio's 1 ms timer) and hands the request to the connection tasks.
//! - **Broken and refused connections**: a request whose kept connection turns out broken (its
//!   coordinator died or restarted since) is sent once more on a fresh one; a coordinator that
//!   refuses connections (down) is passed over for the next node that takes one, for that
//!   request. A client driver does both; without them a killed node's share of the schedule
//!   fails at the client whatever the replica selection does (`resends`,
//!   `coordinator_failovers` in the run's `extra`).
//! - **Timeouts**: a request's deadline is its intended time + `timeout`; one dequeued after its
//!   deadline is a timeout without being sent; a connection that timed out is dropped and
//!   reopened (a late reply would otherwise be read as the next request's).
//! - **Duration** includes the warm-up; both default to the spec (`workload.requests / rate`,
//!   `workload.warmup_ms`). Requests *intended* before the end of the warm-up are not measured.
//! - **Stretch** is latency over the spec's nominal processing time of the value
//!   (`cluster.service`), the only processing time the bench knows.
//! - **Validity**: every run is judged by [`validity`] (send lag, timeouts, errors, achieved
//!   rate) and carries the verdict in its `valid` and `invalid_reasons` fields.
//! - **Multi-gets** (`workload.multiget`): a share of reads are one `MGET` of that many
//!   distinct keys, drawn as the simulator draws them ([`multiget`]); their latency (intended
//!   time to the whole reply) is kept apart from the single reads' in the run's `multiget`
//!   section, the simulator's (its straggler gap is not seen by a client: zero).
//! - **Not measured by the bench alone**: `small_behind_large` (0) and `per_server_load` (empty):
//!   the bench sees coordinators, not which replica served a read (`tailor experiment` fills
//!   `per_server_load` from the nodes' metrics).

pub mod driver;
pub mod host;
pub mod multiget;
pub mod node_cpu;
pub mod record;
pub mod resp;
pub mod schedule;
pub mod target;
pub mod validity;

use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use tailor_core::results::{Results, RunResult, RESULTS_FORMAT};
use tailor_core::workload::TraceRecord;
use tailor_spec::Spec;

pub use record::SecondStats;

/// Why a bench run could not run or its output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The spec's workload cannot be generated (message names the field).
    #[error("spec: {0}")]
    Spec(String),
    /// Bad bench options.
    #[error("{0}")]
    Config(String),
    /// A file or runtime operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was attempted.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

/// Everything a bench run needs. Build with [`BenchConfig::new`] and adjust the fields.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Client (RESP) addresses of the nodes; every node acts as a coordinator.
    pub nodes: Vec<SocketAddr>,
    /// The spec (one point) whose `[workload]` drives the run.
    pub spec: Spec,
    /// Seed of the workload stream (default: the spec's first seed).
    pub seed: Option<u64>,
    /// Offered rate in requests/s (overrides the spec).
    pub rate: Option<f64>,
    /// Offered load factor (overrides the spec; see [`schedule::offered_rate`]).
    pub load: Option<f64>,
    /// Run length including warm-up (default: `workload.requests / rate`, or the trace's span).
    pub duration: Option<Duration>,
    /// Warm-up, excluded from results (default: `workload.warmup_ms`).
    pub warmup: Option<Duration>,
    /// TCP connections, spread over the nodes (at least one per node).
    pub connections: usize,
    /// Per-request timeout, counted from the intended send time.
    pub timeout: Duration,
    /// At most this many keys are loaded (`Some(0)` skips the load phase).
    pub load_keys: Option<u64>,
    /// Selector label of the run (default: asked from the cluster).
    pub selector_label: Option<String>,
    /// Local policy label of the run (default: asked from the cluster).
    pub local_label: Option<String>,
    /// Swept parameters of this point, echoed into the run's `params`.
    pub params: BTreeMap<String, String>,
    /// The trace's requests, when the spec replays one ([`tailor_spec::trace::load`]).
    pub trace: Option<Vec<TraceRecord>>,
    /// Tokio worker threads of the client.
    pub threads: usize,
    /// Print load-phase progress and a progress line each second on stderr.
    pub progress: bool,
    /// Gets the instant of the run's time 0 as the open loop starts (after the load phase), so
    /// that faults (`cluster.faults`) are injected at their times in the run.
    pub epoch: Option<std::sync::mpsc::Sender<std::time::Instant>>,
}

impl BenchConfig {
    /// A config with the defaults: 64 connections, 2 s timeout, 2 threads, no progress output.
    pub fn new(nodes: Vec<SocketAddr>, spec: Spec) -> BenchConfig {
        BenchConfig {
            nodes,
            spec,
            seed: None,
            rate: None,
            load: None,
            duration: None,
            warmup: None,
            connections: 64,
            timeout: Duration::from_secs(2),
            load_keys: None,
            selector_label: None,
            local_label: None,
            params: BTreeMap::new(),
            trace: None,
            threads: 2,
            progress: false,
            epoch: None,
        }
    }
}

/// What the load phase did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoadStats {
    /// Keys written successfully.
    pub keys: u64,
    /// Keys whose write failed.
    pub errors: u64,
    /// Wall time of the load phase, s.
    pub seconds: f64,
}

/// The outcome of a run.
#[derive(Clone, Debug)]
pub struct BenchOutput {
    /// The results file (engine "live", one run).
    pub results: Results,
    /// One row per second of the run.
    pub timeseries: Vec<SecondStats>,
    /// The load phase.
    pub load: LoadStats,
    /// A few distinct error messages seen during the run.
    pub error_samples: Vec<String>,
    /// Every read, when the spec has faults (for the failover figures); empty otherwise.
    pub reads: Vec<record::ReadRecord>,
}

impl BenchOutput {
    /// The run's figures (outputs of [`run`] always hold exactly one run; panics on an empty `runs`).
    pub fn run(&self) -> &RunResult {
        &self.results.runs[0]
    }

    /// Write `results.json`, `timeseries.csv` and `timeseries.json` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), BenchError> {
        std::fs::create_dir_all(dir).map_err(io(format!("create {}", dir.display())))?;
        let json = serde_json::to_string_pretty(&self.results).expect("results serialise");
        let path = dir.join("results.json");
        std::fs::write(&path, json + "\n").map_err(io(format!("write {}", path.display())))?;
        write_timeseries(dir, &self.timeseries)
    }
}

/// Write `timeseries.csv` and `timeseries.json` into `dir`.
pub fn write_timeseries(dir: &Path, rows: &[SecondStats]) -> Result<(), BenchError> {
    std::fs::create_dir_all(dir).map_err(io(format!("create {}", dir.display())))?;
    let mut csv = String::from("second,warmup,offered,completed,errors,p50_ms,p99_ms,max_ms\n");
    for r in rows {
        csv.push_str(&format!(
            "{},{},{},{},{},{:.3},{:.3},{:.3}\n",
            r.second, r.warmup, r.offered, r.completed, r.errors, r.p50_ms, r.p99_ms, r.max_ms
        ));
    }
    let path = dir.join("timeseries.csv");
    std::fs::write(&path, csv).map_err(io(format!("write {}", path.display())))?;
    let path = dir.join("timeseries.json");
    let json = serde_json::to_string_pretty(rows).expect("rows serialise");
    std::fs::write(&path, json + "\n").map_err(io(format!("write {}", path.display())))
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> BenchError {
    move |source| BenchError::Io { what, source }
}

/// Run the bench against Tailor's store nodes (RESP): load phase, then the open-loop run;
/// blocks until done.
///
/// Builds its own tokio runtime, so call it from a plain thread (or `spawn_blocking`). Errors,
/// refused connections and timeouts during the run do not fail it: they are counted in the
/// results. Only bad options, a bad spec or an unusable runtime return `Err`.
pub fn run(cfg: &BenchConfig) -> Result<BenchOutput, BenchError> {
    check(cfg)?;
    let target = std::sync::Arc::new(target::RespTarget { nodes: cfg.nodes.clone() });
    runtime(cfg)?.block_on(run_on(cfg, target))
}

/// The client's tokio runtime: `cfg.threads` workers, timers and I/O on.
pub fn runtime(cfg: &BenchConfig) -> Result<tokio::runtime::Runtime, BenchError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.threads.max(1))
        .enable_all()
        .build()
        .map_err(io("start the tokio runtime".into()))
}

/// Run the bench against any [`target::Target`] from inside a tokio runtime; results are
/// labelled with engine "live".
pub async fn run_on<T: target::Target>(
    cfg: &BenchConfig,
    target: std::sync::Arc<T>,
) -> Result<BenchOutput, BenchError> {
    check(cfg)?;
    let out = driver::run(cfg, target).await?;
    let results = Results {
        format: RESULTS_FORMAT,
        tailor_version: env!("CARGO_PKG_VERSION").to_string(),
        experiment: cfg.spec.name.clone(),
        engine: "live".into(),
        spec: cfg.spec.to_toml(),
        runs: vec![out.result],
    };
    Ok(BenchOutput {
        results,
        timeseries: out.timeseries,
        load: out.load,
        error_samples: out.error_samples,
        reads: out.reads,
    })
}

/// Options every run needs.
fn check(cfg: &BenchConfig) -> Result<(), BenchError> {
    if cfg.nodes.is_empty() {
        return Err(BenchError::Config("--nodes: give at least one node address".into()));
    }
    if cfg.connections < cfg.nodes.len() {
        return Err(BenchError::Config(format!(
            "--connections {} is fewer than the {} nodes (each node needs one)",
            cfg.connections,
            cfg.nodes.len()
        )));
    }
    if cfg.timeout.is_zero() {
        return Err(BenchError::Config("the request timeout must be > 0".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::{FrameReader, Reply};
    use std::sync::{Arc, Mutex};
    use std::time::Instant;
    use tokio::io::AsyncWriteExt;

    /// A RESP server on a background thread: `GET` answers a 3-byte value, `SET` OK,
    /// `TAILOR.GET selector|local` fake labels. Every reply due between `stall_after` and
    /// `stall_after + stall` past the first `GET` is held until the stall ends.
    fn fake_node(stall_after: Duration, stall: Duration) -> SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let first_get: Arc<Mutex<Option<Instant>>> = Arc::default();
                loop {
                    let Ok((stream, _)) = listener.accept().await else { return };
                    let first_get = first_get.clone();
                    tokio::spawn(async move {
                        let (r, mut w) = stream.into_split();
                        let mut r = FrameReader::new(r);
                        while let Ok(Reply::Array(args)) = r.next().await {
                            let arg = |i: usize| match args.get(i) {
                                Some(Reply::Bulk(b)) => String::from_utf8_lossy(b).to_ascii_lowercase(),
                                _ => String::new(),
                            };
                            let reply: &[u8] = match (arg(0).as_str(), arg(1).as_str()) {
                                ("get", _) => b"$3\r\nabc\r\n",
                                ("set", _) => b"+OK\r\n",
                                ("tailor.get", "selector") => b"$8\r\nfake-sel\r\n",
                                ("tailor.get", _) => b"-ERR unknown knob\r\n",
                                ("info", _) => b"$16\r\nlocal:fake-local\r\n",
                                _ => b"-ERR unknown command\r\n",
                            };
                            if arg(0) == "get" {
                                let t0 = *first_get.lock().unwrap().get_or_insert_with(Instant::now);
                                let (from, to) = (t0 + stall_after, t0 + stall_after + stall);
                                let now = Instant::now();
                                if now >= from && now < to {
                                    tokio::time::sleep_until(to.into()).await;
                                }
                            }
                            if w.write_all(reply).await.is_err() {
                                return;
                            }
                        }
                    });
                }
            });
        });
        addr
    }

    fn config(addr: SocketAddr, rate: f64, secs: f64) -> BenchConfig {
        let mut spec = Spec::default();
        spec.workload.keys = 100;
        let mut cfg = BenchConfig::new(vec![addr], spec);
        cfg.rate = Some(rate);
        cfg.duration = Some(Duration::from_secs_f64(secs));
        cfg.connections = 4;
        cfg.timeout = Duration::from_secs(2);
        cfg
    }

    #[test]
    fn a_stall_shows_in_the_latency_of_requests_intended_during_it() {
        // 200 req/s for 1.2 s, the node holds every reply for 300 ms, 400 ms into the run. About
        // 60 requests are intended during the stall: open-loop they wait for the stall's end, so
        // ~40 of ~240 see >= 100 ms and the p95 is in the stall. A closed-loop client with 4
        // connections would have caught only 4 slow requests, putting its p95 near zero.
        let addr = fake_node(Duration::from_millis(400), Duration::from_millis(300));
        let out = run(&config(addr, 200.0, 1.2)).unwrap();
        let r = out.run();
        let l = r.read_latency_ms;
        assert!(l.max >= 250.0, "max {l:?}");
        assert!(l.p95 >= 100.0, "p95 should be inside the stall: {l:?}");
        assert!(l.p50 < 50.0, "most requests are fast: {l:?}");
        assert!((180..300).contains(&r.requests), "{} requests", r.requests);
        assert_eq!(r.errors, 0);
        assert_eq!((r.selector.as_str(), r.local.as_str()), ("fake-sel", "fake-local"));
        assert_eq!(r.offered_rps, 200.0);
        assert!(r.extra["send_lag_max_ms"] >= 100.0, "requests waited for a free connection: {:?}", r.extra);
        // 4 connections held 300 ms at 200 req/s: about 55 requests found all four busy
        let starved = r.extra["starved_requests"];
        assert!((20.0..=80.0).contains(&starved), "requests that found every connection busy: {starved}");
        assert_eq!(out.load.errors, 0);
        assert!(out.load.keys > 50, "{:?}", out.load);
        assert_eq!(out.results.engine, "live");
        let offered: u64 = out.timeseries.iter().map(|s| s.offered).sum();
        assert_eq!(offered, r.requests + r.errors);
    }

    #[test]
    fn nothing_listening_counts_every_request_as_an_error_and_still_writes_results() {
        let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let mut cfg = config(addr, 100.0, 0.5);
        cfg.warmup = Some(Duration::from_millis(100));
        let out = run(&cfg).unwrap();
        let r = out.run();
        let total: u64 = out.timeseries.iter().map(|s| s.offered).sum();
        assert!(total > 20, "{total}");
        assert_eq!(r.requests, 0);
        assert!(r.errors > 0);
        assert_eq!(r.errors + r.extra["warmup_errors"] as u64, total);
        assert_eq!((r.selector.as_str(), r.local.as_str()), ("unknown", "unknown"));
        assert!(out.load.errors > 0 && out.load.keys == 0);
        assert!(!out.error_samples.is_empty());
        let dir = tempfile::tempdir().unwrap();
        out.write(dir.path()).unwrap();
        let back: Results =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("results.json")).unwrap()).unwrap();
        assert_eq!(back, out.results);
        let csv = std::fs::read_to_string(dir.path().join("timeseries.csv")).unwrap();
        assert!(csv.starts_with("second,warmup,offered,completed,errors,"), "{csv}");
        assert_eq!(csv.lines().count(), out.timeseries.len() + 1);
    }

    #[test]
    fn bad_options_are_errors() {
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let mut cfg = config(addr, 100.0, 1.0);
        cfg.connections = 0;
        assert!(run(&cfg).unwrap_err().to_string().contains("--connections"));
        let mut cfg = config(addr, 100.0, 1.0);
        cfg.warmup = Some(Duration::from_secs(2));
        assert!(run(&cfg).unwrap_err().to_string().contains("warm-up"));
        let cfg = BenchConfig::new(vec![], Spec::default());
        assert!(run(&cfg).unwrap_err().to_string().contains("--nodes"));
    }
}
