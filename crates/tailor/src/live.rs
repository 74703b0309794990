//! Fresh local clusters for live experiment runs: configured from a spec and a strategy pair,
//! started as `tailor node` processes, and always stopped (on success, error, panic or Ctrl-C).

use anyhow::{Context, Result};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tailor_spec::{FluctuationMode, Spec};
use tailor_store::cluster::{self, plan_and_start, stop_children, ClusterOptions};
use tailor_store::config::{Consistency, Durability};

/// Set by SIGINT/SIGTERM while an experiment runs.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Pids of the node processes of the cluster running now.
static RUNNING_NODES: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Route SIGINT and SIGTERM to [`INTERRUPTED`] instead of killing the process: a watcher thread
/// then stops the running cluster's nodes (SIGTERM, SIGKILL after 5 s) and exits with 130, so an
/// interrupted experiment never leaves a node behind, even in the middle of a load run.
pub fn catch_interrupts() {
    extern "C" fn on_signal(_: i32) {
        INTERRUPTED.store(true, Ordering::Relaxed);
    }
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    std::thread::spawn(|| loop {
        if INTERRUPTED.load(Ordering::Relaxed) {
            let mut pids: Vec<i32> =
                RUNNING_NODES.lock().map(|p| p.iter().map(|&p| p as i32).collect()).unwrap_or_default();
            // nodes of a cluster still starting are not registered yet: every child goes too
            pids.extend(cluster::children());
            pids.sort_unstable();
            pids.dedup();
            cluster::stop_pids_within(&pids, Duration::from_secs(5));
            eprintln!("\ninterrupted: {} node(s) stopped", pids.len());
            std::process::exit(130);
        }
        std::thread::sleep(Duration::from_millis(50));
    });
}

/// A running local cluster; dropping it stops every node.
pub struct LiveCluster {
    children: Vec<Child>,
    /// Each node's configuration, to restart it after a `down` fault.
    cfgs: Vec<tailor_store::config::NodeConfig>,
    /// The cluster's directory.
    dir: std::path::PathBuf,
    /// Client addresses, one per node.
    pub nodes: Vec<SocketAddr>,
    /// Metrics endpoints, one per node.
    pub metrics: Vec<SocketAddr>,
}

impl LiveCluster {
    /// Start `spec.cluster.servers` nodes running `selector` and `local` under `dir`, with the
    /// spec's service-time model and fluctuation emulated on every node.
    pub fn start(spec: &Spec, selector: &str, local: &str, dir: &Path) -> Result<LiveCluster> {
        let c = &spec.cluster;
        let opts = ClusterOptions {
            nodes: c.servers,
            replication: c.replication,
            selector: selector.to_string(),
            local: local.to_string(),
            workers: c.workers,
            write_consistency: c.write_consistency,
            read_consistency: Consistency::One,
            // experiments measure scheduling, not the disk's sync latency
            durability: Durability::Buffer,
            // the load generator shares the machine: it must keep its schedule first
            niceness: 5,
            base_port: None,
        };
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let exe = std::env::current_exe().context("finding the tailor executable")?;
        let (cfgs, children) = plan_and_start(&exe, &opts, dir, Duration::from_secs(30), |cfg| {
            cfg.selectors = spec.selector_config();
            // the spec's C3 constants as the simulator runs them, not rescaled for a real node
            cfg.c3_rates = tailor_store::config::C3Rates::AsConfigured;
            cfg.locals = spec.local.clone();
            cfg.large_value_bytes = spec.workload.large_threshold;
            cfg.size_oracle = spec.workload.oracle;
            cfg.read_repair = c.read_repair;
            // hedging as the spec says (`none` by default, as in the simulator)
            cfg.speculative_retry = c.speculative_retry.clone();
            cfg.speculative_budget = c.speculative_budget;
            cfg.hedge_cancel = c.hedge_cancel;
            cfg.vnodes = c.vnodes;
            if !c.faults.is_empty() {
                // a copy to a hung or dead replica fails after the spec's timeout, as in the simulator
                cfg.request_timeout_ms = c.failover.timeout_ms.round().max(1.0) as u64;
            }
            emulate(spec, &mut cfg.emulation);
        })
        .with_context(|| format!("starting {} nodes (logs under {})", c.servers, dir.display()))?;
        if let Ok(mut pids) = RUNNING_NODES.lock() {
            pids.extend(children.iter().map(|c| c.id()));
        }
        let cluster = LiveCluster {
            children,
            nodes: cfgs.iter().map(|c| c.client_addr).collect(),
            metrics: cfgs.iter().filter_map(|c| c.metrics_addr).collect(),
            cfgs,
            dir: dir.to_path_buf(),
        };
        Ok(cluster)
    }

