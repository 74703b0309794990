//! Client commands: the Redis subset unmodified clients need, plus `TAILOR.*` admin commands.
//!
//! Families, one file each: [`strings`] (GET, SET and its options, SETEX, SETNX, GETSET,
//! GETDEL, MSET, APPEND, STRLEN; INCRBYFLOAT refused), [`counters`] (INCR, DECR, INCRBY,
//! DECRBY: replicated counters whose increments merge across replicas, `crate::counter`),
//! [`expiry`] (EXPIRE family, TTL, PERSIST),
//! [`keyspace`] (DEL/UNLINK, EXISTS, TYPE), [`scan`] (SCAN, KEYS, DBSIZE, FLUSHDB over the ring, with
//! [`glob`] patterns), [`connection`] (HELLO, CLIENT, COMMAND, INFO; the command table in
//! [`table`]); how they read and write in [`access`] (expiry as an absolute time,
//! read-modify-writes that are not atomic). `docs/redis.md` lists what is supported and each
//! command's consistency.
//!
//! Layers: the connection ([`crate::client_conn`]) parses frames and hands each command to
//! [`execute`]; [`transaction`] routes it first (MULTI/EXEC/DISCARD/WATCH, and queuing while a
//! MULTI is open: EXEC keeps this connection's commands in order, nothing more), then the
//! dispatch below runs it against the node.
//!
//! Choices: `CONFIG GET` answers the Redis parameters that have a meaning here, from the node's
//! own settings (`commands/connection.rs`), and nothing for the others. Replies are
//! protocol-neutral [`Reply`]s (field-value replies are [`Reply::Map`]); the connection encodes
//! them in the version its session chose with `HELLO`.
//!
//! Size-oracle introspection: `TAILOR.GET size_class <key>` answers `large` or `small` as this
//! node's coordinator would class the key for its selector (its configured oracle);
//! `TAILOR.GET bloom_generation` / `oracle_generation` give the replica's filter generation and
//! the coordinator's Bloom oracle generation (an error in `exact` mode); `TAILOR.SET
//! bloom_rebuild now` asks the replica for an immediate rebuild (peers follow).
//!
//! Limits: every key is checked against `max_key_bytes` before any work (the engine cannot
//! store longer keys), every value against `max_value_bytes`, and every `TAILOR.SET` value
//! against its knob's range; each refusal names the limit or knob.

mod access;
mod connection;
mod counters;
mod expiry;
mod glob;
mod hints;
mod keyspace;
mod scan;
mod strings;
mod table;
mod transaction;

pub use counters::serve_incr;
pub use table::COMMANDS;
pub use transaction::{Transaction, MAX_QUEUED_COMMANDS};

use crate::config::Consistency;
use crate::limits::Lease;
use crate::node::Node;
use crate::resp::Reply;
use crate::session::Session;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The result of one command: the reply and whether to close the connection after it.
pub struct Executed {
    /// Reply to send.
    pub reply: Reply,
    /// Close after sending (QUIT).
    pub close: bool,
    /// The share of the node's buffer budget a large reply holds until it is written (MGET).
    pub lease: Option<Lease>,
}

pub(crate) fn wrong_args(name: &str) -> Reply {
    Reply::err(format!("wrong number of arguments for '{name}' command"))
}

fn unknown(args: &[Vec<u8>]) -> Reply {
    let name = String::from_utf8_lossy(&args[0]);
    let mut rest = String::new();
    for a in args.iter().skip(1).take(8) {
        let a = String::from_utf8_lossy(a);
        let a: String = a.chars().take(64).collect();
        rest.push_str(&format!("'{a}' "));
    }
    let name: String = name.chars().take(128).collect();
    Reply::err(format!("unknown command '{name}', with args beginning with: {rest}"))
}

/// Refuse a command any of whose keys is above `max_key_bytes`.
fn check_keys(node: &Node, name: &str, args: &[Vec<u8>]) -> Result<(), Reply> {
    for k in table::keys(name, args) {
        crate::limits::check_key(k, node.cfg.max_key_bytes).map_err(|e| {
            node.metrics.limit_refusals.fetch_add(1, Ordering::Relaxed);
            Reply::err(e)
        })?;
    }
    Ok(())
}

/// Wrong passwords one connection may send; it is closed after the last (a guesser reconnects,
/// and pays the delays below again).
pub const MAX_WRONG_PASSWORDS: u32 = 10;

