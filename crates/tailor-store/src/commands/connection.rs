//! Connection and server commands: `HELLO [2] [AUTH u p] [SETNAME n]`, `CLIENT
//! ID/SETNAME/GETNAME/LIST/INFO`, `COMMAND [COUNT|LIST|INFO|DOCS]`, `INFO [section]`.
//!
//! `HELLO 3` switches the connection to RESP3 and `HELLO 2` back (the session keeps the version,
//! [`tailor_resp::encode`] writes replies in it); any other version gets `-NOPROTO`, and a
//! refused HELLO (a bad option, a wrong password) leaves the version as it was, as in Redis. INFO's `redis_version` is `7.2.0`, the Redis
//! version whose commands and replies this node follows for what it supports: clients parse that
//! field to choose features (redis-py, redis-cli's hints), so a Tailor version there would
//! mislead them; Tailor's own version is `tailor_version`.

use super::parse::{ClientCommand, CommandQuery, HelloOption};
use super::table;
use crate::node::Node;
use crate::resp::{Protocol, Reply};
use crate::session::{Access, Session};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// The Redis version this node's commands follow (see the module doc).
pub const REDIS_VERSION: &str = "7.2.0";

fn bulk(s: impl Into<String>) -> Reply {
    Reply::text(s)
}

/// `CLIENT subcommand ...`.
pub fn client(session: &mut Session, sub: ClientCommand) -> Reply {
    let now = Instant::now();
    match sub {
        ClientCommand::Id => Reply::Integer(session.id() as i64),
        ClientCommand::GetName => session.name().map_or(Reply::Null, bulk),
        ClientCommand::SetName(name) => match session.set_name(&name) {
            Ok(()) => Reply::ok(),
            Err(e) => e,
        },
        ClientCommand::Info => bulk(session.info().map_or(String::new(), |c| c.line(now) + "\n")),
        ClientCommand::List => {
            let lines: String = session.clients().iter().map(|c| c.line(now) + "\n").collect();
            bulk(lines)
        }
        ClientCommand::Ignored => Reply::ok(),
    }
}

/// `HELLO [protover [AUTH user pass] [SETNAME name]]`: the options run in order, and the
/// version takes effect only once every one succeeded, so the reply (a map in RESP3) is already
/// in the new version.
pub fn hello(node: &Node, session: &mut Session, protocol: Option<Protocol>, options: Vec<HelloOption>) -> Reply {
    let protocol = protocol.unwrap_or(session.protocol());
    for opt in options {
        let done = match opt {
            HelloOption::Auth { user, password } => session.auth(&node.cfg, Some(&user), &password).map(drop),
            HelloOption::SetName(name) => session.set_name(&name),
        };
        if let Err(refused) = done {
            return refused;
        }
    }
    if let Err(refused) = session.may_run(&node.cfg, "hello", Access::User) {
        return refused;
    }
    session.set_protocol(protocol);
    Reply::Map(vec![
        (bulk("server"), bulk("redis")),
        (bulk("version"), bulk(REDIS_VERSION)),
        (bulk("proto"), Reply::Integer(protocol.version())),
        (bulk("id"), Reply::Integer(session.id() as i64)),
        (bulk("mode"), bulk("standalone")),
        (bulk("role"), bulk("master")),
        (bulk("modules"), Reply::Array(Vec::new())),
    ])
}

/// `COMMAND [COUNT | LIST | INFO name... | DOCS [name...]]`.
pub fn command(query: CommandQuery) -> Reply {
    let named = |names: &[Vec<u8>]| -> Vec<Option<&'static table::Spec>> {
        names.iter().map(|n| table::find(&String::from_utf8_lossy(n).to_ascii_lowercase())).collect()
    };
    match query {
        CommandQuery::All => Reply::Array(table::COMMANDS.iter().map(table::entry).collect()),
        CommandQuery::Count => Reply::Integer(table::COMMANDS.len() as i64),
        CommandQuery::List => Reply::Array(table::COMMANDS.iter().map(|s| bulk(s.name)).collect()),
        CommandQuery::Info(names) => {
            Reply::Array(named(&names).into_iter().map(|s| s.map_or(Reply::Null, table::entry)).collect())
        }
        CommandQuery::Docs(names) if names.is_empty() => Reply::Map(table::COMMANDS.iter().map(table::docs).collect()),
        CommandQuery::Docs(names) => Reply::Map(named(&names).into_iter().flatten().map(table::docs).collect()),
    }
}

