//! Counters and the Prometheus text endpoint (hand-written plain HTTP/1.0 on its own port).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Upper bounds (seconds) of the service-time histogram buckets.
pub const SERVICE_BUCKETS: &[f64] = &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0];

/// Upper bounds (seconds) of the end-to-end latency buckets: from a cached local read to a
/// request that waited out timeouts and retries.
pub const LATENCY_BUCKETS: &[f64] =
    &[0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

/// How a read the coordinator handled went, counted once when it resolves: the label of
/// `tailor_read_decisions_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    /// The selector chose a replica at once and that one copy carried the read.
    Sent,
    /// The selector said wait: the read waited in its group's backlog (served later, or expired).
    Parked,
    /// A second copy went out: a retry after a failure, or a speculative retry of a late one.
    Retried,
    /// A read at QUORUM or ALL: sent to the replicas without asking the selector.
    Fanout,
    /// Failed before any copy left: no replica up, or the backlog was full.
    Refused,
}

impl ReadOutcome {
    /// Every outcome, in exposition order.
    pub const ALL: [ReadOutcome; 5] =
        [ReadOutcome::Sent, ReadOutcome::Parked, ReadOutcome::Retried, ReadOutcome::Fanout, ReadOutcome::Refused];

    /// Its `outcome` label.
    pub fn label(self) -> &'static str {
        match self {
            ReadOutcome::Sent => "sent",
            ReadOutcome::Parked => "parked",
            ReadOutcome::Retried => "retried",
            ReadOutcome::Fanout => "fanout",
            ReadOutcome::Refused => "refused",
        }
    }
}

/// A metric family read at scrape time (a queue length, resident memory, bytes on disk).
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// Its name.
    pub name: &'static str,
    /// Its `# HELP` text.
    pub help: &'static str,
    /// `gauge` or `counter` (a total another part keeps, such as the engine's compactions).
    pub kind: &'static str,
    /// Samples: the labels inside the braces (empty: none) and the value.
    pub samples: Vec<(String, f64)>,
}

impl Family {
    /// A gauge with one sample per `(labels, value)`.
    pub fn gauge(name: &'static str, help: &'static str, samples: Vec<(String, f64)>) -> Family {
        Family { name, help, kind: "gauge", samples }
    }

    /// A counter another part keeps, with one sample per `(labels, value)`.
    pub fn counter(name: &'static str, help: &'static str, samples: Vec<(String, f64)>) -> Family {
        Family { name, help, kind: "counter", samples }
    }

    /// Append its exposition; a family without samples is left out (Prometheus's rule).
    fn render(&self, o: &mut String) {
        if self.samples.is_empty() {
            return;
        }
        let _ = writeln!(o, "# HELP {} {}\n# TYPE {} {}", self.name, self.help, self.name, self.kind);
        for (labels, v) in &self.samples {
            let _ = if labels.is_empty() {
                writeln!(o, "{} {v}", self.name)
            } else {
                writeln!(o, "{}{{{labels}}} {v}", self.name)
            };
        }
    }
}

/// A Prometheus histogram of durations with fixed buckets, updated lock-free.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Samples per bucket (not cumulative; rendering accumulates).
    buckets: Vec<AtomicU64>,
    sum_ns: AtomicU64,
    count: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new(LATENCY_BUCKETS)
    }
}

