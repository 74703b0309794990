//! `tailor bench --engine cassandra`: the same open-loop load generator, workload and
//! `results.json` shape as for Tailor's store, driving Cassandra through the CQL driver with one
//! replica-selection policy per run.
//!
//! Rules:
//! - Keys are `bigint` partition keys of `tailor.kv (k bigint PRIMARY KEY, v blob)`, values the
//!   bench's deterministic bytes. The keyspace has the spec's replication factor; the table has
//!   `speculative_retry = 'NONE'` so every read is served by the one node chosen.
//! - Reads at ONE (the chosen coordinator reads locally, `launch/config.rs`); writes at ALL, so a
//!   read after the load phase never misses because a replica lags.
//! - One driver session; the bench's connections become request slots (one request each at a
//!   time) over the driver's pooled connections.
//! - After the run, each node's share of the reads comes from Cassandra's own counts
//!   (`system_views.local_read_latency`), and the policy's forced picks are reported; during
//!   it, the same counts sampled every `report.window_ms` give `per_server_load`.

use crate::attempts::AttemptLog;
use crate::facts::{self, LocalReads, ReadTable};
use crate::load_sampler::LoadSampler;
use crate::policy::{PolicyConfig, TailorPolicy};
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::policies::load_balancing::{DefaultPolicy, LatencyAwarenessBuilder, LoadBalancingPolicy};
use scylla::serialize::row::SerializeRow;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Consistency;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tailor_bench::node_cpu::Schedstat;
use tailor_bench::schedule::{value_bytes, Planned};
use tailor_bench::target::{Answer, Target};
use tailor_bench::{BenchConfig, BenchError, BenchOutput};
use tailor_core::Op;

/// The replica-selection policies a Cassandra run can use.
#[derive(Clone, Debug, PartialEq)]
pub enum Policy {
    /// A tailor-core selector through [`TailorPolicy`].
    Tailor(String),
    /// The driver's `DefaultPolicy`: token-aware, replicas shuffled.
    DriverDefault,
    /// `DefaultPolicy` with the driver's latency awareness.
    DriverLatencyAware,
    /// Cassandra's server-side dynamic snitch: the driver rotates among the replicas
    /// (`round-robin`) and the cluster must run with `--dynamic-snitch`, so the coordinator may
    /// forward the read.
    ServerSnitch,
}

/// Policy names `--policy` accepts besides the tailor-core selectors.
pub const DRIVER_POLICIES: &[&str] = &["driver-default", "driver-latency-aware", "cassandra-dynamic-snitch"];

impl Policy {
    /// Parse a `--policy` name.
    pub fn parse(name: &str) -> Result<Policy, String> {
        match name {
            "driver-default" => Ok(Policy::DriverDefault),
            "driver-latency-aware" => Ok(Policy::DriverLatencyAware),
            "cassandra-dynamic-snitch" => Ok(Policy::ServerSnitch),
            s if tailor_core::selector::SELECTORS.contains(&s) => Ok(Policy::Tailor(s.to_string())),
            other => Err(format!(
                "unknown policy `{other}` (known: {}, and the selectors {})",
                DRIVER_POLICIES.join(", "),
                tailor_core::selector::SELECTORS.join(", ")
            )),
        }
    }

    /// The name runs are labelled with.
    pub fn label(&self) -> String {
        match self {
            Policy::Tailor(s) => s.clone(),
            Policy::DriverDefault => "driver-default".into(),
            Policy::DriverLatencyAware => "driver-latency-aware".into(),
            Policy::ServerSnitch => "cassandra-dynamic-snitch".into(),
        }
    }
}

/// Options of a Cassandra bench run beyond [`BenchConfig`].
#[derive(Clone, Debug)]
pub struct CqlBench {
    /// The policy.
    pub policy: Policy,
    /// Fact polling period for tailor policies (`None`: no polling).
    pub poll: Option<Duration>,
    /// Process ids of the Cassandra nodes when they run on this machine (the validity rule reads
    /// their run-queue wait); empty when they are elsewhere.
    pub pids: Vec<u32>,
}

struct CqlTarget {
    session: Arc<Session>,
    read: PreparedStatement,
    write: PreparedStatement,
    label: String,
    pids: Vec<u32>,
}

impl Target for CqlTarget {
    type Conn = ();

    async fn connect(&self, _node: usize) -> io::Result<()> {
        Ok(())
    }