/// What `CONFIG GET requirepass` answers when a password is set (never the password: the
/// admin user, who may not know it, can ask too).
pub const MASKED_PASSWORD: &str = "********";

/// The Redis parameters that mean something here, with this node's values.
fn config_params(c: &crate::config::NodeConfig) -> [(&'static str, String); 16] {
    let fsync = match c.durability {
        crate::config::Durability::Sync => "always",
        crate::config::Durability::Buffer => "no",
    };
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
    [
        ("save", String::new()),
        // every write goes to the storage engine's journal before it is acknowledged
        ("appendonly", "yes".into()),
        ("appendfsync", fsync.into()),
        ("maxmemory", "0".into()),
        ("maxmemory-policy", "noeviction".into()),
        ("maxclients", c.max_clients.to_string()),
        ("timeout", (c.idle_timeout_ms / 1000).to_string()),
        ("port", c.client_addr.port().to_string()),
        ("bind", c.client_addr.ip().to_string()),
        ("tls-port", c.tls_addr.map_or(0, |a| a.port()).to_string()),
        ("databases", "4".into()),
        ("proto-max-bulk-len", c.max_value_bytes.to_string()),
        ("client-query-buffer-limit", c.max_command_bytes.to_string()),
        ("requirepass", c.requirepass.as_ref().map_or(String::new(), |_| MASKED_PASSWORD.into())),
        ("protected-mode", yes_no(c.protected_mode)),
        ("dir", c.data_dir.display().to_string()),
    ]
}

/// `CONFIG GET pattern...`: the Redis parameters that mean something here, from this node's
/// settings, matched as Redis matches them (glob patterns, any case).
pub fn config_get(node: &Node, patterns: &[Vec<u8>]) -> Reply {
    let mut out = Vec::new();
    for (name, value) in &config_params(&node.cfg) {
        if patterns.iter().any(|p| super::glob::matches(&p.to_ascii_lowercase(), name.as_bytes())) {
            out.push((Reply::text(*name), Reply::text(value.clone())));
        }
    }
    Reply::Map(out)
}

/// `INFO [section ...]`: `server`, `clients`, `memory`, `cpu`, `stats`, `tailor`, `keyspace` (all
/// by default, or with `all`/`everything`/`default`). The keyspace section counts the cluster's
/// keys as DBSIZE does: a whole scan, the one costly section (`INFO server` and the like skip it).
pub async fn info(node: &Arc<Node>, session: &Session, wanted: &[String]) -> Reply {
    let all = wanted.is_empty() || wanted.iter().any(|w| matches!(w.as_str(), "all" | "everything" | "default"));
    let mut texts = Vec::new();
    for (name, section) in SECTIONS {
        if all || wanted.iter().any(|w| w == name) {
            texts.push(section(node, session));
        }
    }
    if all || wanted.iter().any(|w| w == "keyspace") {
        texts.push(keyspace(node).await);
    }
    bulk(texts.join("\r\n"))
}

type Section = fn(&Arc<Node>, &Session) -> String;

const SECTIONS: &[(&str, Section)] =
    &[("server", server), ("clients", clients), ("memory", memory), ("cpu", cpu), ("stats", stats), ("tailor", tailor)];

fn lines(title: &str, fields: &[(&str, String)]) -> String {
    let mut s = format!("# {title}\r\n");
    for (k, v) in fields {
        s.push_str(&format!("{k}:{v}\r\n"));
    }
    s
}

fn server(node: &Arc<Node>, _: &Session) -> String {
    let c = &node.cfg;
    let up = crate::process::uptime_seconds().unwrap_or(0.0) as u64;
    lines(
        "Server",
        &[
            ("redis_version", REDIS_VERSION.into()),
            ("tailor_version", env!("CARGO_PKG_VERSION").into()),
            ("redis_mode", "standalone".into()),
            ("os", std::env::consts::OS.into()),
            ("process_id", std::process::id().to_string()),
            ("node_id", c.id.to_string()),
            ("role", "master".into()),
            ("tcp_port", c.client_addr.port().to_string()),
            ("tls_port", c.tls_addr.map_or(0, |a| a.port()).to_string()),
            ("uptime_in_seconds", up.to_string()),
            ("uptime_in_days", (up / 86_400).to_string()),
        ],
    )
}

fn clients(_: &Arc<Node>, session: &Session) -> String {
    let (open, unlisted) =
        session.registry().map_or((0, 0), |r| (r.open.load(Ordering::Relaxed), r.unlisted.load(Ordering::Relaxed)));
    lines("Clients", &[("connected_clients", open.to_string()), ("unlisted_clients", unlisted.to_string())])
}

fn memory(node: &Arc<Node>, _: &Session) -> String {
    let rss = crate::process::rss_bytes().unwrap_or(0);
    lines(
        "Memory",
        &[
            ("used_memory_rss", rss.to_string()),
            ("used_memory_rss_human", format!("{:.2}M", rss as f64 / (1 << 20) as f64)),
            ("buffered_bytes", node.budget.used().to_string()),
            ("maxmemory", "0".into()),
        ],
    )
}

/// Redis's CPU fields and the scheduler's: how long this node's threads ran and how long they
/// waited, runnable, for a CPU (a load generator's validity rule reads the wait).
fn cpu(_: &Arc<Node>, _: &Session) -> String {
    let [run, wait, slices] = crate::process::schedstat().unwrap_or_default();
    let (user, system) = crate::process::cpu_user_system_seconds().unwrap_or_default();
    lines(
        "CPU",
        &[
            ("used_cpu_sys", format!("{system:.6}")),
            ("used_cpu_user", format!("{user:.6}")),
            ("sched_run_us", (run / 1000).to_string()),
            ("sched_wait_us", (wait / 1000).to_string()),
            ("sched_timeslices", slices.to_string()),
        ],
    )
}

fn stats(node: &Arc<Node>, session: &Session) -> String {
    let m = &node.metrics;
    let opened = session.registry().map_or(0, |r| r.opened.load(Ordering::Relaxed));
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed).to_string();
    lines(
        "Stats",
        &[
            ("total_connections_received", opened.to_string()),
            ("total_commands_processed", get(&m.client_commands)),
            ("rejected_connections", get(&m.connections_refused)),
            ("reads_served", get(&m.reads_served)),
            ("writes_served", get(&m.writes_served)),
            ("read_repairs", get(&m.read_repairs)),
            ("probes_sent", get(&m.probes_sent)),
            ("probes_replied", get(&m.probes_replied)),
            ("probes_lost", get(&m.probes_lost)),
            ("probes_answered", get(&m.probes_answered)),
        ],
    )
}

