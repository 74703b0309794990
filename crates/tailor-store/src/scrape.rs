//! What a node's Prometheus endpoint serves: its counters and histograms ([`Metrics`]) and the
//! families read at scrape time, so a scrape costs nothing between scrapes: queue and workers,
//! hints, peers, open connections, this process's resources ([`crate::process`]) and the storage
//! engine's files.
//!
//! [`Metrics`]: crate::metrics::Metrics

use crate::metrics::Family;
use crate::node::Node;
use std::sync::atomic::Ordering;

/// The whole exposition of `node`.
pub fn render(node: &Node) -> String {
    let l = format!("node=\"{}\"", node.cfg.id);
    let mut families = replica(node, &l);
    families.extend(hints(node, &l));
    families.extend(recovery(node, &l));
    families.extend(connections(node, &l));
    families.extend(process());
    families.extend(storage(node, &l));
    families.extend(row_cache(node, &l));
    node.metrics.render(node.cfg.id, &node.cfg.selector, &node.cfg.local, &families)
}

/// One sample labelled `l`.
fn one(l: &str, v: f64) -> Vec<(String, f64)> {
    vec![(l.to_string(), v)]
}

fn replica(node: &Node, l: &str) -> Vec<Family> {
    vec![
        Family::gauge("tailor_queue_length", "Requests waiting in the replica's local queue.", {
            one(l, node.replica.queue_len() as f64)
        }),
        Family::gauge("tailor_workers", "Replica worker threads.", one(l, node.replica.workers() as f64)),
        Family::gauge("tailor_healthy", "1 while the replica's disk takes writes and its workers can run requests.", {
            one(l, node.replica.healthy() as u8 as f64)
        }),
        Family::gauge("tailor_disk_failed", "1 once the storage engine refused writes (disk_failure_policy).", {
            one(l, node.storage.disk_state().failed() as u8 as f64)
        }),
        Family::gauge("tailor_buffered_bytes", "Bytes of clients' partly received input held (max_buffered_bytes).", {
            one(l, node.budget.used() as f64)
        }),
        Family::gauge(
            "tailor_peer_buffered_bytes",
            "Bytes of peers' partly received frames held (a max_buffered_bytes of their own).",
            one(l, node.peer_budget.used() as f64),
        ),
        Family::gauge(
            "tailor_client_buffered_bytes_max",
            "Bytes the client (source address) holding the most holds beyond idle buffers (max_buffered_bytes_per_client).",
            one(l, node.client_shares.largest().0 as f64),
        ),
        Family::counter(
            "tailor_client_budget_waits_total",
            "Times a client connection stopped reading to wait for its client's share (max_buffered_bytes_per_client).",
            one(l, node.client_shares.waits() as f64),
        ),
        Family::gauge("tailor_clock_offset_ms", "This node's clock minus its peers' (median), in ms.", {
            one(l, node.hlc.offset_ms() as f64)
        }),
        Family::gauge("tailor_clock_skewed", "1 while the clock offset is beyond max_clock_offset_ms (no writes).", {
            one(l, node.hlc.skew().is_err() as u8 as f64)
        }),
    ]
}

fn hints(node: &Node, l: &str) -> Vec<Family> {
    let Some(h) = &node.hints else { return Vec::new() };
    let st = h.stats();
    vec![
        Family::gauge("tailor_hints_pending", "Writes kept for peers that missed them.", one(l, st.pending as f64)),
        Family::counter("tailor_hints_stored_total", "Hints kept.", one(l, st.stored as f64)),
        Family::counter("tailor_hints_replayed_total", "Hints delivered.", one(l, st.replayed as f64)),
        Family::counter("tailor_hints_dropped_total", "Hints dropped at hint_max_bytes.", one(l, st.dropped as f64)),
        Family::counter("tailor_hints_undeliverable_total", "Hints dropped: refused, or failing past the retries.", {
            one(l, st.undeliverable as f64)
        }),
    ]
}