    async fn exec(&self, _conn: &mut (), p: &Planned) -> io::Result<Answer> {
        let key = p.key as i64;
        let outcome = match p.op {
            Op::Read => self.session.execute_unpaged(&self.read, (key,)).await.map(|r| {
                let found = r.into_rows_result().map(|rows| rows.rows_num() > 0).unwrap_or(false);
                if found {
                    Answer::Ok
                } else {
                    Answer::Miss
                }
            }),
            Op::Write => {
                self.session.execute_unpaged(&self.write, (key, value_bytes(p.key, p.size))).await.map(|_| Answer::Ok)
            }
        };
        Ok(outcome.unwrap_or_else(|e| Answer::Failed(e.to_string())))
    }

    async fn labels(&self) -> (Option<String>, Option<String>) {
        (Some(self.label.clone()), Some("cassandra".into()))
    }

    fn describe(&self, _node: usize) -> String {
        "cassandra".into()
    }

    async fn node_cpu(&self) -> Vec<Option<Schedstat>> {
        self.pids.iter().map(|&pid| Schedstat::of_pid(pid)).collect()
    }
}

/// The policy the driver runs, and the tailor policy behind it when there is one.
type Policies = (Arc<dyn LoadBalancingPolicy>, Option<Arc<TailorPolicy>>);

/// The driver policy for `policy`, and the tailor policy behind it when there is one.
fn build_policy(policy: &Policy, cfg: &BenchConfig, polled: bool) -> Result<Policies, BenchError> {
    let tailor = |selector: &str| -> Result<_, BenchError> {
        let pc = PolicyConfig {
            selector: selector.to_string(),
            selectors: cfg.spec.selector.clone(),
            facts_polled: polled,
            replication: cfg.spec.cluster.replication,
            servers: cfg.nodes.len(),
            workers: 32,
            seed: cfg.seed.unwrap_or(1),
            attempt_bound: crate::policy::attempt_bound(REQUEST_TIMEOUT),
        };
        let p = Arc::new(TailorPolicy::new(&pc).map_err(|e| BenchError::Config(e.to_string()))?);
        Ok((p.clone() as Arc<dyn LoadBalancingPolicy>, Some(p)))
    };
    Ok(match policy {
        Policy::Tailor(s) => tailor(s)?,
        Policy::ServerSnitch => tailor("round-robin")?,
        Policy::DriverDefault => (DefaultPolicy::builder().token_aware(true).build(), None),
        Policy::DriverLatencyAware => {
            (DefaultPolicy::builder().token_aware(true).latency_awareness(LatencyAwarenessBuilder::new()).build(), None)
        }
    })
}

/// The driver's client timeout of a request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

async fn connect(nodes: &[SocketAddr], policy: Arc<dyn LoadBalancingPolicy>) -> Result<Session, BenchError> {
    let profile = ExecutionProfile::builder()
        .load_balancing_policy(policy)
        .consistency(Consistency::One)
        .request_timeout(Some(REQUEST_TIMEOUT))
        .build();
    let mut builder = SessionBuilder::new().default_execution_profile_handle(profile.into_handle());
    for &addr in nodes {
        builder = builder.known_node_addr(addr);
    }
    builder.build().await.map_err(|e| BenchError::Config(format!("cannot connect to Cassandra at {nodes:?}: {e}")))
}

/// The keyspace and table, created if missing, the keyspace at the spec's replication factor
/// even when an earlier run on the same data left it at another (the bench's writes at ALL
/// would wait for replicas that do not exist); returns the read and write statements.
async fn prepare(session: &Session, replication: usize) -> Result<(PreparedStatement, PreparedStatement), BenchError> {
    let cql_err = |what: &str, e: &dyn std::fmt::Display| BenchError::Config(format!("{what}: {e}"));
    let factor = format!("replication = {{'class': 'SimpleStrategy', 'replication_factor': {replication}}}");
    let keyspace = format!("CREATE KEYSPACE IF NOT EXISTS tailor WITH {factor}");
    let alter = format!("ALTER KEYSPACE tailor WITH {factor}");
    let table = "CREATE TABLE IF NOT EXISTS tailor.kv (k bigint PRIMARY KEY, v blob) WITH speculative_retry = 'NONE'";
    for cql in [keyspace.as_str(), alter.as_str(), table] {
        session.query_unpaged(cql, &[]).await.map_err(|e| cql_err(cql, &e))?;
    }
    session.await_schema_agreement().await.map_err(|e| cql_err("schema agreement", &e))?;
    let mut read =
        session.prepare("SELECT v FROM tailor.kv WHERE k = ?").await.map_err(|e| cql_err("prepare read", &e))?;
    // a read changes nothing: when a node's connection breaks with the read in flight, the
    // driver may retry it on the next replica (it retries only statements marked idempotent)
    read.set_is_idempotent(true);
    let mut write = session
        .prepare("INSERT INTO tailor.kv (k, v) VALUES (?, ?)")
        .await
        .map_err(|e| cql_err("prepare write", &e))?;
    write.set_consistency(Consistency::All);
    await_table_everywhere(session).await?;
    Ok((read, write))
}