/// The cluster's live keys, counted as DBSIZE counts them (a whole scan, each key once), so the
/// two agree; Redis's `expires=` is left out, as the cluster's key listing carries no expiries.
async fn keyspace(node: &Arc<Node>) -> String {
    match super::scan::count_keys(node).await {
        Ok(keys) => lines("Keyspace", &[("db0", format!("keys={keys}"))]),
        Err(Reply::Error(e)) => lines("Keyspace", &[("keys_error", e.replace(['\r', '\n'], " "))]),
        Err(other) => lines("Keyspace", &[("keys_error", format!("{other:?}"))]),
    }
}

fn tailor(node: &Arc<Node>, _: &Session) -> String {
    let c = &node.cfg;
    let skewed = node.hlc.skew().is_err();
    lines(
        "Tailor",
        &[
            ("members", c.members.len().to_string()),
            ("replication", c.replication.to_string()),
            ("selector", c.selector.to_string()),
            ("local", c.local.to_string()),
            ("workers", node.replica.workers().to_string()),
            ("queue_len", node.replica.queue_len().to_string()),
            ("recovering", (node.network.recovery.is_recovering() as u8).to_string()),
            ("clock_offset_ms", node.hlc.offset_ms().to_string()),
            ("clock_skewed", (skewed as u8).to_string()),
            ("coordinates_writes", (!skewed as u8).to_string()),
            ("disk_failed", (node.storage.disk_state().failed() as u8).to_string()),
            ("disk_failure_policy", c.disk_failure_policy.name().to_string()),
        ],
    )
}