impl Histogram {
    /// An empty histogram with these bucket upper bounds (seconds, ascending).
    pub fn new(bounds: &'static [f64]) -> Histogram {
        assert!(bounds.windows(2).all(|w| w[0] < w[1]), "bucket bounds ascend");
        Histogram {
            bounds,
            buckets: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    /// Record one duration of `ns` nanoseconds.
    pub fn observe(&self, ns: u64) {
        let s = ns as f64 / 1e9;
        if let Some(i) = self.bounds.iter().position(|&b| s <= b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Append the histogram's exposition as `name` with `labels`.
    fn render(&self, o: &mut String, name: &str, help: &str, labels: &str) {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} histogram");
        self.render_series(o, name, labels);
    }

    /// Append the buckets, sum and count as one series of family `name` (no HELP/TYPE lines:
    /// a family with several label sets has them once).
    fn render_series(&self, o: &mut String, name: &str, labels: &str) {
        let mut cum = 0;
        for (b, c) in self.bounds.iter().zip(&self.buckets) {
            cum += c.load(Ordering::Relaxed);
            let _ = writeln!(o, "{name}_bucket{{{labels},le=\"{b}\"}} {cum}");
        }
        let count = self.count.load(Ordering::Relaxed);
        let _ = writeln!(o, "{name}_bucket{{{labels},le=\"+Inf\"}} {count}");
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(o, "{name}_sum{{{labels}}} {sum}\n{name}_count{{{labels}}} {count}");
    }
}

/// A node's counters, updated lock-free by every path.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Reads this replica executed.
    pub reads_served: AtomicU64,
    /// Writes this replica executed.
    pub writes_served: AtomicU64,
    /// Client commands handled by this node's RESP endpoint.
    pub client_commands: AtomicU64,
    /// Reads this coordinator sent to each replica (index = node id).
    pub selections: Vec<AtomicU64>,
    /// Reads this coordinator parked because its selector said wait.
    pub parked: AtomicU64,
    /// Reads refused because the replica group's park queue was full, or that waited there past
    /// the request timeout.
    pub park_rejected: AtomicU64,
    /// Reads retried on another replica after a timeout or failure.
    pub retries: AtomicU64,
    /// Reads also sent to a second replica because the first was late (speculative retry).
    pub hedges: AtomicU64,
    /// Losing copies of hedged reads this coordinator asked their replica to cancel.
    pub hedge_cancels: AtomicU64,
    /// Copies this replica dropped while they waited, cancelled by their coordinator.
    pub cancelled_copies: AtomicU64,
    /// The dropped copies' estimated processing time, in ns (work saved).
    pub cancel_saved_ns: AtomicU64,
    /// Probes this coordinator sent for its selector (Prequal).
    pub probes_sent: AtomicU64,
    /// Probes this coordinator sent that were answered.
    pub probes_replied: AtomicU64,
    /// Probes this coordinator sent that got no answer in time or whose connection broke.
    pub probes_lost: AtomicU64,
    /// Probes this replica answered.
    pub probes_answered: AtomicU64,
    /// Requests to replicas that timed out.
    pub timeouts: AtomicU64,
    /// Responses whose feedback was stale (older than already applied).
    pub stale_feedback: AtomicU64,
    /// Writes acknowledged to clients.
    pub writes_acked: AtomicU64,
    /// Malformed client or internode input rejected.
    pub protocol_errors: AtomicU64,
    /// `AUTH` attempts with a wrong password.
    pub auth_failures: AtomicU64,
    /// Internode frames whose tag did not verify with the cluster secret.
    pub forged_frames: AtomicU64,
    /// Replicas written back by blocking read repair.
    pub read_repairs: AtomicU64,
    /// Write copies a replica refused for good or as from the future (never hinted:
    /// `coordinator.rs`).
    pub refused_copies: AtomicU64,
    /// Reads at ONE whose recovering replicas were left out for caught-up ones (`recovery.rs`).
    pub reads_avoided_recovering: AtomicU64,
    /// Client writes refused because this node's clock is too far from its peers' (`hlc.rs`).
    pub skew_refusals: AtomicU64,
    /// Token ranges whose Merkle trees anti-entropy compared.
    pub repair_ranges_compared: AtomicU64,
    /// Compared ranges where some replica's tree differed.
    pub repair_ranges_mismatched: AtomicU64,
    /// Keys (with versions) anti-entropy received from other replicas' lists.
    pub repair_keys_exchanged: AtomicU64,
    /// Keys anti-entropy wrote to at least one replica that was behind.
    pub repair_keys_repaired: AtomicU64,
    /// Tombstones dropped past their grace (`gc_grace_s`).
    pub tombstones_purged: AtomicU64,
    /// Worker panics caught (the worker was replaced, its request answered with an error).
    pub worker_panics: AtomicU64,
    /// Disk failures seen (the engine refused writes, `disk.rs`): 0 or 1 per process.
    pub disk_failures: AtomicU64,
    /// Connections refused at a cap (`max_clients`, `max_peer_connections`).
    pub connections_refused: AtomicU64,
    /// Connections closed by the idle or slow-sender timeout.
    pub connections_timed_out: AtomicU64,
    /// Commands, requests or connections refused by a size limit or the input budget.
    pub limit_refusals: AtomicU64,
    /// Requests the replica answered "busy" (its queue at `max_queue`).
    pub busy_refusals: AtomicU64,
    /// TLS client handshakes that failed or did not finish within `tls_handshake_timeout_ms`.
    pub tls_handshake_failures: AtomicU64,
    /// Service time of requests this replica executed.
    pub service: Histogram,
    /// Reads this node coordinated, from the call to the coordinator to its result (failures
    /// included).
    pub read_latency: Histogram,
    /// Writes and deletes this node coordinated, the same way.
    pub write_latency: Histogram,
    /// MGETs this node coordinated, from the first key's read to the reply (all keys read).
    pub mget_latency: Histogram,
    /// Reads this node coordinated, by [`ReadOutcome`] (index = its place in `ALL`).
    pub read_decisions: [AtomicU64; 5],
    /// Their latency, from reaching the coordinator core to being resolved, by the same index.
    pub read_latency_by_outcome: [Histogram; 5],
}

impl Metrics {
    /// Counters for a cluster of `members` nodes.
    pub fn new(members: usize) -> Metrics {
        Metrics {
            selections: (0..members).map(|_| AtomicU64::new(0)).collect(),
            service: Histogram::new(SERVICE_BUCKETS),
            ..Metrics::default()
        }
    }

    /// Count one request sent to replica `node`.
    pub fn selected(&self, node: u32) {
        if let Some(c) = self.selections.get(node as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Count one resolved read with outcome `o` that took `ns` at the coordinator.
    pub fn decided(&self, o: ReadOutcome, ns: u64) {
        let i = ReadOutcome::ALL.iter().position(|&x| x == o).expect("every outcome is listed");
        self.read_decisions[i].fetch_add(1, Ordering::Relaxed);
        self.read_latency_by_outcome[i].observe(ns);
    }

    /// Reads resolved with outcome `o` so far.
    pub fn decisions(&self, o: ReadOutcome) -> u64 {
        let i = ReadOutcome::ALL.iter().position(|&x| x == o).expect("every outcome is listed");
        self.read_decisions[i].load(Ordering::Relaxed)
    }

    /// Record one service time.
    pub fn service(&self, ns: u64) {
        self.service.observe(ns);
    }

    /// The Prometheus text exposition, with `families` read at scrape time after the counters.
    pub fn render(&self, node: u32, selector: &str, local: &str, families: &[Family]) -> String {
        let mut o = String::new();
        let l = format!("node=\"{node}\",selector=\"{selector}\",local=\"{local}\"");
        let counters: [(&str, &str, &AtomicU64); 35] = [
            ("tailor_reads_served_total", "Reads executed by this replica.", &self.reads_served),
            ("tailor_writes_served_total", "Writes executed by this replica.", &self.writes_served),
            ("tailor_client_commands_total", "RESP commands handled.", &self.client_commands),
            ("tailor_parked_total", "Reads parked by the selector (wait decisions).", &self.parked),
            ("tailor_park_rejected_total", "Reads refused by a full park queue or its timeout.", &self.park_rejected),
            ("tailor_retries_total", "Reads retried on another replica.", &self.retries),
            ("tailor_speculative_retries_total", "Reads also sent to a second replica (late first).", &self.hedges),
            ("tailor_hedge_cancels_total", "Hedged reads' losing copies asked to cancel.", &self.hedge_cancels),
            ("tailor_cancelled_copies_total", "Copies dropped while queued (cancelled).", &self.cancelled_copies),
            ("tailor_cancel_saved_ns_total", "Estimated work of the dropped copies, ns.", &self.cancel_saved_ns),
            ("tailor_probes_sent_total", "Probes sent for the selector (Prequal).", &self.probes_sent),
            ("tailor_probes_replied_total", "Probes sent and answered.", &self.probes_replied),
            ("tailor_probes_lost_total", "Probes sent, unanswered in time (dropped).", &self.probes_lost),
            ("tailor_probes_answered_total", "Probes this replica answered.", &self.probes_answered),
            ("tailor_timeouts_total", "Replica requests that timed out.", &self.timeouts),
            ("tailor_stale_feedback_total", "Responses with stale feedback.", &self.stale_feedback),
            ("tailor_writes_acked_total", "Writes acknowledged to clients.", &self.writes_acked),
            ("tailor_protocol_errors_total", "Malformed inputs rejected.", &self.protocol_errors),
            ("tailor_worker_panics_total", "Worker panics caught (worker replaced).", &self.worker_panics),
            ("tailor_disk_failures_total", "Disk failures seen (disk_failure_policy).", &self.disk_failures),
            ("tailor_connections_refused_total", "Connections refused at a cap.", &self.connections_refused),
            ("tailor_connections_timed_out_total", "Connections closed idle or slow.", &self.connections_timed_out),
            (
                "tailor_limit_refusals_total",
                "Inputs refused by a limit (a size, the buffer budget, the clock offset).",
                &self.limit_refusals,
            ),
            ("tailor_busy_refusals_total", "Requests refused by a full replica queue.", &self.busy_refusals),
            ("tailor_auth_failures_total", "AUTH attempts with a wrong password.", &self.auth_failures),
            ("tailor_read_repairs_total", "Replicas written back by read repair.", &self.read_repairs),
            (
                "tailor_refused_copies_total",
                "Write copies a replica refused for good or as from the future (not hinted).",
                &self.refused_copies,
            ),
            (
                "tailor_clock_skew_refusals_total",
                "Writes refused: this node's clock is beyond max_clock_offset_ms of its peers'.",
                &self.skew_refusals,
            ),
            (
                "tailor_repair_ranges_compared_total",
                "Token ranges whose Merkle trees anti-entropy compared.",
                &self.repair_ranges_compared,
            ),
            (
                "tailor_repair_ranges_mismatched_total",
                "Compared token ranges where a replica's tree differed.",
                &self.repair_ranges_mismatched,
            ),
            (
                "tailor_repair_keys_exchanged_total",
                "Keys received from other replicas' lists by anti-entropy.",
                &self.repair_keys_exchanged,
            ),
            (
                "tailor_repair_keys_repaired_total",
                "Keys anti-entropy wrote to a replica that was behind.",
                &self.repair_keys_repaired,
            ),
            ("tailor_tombstones_purged_total", "Tombstones dropped past gc_grace_s.", &self.tombstones_purged),
            ("tailor_forged_frames_total", "Internode frames not signed with the cluster secret.", &self.forged_frames),
            (
                "tailor_tls_handshake_failures_total",
                "TLS client handshakes failed or timed out.",
                &self.tls_handshake_failures,
            ),
        ];
        for (name, help, c) in counters {
            let _ =
                writeln!(o, "# HELP {name} {help}\n# TYPE {name} counter\n{name}{{{l}}} {}", c.load(Ordering::Relaxed));
        }
        let _ = writeln!(o, "# HELP tailor_selections_total Reads this coordinator sent to each replica.");
        let _ = writeln!(o, "# TYPE tailor_selections_total counter");
        for (i, c) in self.selections.iter().enumerate() {
            let _ = writeln!(o, "tailor_selections_total{{{l},replica=\"{i}\"}} {}", c.load(Ordering::Relaxed));
        }
        let _ = writeln!(
            o,
            "# HELP tailor_read_decisions_total Reads coordinated here, by how the selector's decisions went."
        );
        let _ = writeln!(o, "# TYPE tailor_read_decisions_total counter");
        for outcome in ReadOutcome::ALL {
            let n = self.decisions(outcome);
            let _ = writeln!(o, "tailor_read_decisions_total{{{l},outcome=\"{}\"}} {n}", outcome.label());
        }
        let name = "tailor_read_decision_latency_seconds";
        let _ =
            writeln!(o, "# HELP {name} Reads coordinated here, from the coordinator core to their result, by outcome.");
        let _ = writeln!(o, "# TYPE {name} histogram");
        for (outcome, h) in ReadOutcome::ALL.iter().zip(&self.read_latency_by_outcome) {
            h.render_series(&mut o, name, &format!("{l},outcome=\"{}\"", outcome.label()));
        }
        self.service.render(&mut o, "tailor_service_seconds", "Service time of requests executed here.", &l);
        self.read_latency.render(
            &mut o,
            "tailor_read_latency_seconds",
            "Reads coordinated here, from the coordinator's call to its result.",
            &l,
        );
        self.write_latency.render(
            &mut o,
            "tailor_write_latency_seconds",
            "Writes and deletes coordinated here, from the coordinator's call to its result.",
            &l,
        );
        self.mget_latency.render(
            &mut o,
            "tailor_mget_latency_seconds",
            "MGETs coordinated here, from their first read to their reply (every key read).",
            &l,
        );
        for f in families {
            f.render(&mut o);
        }
        o
    }
}

/// Serve `render()` to every HTTP request on `listener` until the task is dropped.
pub async fn serve<F>(listener: TcpListener, render: Arc<F>)
where
    F: Fn() -> String + Send + Sync + 'static,
{
    loop {
        let Ok((mut sock, _)) = listener.accept().await else { continue };
        let render = render.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            let mut n = 0;
            // read the request head (bounded, with a deadline) and ignore it: every path is /metrics
            let head = tokio::time::timeout(std::time::Duration::from_secs(5), async {
                while n < buf.len() {
                    match sock.read(&mut buf[n..]).await {
                        Ok(0) | Err(_) => return false,
                        Ok(k) => n += k,
                    }
                    if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                        return true;
                    }
                }
                false
            })
            .await;
            if head != Ok(true) {
                return;
            }
            let body = render();
            let resp = format!(
                "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
            let _ = sock.shutdown().await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_buckets() {
        let m = Metrics::new(3);
        m.selected(1);
        m.selected(1);
        m.selected(9);
        m.service(300_000);
        m.service(2_000_000);
        m.decided(ReadOutcome::Parked, 30_000_000);
        let queue = Family::gauge("tailor_queue_length", "Waiting requests.", vec![("node=\"0\"".into(), 4.0)]);
        let rss = Family::gauge("process_resident_memory_bytes", "Resident memory.", vec![(String::new(), 9.0)]);
        let empty = Family::gauge("tailor_nothing", "Left out.", Vec::new());
        let text = m.render(0, "c3", "fcfs", &[queue, rss, empty]);
        assert!(
            text.contains("tailor_selections_total{node=\"0\",selector=\"c3\",local=\"fcfs\",replica=\"1\"} 2"),
            "{text}"
        );
        assert!(text.contains("le=\"0.0005\"} 1"), "{text}");
        assert!(text.contains("le=\"0.0025\"} 2"), "{text}");
        assert!(text.contains("tailor_service_seconds_count{node=\"0\",selector=\"c3\",local=\"fcfs\"} 2"));
        assert!(text.contains("# TYPE tailor_queue_length gauge\ntailor_queue_length{node=\"0\"} 4\n"), "{text}");
        assert!(text.contains("\nprocess_resident_memory_bytes 9\n"), "{text}");
        assert!(!text.contains("tailor_nothing"), "a family without samples is left out");
        let l = "node=\"0\",selector=\"c3\",local=\"fcfs\"";
        assert!(text.contains(&format!("tailor_read_decisions_total{{{l},outcome=\"parked\"}} 1")), "{text}");
        assert!(text.contains(&format!("tailor_read_decisions_total{{{l},outcome=\"sent\"}} 0")), "{text}");
        let name = "tailor_read_decision_latency_seconds";
        assert_eq!(text.matches(&format!("# TYPE {name} histogram")).count(), 1, "one family header");
        assert!(text.contains(&format!("{name}_bucket{{{l},outcome=\"parked\",le=\"0.05\"}} 1")), "{text}");
        assert!(text.contains(&format!("{name}_bucket{{{l},outcome=\"parked\",le=\"0.025\"}} 0")), "{text}");
        assert!(text.contains(&format!("{name}_count{{{l},outcome=\"sent\"}} 0")), "{text}");
    }

    #[test]
    fn latency_histograms_bucket_every_sample_and_count_the_slow_ones_in_inf() {
        let m = Metrics::new(1);
        m.read_latency.observe(40_000);
        m.read_latency.observe(3_000_000);
        m.read_latency.observe(30_000_000_000);
        m.write_latency.observe(700_000);
        m.mget_latency.observe(2_000_000);
        let text = m.render(0, "lor", "fcfs", &[]);
        let l = "node=\"0\",selector=\"lor\",local=\"fcfs\"";
        for line in [
            format!("tailor_read_latency_seconds_bucket{{{l},le=\"0.00005\"}} 1"),
            format!("tailor_read_latency_seconds_bucket{{{l},le=\"0.005\"}} 2"),
            format!("tailor_read_latency_seconds_bucket{{{l},le=\"10\"}} 2"),
            format!("tailor_read_latency_seconds_bucket{{{l},le=\"+Inf\"}} 3"),
            format!("tailor_read_latency_seconds_count{{{l}}} 3"),
            format!("tailor_write_latency_seconds_bucket{{{l},le=\"0.0005\"}} 0"),
            format!("tailor_write_latency_seconds_bucket{{{l},le=\"0.001\"}} 1"),
            format!("tailor_write_latency_seconds_sum{{{l}}} 0.0007"),
            format!("tailor_mget_latency_seconds_bucket{{{l},le=\"0.0025\"}} 1"),
            format!("tailor_mget_latency_seconds_count{{{l}}} 1"),
        ] {
            assert!(text.lines().any(|t| t == line), "missing {line} in\n{text}");
        }
    }
}