/// How long the reply to a connection's `n`-th wrong password waits: 10 ms doubling, at most
/// 2 s. A person who mistyped barely notices; a guesser gets about 4 guesses in the first 0.1 s
/// of a connection and 10 per connection (Redis has no limit: 20,000 guesses took 0.04 s here).
fn wrong_password_delay(n: u32) -> std::time::Duration {
    std::time::Duration::from_millis((10u64 << n.saturating_sub(1).min(8)).min(2_000))
}

/// Execute one command (`args[0]` is its name, any case); wrong passwords (`AUTH`, `HELLO ...
/// AUTH`) are counted, answered late, and close the connection past [`MAX_WRONG_PASSWORDS`].
pub async fn execute(node: &Arc<Node>, session: &mut Session, args: Vec<Vec<u8>>) -> Executed {
    let before = session.wrong_passwords();
    let mut executed = match transaction::route(node, session, args) {
        transaction::Route::Run(args) => run(node, session, args).await,
        transaction::Route::Answer(reply) => Executed { reply, close: false, lease: None },
        transaction::Route::Exec(queued) => transaction::exec(node, session, queued).await,
    };
    let wrong = session.wrong_passwords();
    if wrong > before {
        node.metrics.auth_failures.fetch_add((wrong - before) as u64, Ordering::Relaxed);
        tokio::time::sleep(wrong_password_delay(wrong)).await;
        executed.close |= wrong >= MAX_WRONG_PASSWORDS;
    }
    executed
}

/// Commands a node whose disk failed still answers: an operator's or a client library's look
/// at it (`disk.rs`); everything else, PING included, is refused with the reason.
const WHILE_DISK_FAILED: &[&str] = &["auth", "hello", "quit", "info", "client", "command", "config"];

/// The refusal of `name` on a node whose disk failed, naming the cause and the policy.
fn disk_failed(node: &Node, name: &str) -> Result<(), Reply> {
    let disk = node.storage.disk_state();
    if !disk.failed() || WHILE_DISK_FAILED.contains(&name) {
        return Ok(());
    }
    let policy = node.cfg.disk_failure_policy.name();
    let cause = disk.cause().unwrap_or_default().replace(['\r', '\n'], " ");
    Err(Reply::Error(format!(
        "DISKFAIL this node stopped serving: its disk failed ({cause}); disk_failure_policy = {policy}"
    )))
}

