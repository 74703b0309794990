//! The Tailor policy on a real Apache Cassandra: two nodes on loopback (replication 2, reads at
//! ONE), the Cassandra Rust driver with `TailorPolicy`. Checks that the node the policy picks is
//! the node that reads (Cassandra's own per-node local read counts), that every attempt's
//! outcome and the polled facts reach the policy, and that a node killed mid-run is routed
//! around. Needs Java and Maven (the jars are fetched once into the cache).

use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::statement::Consistency;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tailor_cql::facts::{self, ReadTable};
use tailor_cql::launch::{CassandraOptions, LocalCassandra};
use tailor_cql::policy::{PolicyConfig, TailorPolicy};
use uuid::Uuid;

const KEYS: i32 = 200;

async fn connect(cluster: &LocalCassandra, policy: Arc<TailorPolicy>) -> Session {
    let profile = ExecutionProfile::builder().load_balancing_policy(policy).consistency(Consistency::One).build();
    let mut builder = SessionBuilder::new().default_execution_profile_handle(profile.into_handle());
    for addr in cluster.contact_points() {
        builder = builder.known_node_addr(addr);
    }
    builder.build().await.expect("connect to Cassandra")
}

async fn schema(session: &Session) {
    for cql in [
        "CREATE KEYSPACE smoke WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
        // no speculative retry: every read is served by exactly one node, the one picked
        "CREATE TABLE smoke.kv (k int PRIMARY KEY, v blob) WITH speculative_retry = 'NONE'",
    ] {
        session.query_unpaged(cql, &[]).await.unwrap_or_else(|e| panic!("{cql}: {e}"));
    }
    session.await_schema_agreement().await.expect("schema agreement");
    let mut insert = session.prepare("INSERT INTO smoke.kv (k, v) VALUES (?, ?)").await.expect("prepare insert");
    // at ALL, so a replica that still lacked the table cannot miss a key the reads expect
    insert.set_consistency(Consistency::All);
    for k in 0..KEYS {
        // tried again while a node still lacks the new table
        tailor_cql::bench::await_writable(session, &insert, &(k, vec![7u8; 100])).await.expect("insert");
    }
}