/// Wait until every replica accepts writes to `tailor.kv`, probed with a delete of a key no
/// bench uses, at ALL.
async fn await_table_everywhere(session: &Session) -> Result<(), BenchError> {
    let mut probe = session
        .prepare("DELETE FROM tailor.kv WHERE k = ?")
        .await
        .map_err(|e| BenchError::Config(format!("prepare the schema probe: {e}")))?;
    probe.set_consistency(Consistency::All);
    await_writable(session, &probe, &(-1i64,))
        .await
        .map_err(|e| BenchError::Config(format!("tailor.kv is not writable on every node: {e}")))
}

/// Execute write `statement` with `values` until no replica refuses it for a schema it lacks
/// yet, 10 s at most: right after the driver sees the schema versions agree, a node can still
/// lack a new table (see [`lacks_new_schema`]). Any other error is returned at once.
pub async fn await_writable(
    session: &Session,
    statement: &PreparedStatement,
    values: &impl SerializeRow,
) -> Result<(), ExecutionError> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match session.execute_unpaged(statement, values).await {
            Ok(_) => return Ok(()),
            Err(e) if lacks_new_schema(&e) && std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether `e` is a node refusing a statement because it has not applied a new table yet. It
/// shows two ways: INCOMPATIBLE_SCHEMA on execute, or, when the node never saw the statement
/// prepared and the driver prepares it there again, Invalid "table ... does not exist"
/// ("unconfigured table" before Cassandra 4.1).
fn lacks_new_schema(e: &ExecutionError) -> bool {
    match e {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(DbError::Invalid, msg)) => {
            msg.contains("does not exist") || msg.contains("unconfigured table")
        }
        _ => e.to_string().contains("INCOMPATIBLE_SCHEMA"),
    }
}

/// [`run`] on its own tokio runtime (`cfg.threads` workers); blocks until done.
pub fn run_blocking(cfg: &BenchConfig, opts: &CqlBench) -> Result<BenchOutput, BenchError> {
    tailor_bench::runtime(cfg)?.block_on(run(cfg, opts))
}

/// Run one bench against the Cassandra cluster at `cfg.nodes` (CQL contact points).
pub async fn run(cfg: &BenchConfig, opts: &CqlBench) -> Result<BenchOutput, BenchError> {
    let (lb, tailor) = build_policy(&opts.policy, cfg, opts.poll.is_some())?;
    let session = Arc::new(connect(&cfg.nodes, lb).await?);
    let (mut read, write) = prepare(&session, cfg.spec.cluster.replication).await?;
    // with faults, every read attempt is logged with its node, and the run's time 0 kept
    let faulted = !cfg.spec.cluster.faults.is_empty();
    let attempts = faulted.then(|| Arc::new(AttemptLog::new()));
    if let Some(log) = &attempts {
        read.set_history_listener(log.clone());
    }
    let (mut run_cfg, epoch) = if faulted { tap_epoch(cfg) } else { (cfg.clone(), None) };
    let table = ReadTable { keyspace: "tailor".into(), table: "kv".into() };
    let poller = match (&tailor, opts.poll) {
        (Some(p), Some(every)) => Some(facts::spawn(session.clone(), p.clone(), every)),
        _ => None,
    };
    let before = node_reads(&session, &table).await;
    let window_ms = cfg.spec.report.window_ms;
    let sampler = (cfg.spec.report.per_server_load && window_ms > 0.0).then(|| {
        let nodes = cfg.nodes.iter().map(|a| a.ip()).collect();
        LoadSampler::start(session.clone(), table.clone(), nodes, Duration::from_secs_f64(window_ms / 1000.0))
    });
    let target = Arc::new(CqlTarget {
        session: session.clone(),
        read,
        write,
        label: opts.policy.label(),
        pids: opts.pids.clone(),
    });
    let outcome = tailor_bench::run_on(&run_cfg, target).await;
    if let Some(p) = poller {
        p.abort();
    }
    run_cfg.epoch = None; // the tap's last sender: it ends even if the open loop never started
    let epoch = epoch.and_then(|t| t.join().ok().flatten());
    let per_server_load = sampler.map(LoadSampler::finish);
    let mut bench = outcome?;
    let after = node_reads(&session, &table).await;
    let run = &mut bench.results.runs[0];
    if let Some(seen) = per_server_load {
        run.per_server_load = seen.reads;
        run.window_ms = window_ms;
        for (i, mean) in seen.service.iter().enumerate() {
            if let Some(ns) = mean.mean() {
                run.extra.insert(format!("node{i}_read_service_ms"), (ns as f64 / 1e3).round() / 1e3);
            }
        }
    }
    record_shares(run, cfg, &before, &after);
    if let (Some(log), Some(epoch)) = (&attempts, epoch) {
        run.failover = Some(crate::failover::figures(&cfg.spec, epoch, &cfg.nodes, &log.attempts(), &bench.reads));
    }
    if let Some(p) = &tailor {
        let s = p.stats();
        run.extra.insert("policy_forced_picks".into(), s.forced as f64);
        run.extra.insert("policy_fact_polls".into(), s.polls as f64);
        run.extra.insert("policy_expired_attempts".into(), s.expired as f64);
        run.extra.insert("policy_unmatched_answers".into(), s.unmatched as f64);
    }
    Ok(bench)
}