async fn run(node: &Arc<Node>, session: &mut Session, args: Vec<Vec<u8>>) -> Executed {
    node.metrics.client_commands.fetch_add(1, Ordering::Relaxed);
    let reply = |reply| Executed { reply, close: false, lease: None };
    if args.is_empty() {
        return reply(Reply::err("empty command"));
    }
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    session.touch(&name);
    let allowed = session.may_run(&node.cfg, &name).and_then(|()| disk_failed(node, &name));
    if let Err(refused) = allowed.and_then(|()| check_keys(node, &name, &args)) {
        return reply(refused);
    }
    let n = args.len();
    let coord = &node.coordinator;
    reply(match name.as_str() {
        "ping" => match n {
            1 => Reply::Simple("PONG".into()),
            2 => Reply::Bulk(args[1].clone()),
            _ => wrong_args("ping"),
        },
        "echo" if n == 2 => Reply::Bulk(args[1].clone()),
        "echo" => wrong_args("echo"),
        "quit" => return Executed { reply: Reply::ok(), close: true, lease: None },
        "unwatch" => Reply::ok(), // nothing is ever watched ([`transaction`])
        "consistency" => consistency(node, session, &args),
        "auth" => match session.auth(&node.cfg, &args) {
            Ok(_) => Reply::ok(),
            Err(refused) => refused,
        },
        "get" => strings::get(node, session, &args).await,
        "set" => strings::set(node, session, &args).await,
        "setex" | "psetex" => strings::setex(node, session, &name, &args).await,
        "setnx" => strings::setnx(node, session, &args).await,
        "getset" | "getdel" => strings::get_and(node, session, &name, &args).await,
        "mset" => strings::mset(node, session, &args).await,
        "append" => strings::append(node, session, &args).await,
        "strlen" => strings::strlen(node, session, &args).await,
        "incr" | "decr" | "incrby" | "decrby" => counters::incr(node, session, &name, &args).await,
        "incrbyfloat" => Reply::err(strings::NO_FLOAT_COUNTERS),
        "expire" | "pexpire" | "expireat" | "pexpireat" => expiry::expire(node, session, &name, &args).await,
        "ttl" | "pttl" => expiry::ttl(node, session, &args, name == "pttl").await,
        "persist" => expiry::persist(node, session, &args).await,
        "del" | "unlink" => keyspace::del(node, session, &name, &args).await,
        "exists" => keyspace::exists(node, session, &args).await,
        "type" => keyspace::key_type(node, session, &args).await,
        "scan" => scan::scan(node, &args).await,
        "keys" => scan::keys(node, &args).await,
        "dbsize" => scan::dbsize(node, &args).await,
        "flushdb" => scan::flushdb(node, session, &args).await,
        "mget" if n >= 2 => return mget(node, session, &args[1..]).await,
        "mget" => wrong_args("mget"),
        "select" if n == 2 => select(session, &args[1]),
        "select" => wrong_args("select"),
        "command" => connection::command(&args),
        "hello" => connection::hello(node, session, &args),
        "config" if n >= 3 && args[1].eq_ignore_ascii_case(b"get") => connection::config_get(node, &args[2..]),
        "config" => connection::config_refused(&args),
        "client" => connection::client(session, &args),
        "info" => connection::info(node, session, &args).await,
        "tailor.repair" if n == 1 => match crate::anti_entropy::run(node).await {
            Ok(report) => Reply::Simple(report.to_string()),
            Err(e) => Reply::err(e),
        },
        "tailor.repair" => wrong_args("tailor.repair"),
        "tailor.hints" => hints::hints(node, &args).await,
        "tailor.set" if n == 3 => tailor_set(node, &args[1], &args[2]),
        "tailor.set" => wrong_args("tailor.set"),
        "tailor.get" if n == 2 => tailor_get(node, &args[1]),
        "tailor.get" if n == 3 && args[1].eq_ignore_ascii_case(b"size_class") => {
            let class = if coord.size_hint(&args[2]).large { "large" } else { "small" };
            Reply::Bulk(class.as_bytes().to_vec())
        }
        "tailor.get" => wrong_args("tailor.get"),
        "tailor.localget" if n == 2 => match node.storage.get(&args[1]) {
            Ok(v) => access::live(v.value, crate::expiry::now_ms).map_or(Reply::Null, |v| Reply::Bulk(v.value)),
            Err(e) => Reply::err(e),
        },
        "tailor.localget" => wrong_args("tailor.localget"),
        _ => unknown(&args),
    })
}

/// `SELECT db`: one keyspace, seen at a consistency level per database number, so that the level
/// rides on what clients re-send by themselves on every reconnect (redis-py's `db`, a URL's
/// `/2`, redis-cli's `-n 2`): 0 the node's levels, 1 ONE, 2 QUORUM, 3 ALL.
fn select(session: &mut Session, db: &[u8]) -> Reply {
    let level = match db {
        b"0" => None,
        b"1" => Some(Consistency::One),
        b"2" => Some(Consistency::Quorum),
        b"3" => Some(Consistency::All),
        _ => {
            return Reply::err("DB index is out of range (0: the node's consistency levels, 1: ONE, 2: QUORUM, 3: ALL)")
        }
    };
    session.set_consistency(level);
    Reply::ok()
}

/// `CONSISTENCY [ONE|QUORUM|ALL|DEFAULT]` (cqlsh's command): this connection's level for its
/// reads and writes, or the node's configured levels again; without an argument, the level in use.
fn consistency(node: &Node, session: &mut Session, args: &[Vec<u8>]) -> Reply {
    match args {
        [_] => Reply::Simple(match session.consistency() {
            Some(c) => format!("{c:?}").to_uppercase(),
            None => {
                let (r, w) = node.coordinator.consistency();
                format!("DEFAULT (reads {r:?}, writes {w:?})").to_uppercase()
            }
        }),
        [_, level] if level.eq_ignore_ascii_case(b"default") => {
            session.set_consistency(None);
            Reply::ok()
        }
        [_, level] => match Consistency::parse(&String::from_utf8_lossy(level)) {
            Some(c) => {
                session.set_consistency(Some(c));
                Reply::ok()
            }
            None => Reply::err("consistency must be ONE, QUORUM, ALL or DEFAULT"),
        },
        _ => wrong_args("consistency"),
    }
}