/// Local reads of `smoke.kv` each node has served, by host id (Cassandra's own count).
async fn local_reads(session: &Session) -> HashMap<Uuid, i64> {
    let table = ReadTable { keyspace: "smoke".into(), table: "kv".into() };
    let mut out = HashMap::new();
    for (host, stage) in facts::poll(session).await {
        let _ = stage.expect("every node's ReadStage");
        out.insert(host, facts::read_count(session, host, &table).await.expect("read count"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_routes_reads_feeds_its_selector_benches_and_avoids_a_killed_node() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = CassandraOptions { nodes: 2, heap_mb: 384, ..CassandraOptions::default() };
    let mut cluster =
        tokio::task::block_in_place(|| LocalCassandra::start(&opts, dir.path())).expect("start Cassandra");
    let cfg = PolicyConfig {
        selector: "lor".into(),
        selectors: Default::default(),
        facts_polled: true,
        replication: 2,
        servers: 2,
        workers: 32,
        seed: 1,
        attempt_bound: tailor_cql::policy::attempt_bound(Duration::from_secs(30)), // the driver's default timeout
    };
    let policy = Arc::new(TailorPolicy::new(&cfg).expect("lor runs on Cassandra"));
    let session = Arc::new(connect(&cluster, policy.clone()).await);
    schema(&session).await;
    let poller = facts::spawn(session.clone(), policy.clone(), Duration::from_millis(100));

    // every read goes where the policy sent it
    let before = local_reads(&session).await;
    let picks_before: HashMap<Uuid, u64> = policy.picks_per_host().into_iter().collect();
    let mut read = session.prepare("SELECT v FROM smoke.kv WHERE k = ?").await.expect("prepare read");
    // so that a read in flight on the node killed below is retried on the live replica (the
    // driver retries a broken connection's request only when it is marked idempotent)
    read.set_is_idempotent(true);
    let reads = 600;
    for i in 0..reads {
        let rows = session.execute_unpaged(&read, (i % KEYS,)).await.expect("read").into_rows_result().expect("rows");
        assert_eq!(rows.rows_num(), 1, "key {} was written", i % KEYS);
    }
    let after = local_reads(&session).await;
    let picks: HashMap<Uuid, u64> = policy.picks_per_host().into_iter().collect();
    for (host, n) in &after {
        let served = n - before.get(host).copied().unwrap_or(0);
        let picked = picks.get(host).copied().unwrap_or(0) - picks_before.get(host).copied().unwrap_or(0);
        eprintln!("node {host}: picked {picked}, served {served}");
        assert_eq!(served as u64, picked, "node {host} served exactly the reads the policy sent it");
        assert!(picked > 0, "lor spreads sequential reads over both replicas");
    }
    let stats = policy.stats();
    assert!(stats.polls >= 2, "polled facts reached the policy: {stats:?}");
    assert_eq!(stats.forced, 0, "lor never waits");
    assert_eq!((stats.unmatched, stats.expired), (0, 0), "every answer found the attempt it ends: {stats:?}");
    bench_c3(&cluster).await;

    // a node killed mid-run: reads keep succeeding and, once the driver sees it gone, none is sent there
    let victim = session
        .get_cluster_state()
        .get_nodes_info()
        .iter()
        .find(|n| n.address.ip() == cluster.contact_points()[1].ip())
        .map(|n| n.host_id)
        .expect("node 1 is known");
    tokio::task::block_in_place(|| cluster.kill(1));
    let killed_at = Instant::now();
    let mut failed = 0;
    let mut late_picks = 0;
    for i in 0..reads {
        let at_victim = || policy.picks_per_host().into_iter().find(|(h, _)| *h == victim).map_or(0, |(_, n)| n);
        let before = at_victim();
        if let Err(e) = session.execute_unpaged(&read, (i % KEYS,)).await {
            eprintln!("read {i} after the kill failed: {e}");
            failed += 1;
        }
        if killed_at.elapsed() > Duration::from_secs(2) {
            late_picks += at_victim() - before;
        }
    }
    eprintln!("after the kill: {failed} failed reads, {late_picks} picks of the dead node after 2 s");
    assert_eq!(failed, 0, "the driver's retry and the policy's fallback carry every read to the live replica");
    assert_eq!(late_picks, 0, "a dead node is routed around");
    let stats = policy.stats();
    let attempts = (KEYS + 2 * reads) as u64;
    assert!(stats.succeeded >= attempts, "every successful attempt reached the policy: {stats:?}");
    poller.abort();
}

/// The bench through the policy: c3 fed by polled facts, every read answered, each node's share
/// of the reads from Cassandra's own counts.
async fn bench_c3(cluster: &LocalCassandra) {
    let mut spec = tailor_spec::Spec::default();
    spec.cluster.replication = 2;
    spec.workload.keys = 300;
    let mut cfg = tailor_bench::BenchConfig::new(cluster.contact_points(), spec);
    cfg.rate = Some(200.0);
    cfg.duration = Some(Duration::from_secs(4));
    cfg.warmup = Some(Duration::from_secs(1));
    cfg.connections = 16;
    let opts = tailor_cql::bench::CqlBench {
        policy: tailor_cql::bench::Policy::parse("c3").expect("c3 is a policy"),
        poll: Some(Duration::from_millis(100)),
        pids: cluster.pids(),
    };
    let out = tailor_cql::bench::run(&cfg, &opts).await.expect("bench runs");
    let r = out.run();
    eprintln!("c3 bench: {} reads, p99 {:.2} ms, extra {:?}", r.requests, r.read_latency_ms.p99, r.extra);
    assert!(r.requests > 400, "{} reads measured", r.requests);
    assert_eq!((r.errors, r.extra["read_misses"]), (0, 0.0), "every loaded key is read back");
    assert_eq!((r.selector.as_str(), r.local.as_str()), ("c3", "cassandra"));
    assert!(r.extra["policy_fact_polls"] >= 20.0, "facts reached c3 every 100 ms");
    assert_eq!(r.extra["policy_unmatched_answers"], 0.0, "every answer found the attempt it ends");
    let shares = r.extra["node0_read_share"] + r.extra["node1_read_share"];
    assert!((shares - 1.0).abs() < 0.01, "the nodes' shares add up: {shares}");
    // the same counts sampled every 100 ms: one row per node, nearly every read in some window
    assert_eq!(r.per_server_load.len(), 2, "one row per node");
    let sampled: u64 = r.per_server_load.iter().flatten().map(|&n| u64::from(n)).sum();
    assert!(sampled as f64 >= 0.8 * r.requests as f64, "{sampled} reads sampled, {} measured", r.requests);
    assert_eq!(r.window_ms, 100.0);
}