    /// Start sampling every node's served-reads counter each `window`, for the per-server load
    /// series (herd behaviour and oscillations), until the returned sampler is finished.
    pub fn sample_load(&self, window: Duration) -> LoadSampler {
        let metrics = self.metrics.clone();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut last: Vec<Option<u64>> = vec![None; metrics.len()];
            let mut rows: Vec<Vec<u32>> = vec![Vec::new(); metrics.len()];
            let mut next = Instant::now() + window;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
                next += window;
                for (i, &addr) in metrics.iter().enumerate() {
                    let now =
                        cluster::http_get(addr, "/metrics").ok().and_then(|t| counter(&t, "tailor_reads_served_total"));
                    let served = match (last[i], now) {
                        (Some(a), Some(b)) => b.saturating_sub(a) as u32,
                        _ => 0,
                    };
                    if now.is_some() {
                        last[i] = now;
                    }
                    rows[i].push(served);
                }
            }
            rows
        });
        LoadSampler { stop, handle }
    }

    /// Kill node `i` with SIGKILL (a crash: nothing is flushed or handed off) and reap it.
    pub fn kill(&mut self, i: usize) -> Result<()> {
        let child = self.children.get_mut(i).with_context(|| format!("no node {i}"))?;
        child.kill().with_context(|| format!("killing node {i}"))?;
        child.wait().with_context(|| format!("reaping node {i}"))?;
        Ok(())
    }

    /// Start node `i` again from its configuration (same ports, same data, an empty row cache:
    /// a cold start) and wait until it listens. Must run on the thread that started the
    /// cluster: a node dies with the thread that spawned it.
    pub fn restart(&mut self, i: usize) -> Result<()> {
        let exe = std::env::current_exe().context("finding the tailor executable")?;
        let cfg = &self.cfgs[i];
        let child = cluster::spawn_node(&exe, cfg, &self.dir, 5, cluster::Lifetime::WithParent)
            .with_context(|| format!("restarting node {i}"))?;
        if let Ok(mut pids) = RUNNING_NODES.lock() {
            pids.retain(|&p| p != self.children[i].id());
            pids.push(child.id());
        }
        self.children[i] = child;
        let deadline = Instant::now() + Duration::from_secs(30);
        if !(cluster::wait_listening(cfg.client_listen(), deadline)
            && cluster::wait_listening(cfg.peer_listen(), deadline))
        {
            anyhow::bail!(
                "node {i} did not listen within 30 s of its restart (log: {})",
                self.dir.join(format!("node{i}/node.log")).display()
            );
        }
        Ok(())
    }

    /// Set emulation knob `knob` of node `i` to `value` (`TAILOR.SET`); the node's refusal is
    /// the error.
    pub fn set_knob(&self, i: usize, knob: &str, value: &str) -> Result<()> {
        use std::io::{BufRead, Write};
        let addr = self.nodes[i];
        let mut conn = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))
            .with_context(|| format!("connecting to node {i} at {addr}"))?;
        conn.set_read_timeout(Some(Duration::from_secs(2)))?;
        conn.write_all(&tailor_bench::resp::encode(&[b"TAILOR.SET", knob.as_bytes(), value.as_bytes()]))?;
        let mut line = String::new();
        std::io::BufReader::new(conn)
            .read_line(&mut line)
            .with_context(|| format!("node {i}: no reply to TAILOR.SET"))?;
        match line.trim_end() {
            "+OK" => Ok(()),
            reply => anyhow::bail!("node {i} refused TAILOR.SET {knob} {value}: {reply}"),
        }
    }

    /// Each node's Prometheus text, for the record.
    pub fn scrape_metrics(&self) -> Vec<String> {
        self.metrics
            .iter()
            .map(|&addr| cluster::http_get(addr, "/metrics").unwrap_or_else(|e| format!("# unavailable: {e}\n")))
            .collect()
    }

    fn stop(&mut self) {
        if let Ok(mut pids) = RUNNING_NODES.lock() {
            pids.retain(|p| !self.children.iter().any(|c| c.id() == *p));
        }
        stop_children(&mut self.children);
        self.children.clear();
    }
}

impl Drop for LiveCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The store's emulation knobs that reproduce the spec's service model on every node.
///
/// A capacity the jobs in service share (`cluster.shared_capacity`) is the nodes' emulated
/// device shared the same way (`replica/device.rs` drives the simulator's state machine).
///
/// The store's model is deterministic (`alpha * size + beta`, times `D` while slow), so the
/// exponential model becomes its mean. "Faster" fluctuation (absim: slow base, `D` times faster
/// half of the time) becomes a fast base that is `D` times slower half of the time: the same two
/// states with the same probabilities.
pub(crate) fn emulate(spec: &Spec, e: &mut tailor_store::config::EmulationConfig) {
    let (alpha, beta_ms) = spec.cluster.service.linear();
    let f = &spec.cluster.fluctuation;
    let on = f.interval_ms > 0.0 && f.factor > 1.0;
    let shrink = if on && f.mode == FluctuationMode::Faster { f.factor } else { 1.0 };
    e.alpha_ns_per_byte = alpha / shrink;
    e.beta_us = beta_ms * 1000.0 / shrink;
    e.shared_capacity = spec.cluster.shared_capacity as u64;
    let t = &spec.cluster.topology;
    if t.is_split() {
        e.racks = t.racks as u64;
        e.cross_delay_us = (t.cross_delay_ms * 1000.0).round() as u64;
    }
    if on {
        e.fluct_factor = f.factor;
        e.fluct_period_ms = f.interval_ms.round().max(1.0) as u64;
    }
}

/// A running sampler of per-node served reads; see [`LiveCluster::sample_load`].
pub struct LoadSampler {
    stop: std::sync::Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Vec<Vec<u32>>>,
}

impl LoadSampler {
    /// Stop sampling; one row per node, one count per window.
    pub fn finish(self) -> Vec<Vec<u32>> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// The value of counter `name` (with or without labels) in Prometheus text.
pub(crate) fn counter(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?;
        let rest = match rest.strip_prefix('{') {
            Some(labelled) => labelled.split_once('}')?.1,
            None => rest,
        };
        rest.strip_prefix(' ')?.trim().parse::<f64>().ok().map(|v| v as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::counter;

    #[test]
    fn reads_an_unlabelled_counter() {
        let text =
            "# TYPE tailor_reads_served_total counter\ntailor_reads_served_total_x 1\ntailor_reads_served_total 42\n";
        assert_eq!(counter(text, "tailor_reads_served_total"), Some(42));
        let labelled = "tailor_reads_served_total{node=\"0\",selector=\"c3\"} 7\n";
        assert_eq!(counter(labelled, "tailor_reads_served_total"), Some(7));
        assert_eq!(counter(text, "tailor_missing"), None);
    }
}
