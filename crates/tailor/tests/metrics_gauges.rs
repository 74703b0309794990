//! The gauges a node's Prometheus endpoint reads at scrape time, against a real client's
//! actions: process resident memory, open client and peer connections, the storage engine's
//! files, the read decision counter, whose outcomes add up to the reads sent, and the row cache.

mod common;
use common::*;
use tailor_store::cluster::ClusterOptions;

/// The value of the one sample of `name` on node `i` whose labels contain every needle.
fn sample(cl: &TestCluster, i: usize, name: &str, needles: &[&str]) -> f64 {
    let text = cl.metrics(i);
    let prefix = |l: &&str| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} "));
    let found: Vec<&str> = text.lines().filter(prefix).filter(|l| needles.iter().all(|n| l.contains(n))).collect();
    assert_eq!(found.len(), 1, "one {name} sample with {needles:?} in\n{text}");
    found[0].rsplit(' ').next().and_then(|v| v.parse().ok()).expect("a number")
}

#[test]
fn process_connection_and_storage_gauges_follow_the_node() {
    let cl = TestCluster::start(ClusterOptions { nodes: 3, ..ClusterOptions::default() }, |_| {});
    let text = cl.metrics(0);
    for family in
        ["process_resident_memory_bytes gauge", "tailor_client_connections gauge", "tailor_storage_disk_bytes gauge"]
    {
        assert!(text.contains(&format!("# TYPE {family}\n")), "{family} typed in\n{text}");
    }
    let rss = sample(&cl, 0, "process_resident_memory_bytes", &[]);
    let measured = cl.rss_mb(0) * 1024.0 * 1024.0;
    assert!(rss > 1e6 && (rss - measured).abs() < measured * 0.5, "RSS {rss} vs /proc's {measured}");
    assert!(sample(&cl, 0, "process_open_fds", &[]) > 3.0);
    // clients: exactly the connections open
    let clients = |n: f64| eventually(10, || sample(&cl, 0, "tailor_client_connections", &[]) == n);
    assert!(clients(0.0), "no client yet");
    let mut cons: Vec<redis::Connection> = (0..3).map(|_| cl.conn(0)).collect();
    assert!(clients(3.0), "three clients");
    cons.pop();
    assert!(clients(2.0), "a closed client leaves the gauge");
    // peers: heartbeats keep one connection out to each peer and one in from each
    for direction in ["out", "in"] {
        let d = format!("direction=\"{direction}\"");
        let both = eventually(10, || sample(&cl, 0, "tailor_peer_connections", &[&d]) == 2.0);
        assert!(both, "{direction}: {}", sample(&cl, 0, "tailor_peer_connections", &[&d]));
    }
    // storage: the engine's files and keys follow the writes
    for i in 0..50 {
        set(&mut cons[0], &format!("k{i}"), &value(2000, i)).expect("SET");
    }
    let journal = sample(&cl, 0, "tailor_storage_journal_bytes", &[]);
    assert!(journal >= 50.0 * 2000.0, "the journal holds the writes: {journal}");
    assert!(sample(&cl, 0, "tailor_storage_disk_bytes", &[]) >= journal, "the total includes the journal");
    assert!(eventually(10, || sample(&cl, 0, "tailor_storage_keys", &[]) == 50.0), "every replica holds every key");
    assert!(sample(&cl, 0, "tailor_storage_journals", &[]) >= 1.0);
    let tables = cl.metric(0, "tailor_storage_tables", &[]);
    assert!(tables >= 0.0 && text.contains("tailor_storage_tables{node=\"0\",keyspace=\"versions\"}"), "{text}");
    assert!(sample(&cl, 0, "tailor_storage_compactions_total", &[]) >= 0.0);
    assert!(sample(&cl, 0, "process_cpu_seconds_total", &[]) > 0.0, "the node served requests");
}

#[test]
fn read_decisions_add_up_to_the_reads_a_client_sent() {
    let cl = TestCluster::start(ClusterOptions { nodes: 3, ..ClusterOptions::default() }, |_| {});
    let mut con = cl.conn(2);
    for i in 0..20 {
        set(&mut con, &format!("k{i}"), &value(100, i)).expect("SET");
    }
    let gets = 60;
    for i in 0..gets {
        get(&mut con, &format!("k{}", i % 25)).expect("GET");
    }
    let mget: Vec<Option<Vec<u8>>> = redis::cmd("MGET").arg("k1").arg("nope").arg("k2").query(&mut con).unwrap();
    assert_eq!(mget.iter().filter(|v| v.is_some()).count(), 2);
    let reads = (gets + 3) as f64;
    let by = |o: &str| sample(&cl, 2, "tailor_read_decisions_total", &[&format!("outcome=\"{o}\"")]);
    let outcomes = ["sent", "parked", "retried", "fanout", "refused"].map(by);
    assert_eq!(outcomes.iter().sum::<f64>(), reads, "every read once: {outcomes:?}");
    assert_eq!(outcomes[4], 0.0, "every replica up: none refused");
    assert_eq!(outcomes[3], 0.0, "reads at ONE go through the selector");
    assert!(outcomes[0] > 0.0, "most reads are sent at once: {outcomes:?}");
    assert_eq!(sample(&cl, 2, "tailor_read_latency_seconds_count", &[]), reads);
    for (o, n) in ["sent", "parked", "retried", "fanout", "refused"].iter().zip(outcomes) {
        let timed = sample(&cl, 2, "tailor_read_decision_latency_seconds_count", &[&format!("outcome=\"{o}\"")]);
        assert_eq!(timed, n, "the latency of each {o} read is in its histogram");
    }
    assert_eq!(cl.metric(0, "tailor_read_decisions_total", &[]), 0.0, "node 0 coordinated nothing");
}

/// The row cache's counters follow a real client's reads exactly: written keys are cached by
/// their write (every read of them a hit), an absent key misses once and is then cached as
/// absent; with `row_cache_mb = 0` every read goes to the engine and nothing is counted.
#[test]
fn row_cache_counters_follow_the_reads() {
    // (row_cache_mb, hits, misses, rows held, at least the bytes of the 20 values)
    for (row_cache_mb, hits, misses, rows, min_bytes) in [(256, 50.0, 10.0, 30.0, 20_000.0), (0, 0.0, 0.0, 0.0, 0.0)] {
        let cl = TestCluster::start(ClusterOptions { nodes: 1, ..ClusterOptions::default() }, |c| {
            c.row_cache_mb = row_cache_mb
        });
        let mut con = cl.conn(0);
        for i in 0..20 {
            set(&mut con, &format!("k{i}"), &value(1000, i)).expect("SET");
        }
        for _ in 0..2 {
            for i in 0..20 {
                assert_eq!(get(&mut con, &format!("k{i}")).unwrap(), Some(value(1000, i)));
            }
            for i in 0..10 {
                assert_eq!(get(&mut con, &format!("absent{i}")).unwrap(), None);
            }
        }
        let got = |name| sample(&cl, 0, name, &[]);
        let counts = (got("tailor_row_cache_hits_total"), got("tailor_row_cache_misses_total"));
        assert_eq!(counts, (hits, misses), "row_cache_mb = {row_cache_mb}: hits and misses");
        assert_eq!(got("tailor_row_cache_rows"), rows, "row_cache_mb = {row_cache_mb}: rows held");
        let bytes = got("tailor_row_cache_bytes");
        assert!(bytes >= min_bytes, "row_cache_mb = {row_cache_mb}: {bytes} bytes held");
    }
}