fn tailor_set(node: &Arc<Node>, knob: &[u8], value: &[u8]) -> Reply {
    let knob = String::from_utf8_lossy(knob).to_ascii_lowercase().replace('-', "_");
    let value = String::from_utf8_lossy(value).to_string();
    match knob.as_str() {
        "workers" => match value.parse::<usize>() {
            Ok(n) if (1..=crate::replica::MAX_WORKERS).contains(&n) => {
                node.replica.set_workers(n);
                Reply::ok()
            }
            _ => {
                Reply::err(format!("invalid value '{value}' for knob 'workers' (1..={})", crate::replica::MAX_WORKERS))
            }
        },
        "debug_panic_next" if !node.cfg.debug_hooks => {
            Reply::err("knob 'debug_panic_next' is a test hook: set debug_hooks = true in the node's config")
        }
        "debug_panic_next" => match value.parse::<u64>() {
            Ok(n) if n <= 1_000_000 => {
                node.replica.inject_panics(n);
                Reply::ok()
            }
            _ => Reply::err(format!("invalid value '{value}' for knob 'debug_panic_next' (0..=1000000)")),
        },
        "bloom_rebuild" if value.eq_ignore_ascii_case("now") => {
            if node.replica.bloom_generation().is_none() {
                return Reply::err("no Bloom index: size_oracle is not `bloom`");
            }
            node.replica.request_rebuild();
            Reply::ok()
        }
        "bloom_rebuild" => Reply::err(format!("invalid value '{value}' for knob 'bloom_rebuild' (now)")),
        "read_consistency" | "write_consistency" => match Consistency::parse(&value) {
            Some(c) => {
                node.coordinator.set_consistency(knob == "write_consistency", c);
                Reply::ok()
            }
            None => Reply::err(format!("invalid value '{value}' for knob '{knob}' (one, quorum, all)")),
        },
        _ => match node.emulation.set(&knob, &value) {
            Ok(()) => Reply::ok(),
            Err(e) => Reply::err(e),
        },
    }
}

fn tailor_get(node: &Arc<Node>, knob: &[u8]) -> Reply {
    let knob = String::from_utf8_lossy(knob).to_ascii_lowercase().replace('-', "_");
    let (r, w) = node.coordinator.consistency();
    let text = match knob.as_str() {
        "workers" => node.replica.workers().to_string(),
        "read_consistency" => format!("{r:?}").to_lowercase(),
        "write_consistency" => format!("{w:?}").to_lowercase(),
        "queue_len" => node.replica.queue_len().to_string(),
        "healthy" => node.replica.healthy().to_string(),
        "size_oracle" => format!("{:?}", node.cfg.size_oracle).to_lowercase(),
        "bloom_generation" | "oracle_generation" => {
            let g = if knob == "bloom_generation" {
                node.replica.bloom_generation()
            } else {
                node.coordinator.oracle_generation()
            };
            match g {
                Some(g) => g.to_string(),
                None => return Reply::err("no Bloom oracle: size_oracle is not `bloom`"),
            }
        }
        _ => match node.emulation.get(&knob) {
            Some(v) => v,
            None => return Reply::err(format!("unknown knob '{knob}'")),
        },
    };
    Reply::Bulk(text.into_bytes())
}

/// Bytes a reply element costs beyond its value (the RESP header, the element itself).
const REPLY_OVERHEAD: u64 = 64;

/// MGET: each key read in turn; the reply's bytes are leased from the node's buffer budget as
/// they arrive, so many keys of large values cannot grow the node without bound.
async fn mget(node: &Arc<Node>, session: &Session, keys: &[Vec<u8>]) -> Executed {
    let mut lease = node.budget.lease();
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        let value = match access::read(node, session, k).await {
            Ok(v) => v.map(|v| v.value),
            Err(reply) => return Executed { reply, close: false, lease: None },
        };
        let bytes = value.as_ref().map_or(0, |v| v.len() as u64) + REPLY_OVERHEAD;
        if lease.resize(lease.held() + bytes).is_err() {
            node.metrics.limit_refusals.fetch_add(1, Ordering::Relaxed);
            let budget = node.cfg.max_buffered_bytes;
            let text = format!(
                "MGET reply would go over the node's {budget}-byte buffer budget (max_buffered_bytes); ask for fewer keys"
            );
            return Executed { reply: Reply::err(text), close: false, lease: None };
        }
        out.push(value.map_or(Reply::Null, Reply::Bulk));
    }
    Executed { reply: Reply::Array(out), close: false, lease: Some(lease) }
}