/// Waits for the run's time 0 and hands it on to whoever waits for it in `cfg.epoch`.
type EpochTap = std::thread::JoinHandle<Option<std::time::Instant>>;

/// `cfg` with its epoch sender replaced by one whose instant is also kept: the returned
/// thread ends with it, or with `None` once that sender is dropped unused.
fn tap_epoch(cfg: &BenchConfig) -> (BenchConfig, Option<EpochTap>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let outer = cfg.epoch.clone();
    let tap = std::thread::spawn(move || {
        let epoch = rx.recv().ok()?;
        if let Some(outer) = outer {
            let _ = outer.send(epoch);
        }
        Some(epoch)
    });
    (BenchConfig { epoch: Some(tx), ..cfg.clone() }, Some(tap))
}

/// Local reads of `table` per node address, from each node's own figures.
async fn node_reads(session: &Session, table: &ReadTable) -> Vec<(std::net::IpAddr, LocalReads)> {
    let nodes: Vec<_> =
        session.get_cluster_state().get_nodes_info().iter().map(|n| (n.host_id, n.address.ip())).collect();
    let mut out = Vec::with_capacity(nodes.len());
    for (host, ip) in nodes {
        if let Ok(n) = facts::local_reads(session, host, table).await {
            out.push((ip, n));
        }
    }
    out
}

/// `extra.node<i>_read_share`: the share of the run's local reads node `i` (in `--nodes` order)
/// served, from Cassandra's counts before and after (load phase and warm-up included); and
/// `extra.node<i>_local_read_p50_ms`, its median local read time after the run (what the
/// simulator's twin is calibrated with, `crate::twin`).
fn record_shares(
    run: &mut tailor_core::results::RunResult,
    cfg: &BenchConfig,
    before: &[(std::net::IpAddr, LocalReads)],
    after: &[(std::net::IpAddr, LocalReads)],
) {
    let of = |list: &[(std::net::IpAddr, LocalReads)], ip| list.iter().find(|(i, _)| *i == ip).map(|(_, n)| *n);
    let delta = |ip| (of(after, ip).unwrap_or_default().count - of(before, ip).unwrap_or_default().count).max(0);
    let total: i64 = cfg.nodes.iter().map(|a| delta(a.ip())).sum();
    for (i, addr) in cfg.nodes.iter().enumerate() {
        let share = if total > 0 { delta(addr.ip()) as f64 / total as f64 } else { 0.0 };
        run.extra.insert(format!("node{i}_read_share"), (share * 1000.0).round() / 1000.0);
        if let Some(reads) = of(after, addr.ip()).filter(|r| r.count > 0) {
            run.extra.insert(format!("node{i}_local_read_p50_ms"), reads.p50_ms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db_error(kind: DbError, msg: &str) -> ExecutionError {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(kind, msg.into()))
    }

    #[test]
    fn a_node_without_the_new_table_is_waited_for_and_other_errors_are_not() {
        assert!(lacks_new_schema(&db_error(DbError::Invalid, "table kv does not exist")));
        assert!(lacks_new_schema(&db_error(DbError::Invalid, "unconfigured table kv")));
        assert!(!lacks_new_schema(&db_error(DbError::Invalid, "Invalid STRING constant (x) for \"k\"")));
        assert!(!lacks_new_schema(&db_error(DbError::Unauthorized, "table kv does not exist")));
        assert!(!lacks_new_schema(&ExecutionError::EmptyPlan));
    }
}