fn recovery(node: &Node, l: &str) -> Vec<Family> {
    vec![
        Family::gauge("tailor_recovering", "1 while this node is recovering: not read at ONE (recovery_max_s).", {
            one(l, node.network.recovery.is_recovering() as u8 as f64)
        }),
        Family::counter(
            "tailor_reads_avoided_recovering_total",
            "Reads at ONE steered away from recovering replicas.",
            one(l, node.metrics.reads_avoided_recovering.load(Ordering::Relaxed) as f64),
        ),
    ]
}

fn connections(node: &Node, l: &str) -> Vec<Family> {
    let peers = node.peers.iter().flatten();
    let up = peers.clone().map(|p| (format!("{l},peer=\"{}\"", p.id), p.is_up() as u8 as f64)).collect();
    let recovering = peers.clone().map(|p| (format!("{l},peer=\"{}\"", p.id), p.recovering() as f64)).collect();
    let outgoing = peers.filter(|p| p.connected()).count();
    let incoming = node.cfg.max_peer_connections - node.peer_slots.available_permits();
    vec![
        Family::gauge("tailor_peer_up", "1 while the failure detector considers the peer up.", up),
        Family::gauge(
            "tailor_peer_recovering",
            "The peer's recovery level: 0 caught up, 1 recovering, 2 also behind (hints wait for it).",
            recovering,
        ),
        Family::gauge("tailor_client_connections", "Client connections open (plain and TLS).", {
            one(l, node.clients.open.load(Ordering::Relaxed) as f64)
        }),
        Family::gauge(
            "tailor_peer_connections",
            "Internode connections open: out to peers, in from peers.",
            vec![
                (format!("{l},direction=\"out\""), outgoing as f64),
                (format!("{l},direction=\"in\""), incoming as f64),
            ],
        ),
    ]
}

/// Prometheus's standard process families; none where `/proc` is missing.
fn process() -> Vec<Family> {
    let sample = |v: Option<f64>| v.map(|v| vec![(String::new(), v)]).unwrap_or_default();
    vec![
        Family::gauge("process_resident_memory_bytes", "Resident memory size in bytes.", {
            sample(crate::process::rss_bytes().map(|b| b as f64))
        }),
        Family::counter("process_cpu_seconds_total", "User and system CPU time spent in seconds.", {
            sample(crate::process::cpu_seconds())
        }),
        Family::gauge(
            "process_open_fds",
            "Open file descriptors.",
            sample(crate::process::open_fds().map(|n| n as f64)),
        ),
    ]
}

fn storage(node: &Node, l: &str) -> Vec<Family> {
    let d = node.storage.disk();
    let bytes = |v: Option<u64>| v.map(|v| one(l, v as f64)).unwrap_or_default();
    let tables = d.tables.iter().map(|(ks, n)| (format!("{l},keyspace=\"{ks}\""), *n as f64)).collect();
    vec![
        Family::gauge("tailor_storage_disk_bytes", "Bytes of the storage engine's files.", bytes(d.bytes)),
        Family::gauge("tailor_storage_journal_bytes", "Bytes of the write-ahead journals.", bytes(d.journal_bytes)),
        Family::gauge("tailor_storage_journals", "Write-ahead journal files.", one(l, d.journals as f64)),
        Family::gauge("tailor_storage_keys", "Values stored here, the engine's estimate.", one(l, d.keys as f64)),
        Family::gauge("tailor_storage_tables", "Sorted table files (LSM segments) per keyspace.", tables),
        Family::counter("tailor_storage_compactions_total", "Compactions finished since the node started.", {
            one(l, d.compactions as f64)
        }),
    ]
}

fn row_cache(node: &Node, l: &str) -> Vec<Family> {
    let c = node.storage.row_cache();
    vec![
        Family::counter("tailor_row_cache_hits_total", "Reads answered by the row cache.", one(l, c.hits as f64)),
        Family::counter("tailor_row_cache_misses_total", "Reads the row cache sent to the engine.", {
            one(l, c.misses as f64)
        }),
        Family::gauge("tailor_row_cache_bytes", "Bytes the row cache holds (of row_cache_mb).", one(l, c.bytes as f64)),
        Family::gauge("tailor_row_cache_rows", "Rows the row cache holds.", one(l, c.rows as f64)),
    ]
}
