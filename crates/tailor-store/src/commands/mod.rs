//! Client commands: the Redis subset unmodified clients need, plus `TAILOR.*` admin commands.
//!
//! Families, one file each: [`strings`] (GET, SET and its options, SETEX, SETNX, GETSET,
//! GETDEL, MSET, APPEND, STRLEN; INCRBYFLOAT refused), [`mget`] (MGET: a read per key, in
//! parallel), [`counters`] (INCR, DECR, INCRBY,
//! DECRBY: replicated counters whose increments merge across replicas, `crate::counter`),
//! [`expiry`] (EXPIRE family, TTL, PERSIST),
//! [`keyspace`] (DEL/UNLINK, EXISTS, TYPE), [`scan`] (SCAN, KEYS, DBSIZE, FLUSHDB over the ring, with
//! [`glob`] patterns), [`connection`] (HELLO, CLIENT, COMMAND, INFO; the command table in
//! [`table`]); how they read and write in [`access`] (expiry as an absolute time,
//! read-modify-writes that are not atomic). `docs/redis.md` lists what is supported and each
//! command's consistency.
//!
//! Layers: the connection ([`crate::client_conn`]) reads frames with [`crate::resp`] and hands
//! each command's arguments to [`execute`]; [`transaction`] routes them first (MULTI/EXEC/
//! DISCARD/WATCH, and queuing while a MULTI is open: EXEC keeps this connection's commands in
//! order, nothing more); then [`run`] checks them against the one command [`table`] (who may run
//! it, a failed disk, key sizes), [`parse`] turns them into a typed [`Command`] (arity, options,
//! integers, with Redis's errors), and [`Command::apply`] runs it against the node. The
//! dependencies go one way: `client_conn` → `commands` → `session`, `resp`.
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
mod mget;
pub mod parse;
mod scan;
mod strings;
mod table;
mod transaction;

pub use counters::serve_incr;
pub use mget::MAX_MGET_KEYS;
pub use parse::Command;
pub use table::COMMANDS;

/// Most commands one transaction queues (the queue is the session's).
pub use crate::session::MAX_QUEUED_COMMANDS;

use crate::config::Consistency;
use crate::limits::Lease;
use crate::node::Node;
use crate::resp::Reply;
use crate::session::Session;
use parse::{unknown, wrong_args, Level};
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

impl Executed {
    /// Just a reply.
    fn reply(reply: Reply) -> Executed {
        Executed { reply, close: false, lease: None }
    }
}

/// A command that may run concurrently with its neighbours in a pipeline: a plain `GET key` or
/// `SET key value`, which leave the session as it is and end no connection. Two of them run
/// together only if they touch different keys or both read, so each sees the effects of the
/// commands before it as Redis's one-at-a-time execution would (replies stay in order).
pub struct Batchable<'a> {
    /// The key it reads or writes.
    pub key: &'a [u8],
    /// Whether it writes.
    pub write: bool,
}

impl Batchable<'_> {
    /// The command of `args` (its name first), if it is batchable.
    pub fn of(args: &[Vec<u8>]) -> Option<Batchable<'_>> {
        match args {
            [name, key] if name.eq_ignore_ascii_case(b"get") => Some(Batchable { key, write: false }),
            [name, key, _] if name.eq_ignore_ascii_case(b"set") => Some(Batchable { key, write: true }),
            _ => None,
        }
    }
}

/// Refuse a command (`spec` its table entry) any of whose keys is above `max_key_bytes`.
fn check_keys(node: &Node, spec: Option<&table::Spec>, args: &[Vec<u8>]) -> Result<(), Reply> {
    let Some(spec) = spec else { return Ok(()) };
    for k in spec.keys_of(args) {
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
        transaction::Route::Answer(reply) => Executed::reply(reply),
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

/// The refusal of a command (`spec` its table entry) on a node whose disk failed, naming the cause and the policy (the
/// commands the table marks `while_disk_failed` are answered; everything else, PING included,
/// is refused with the reason).
fn disk_failed(node: &Node, spec: Option<&table::Spec>) -> Result<(), Reply> {
    let disk = node.storage.disk_state();
    if !disk.failed() || spec.is_some_and(|s| s.while_disk_failed) {
        return Ok(());
    }
    let policy = node.cfg.disk_failure_policy.name();
    let cause = disk.cause().unwrap_or_default().replace(['\r', '\n'], " ");
    Err(Reply::Error(format!(
        "DISKFAIL this node stopped serving: its disk failed ({cause}); disk_failure_policy = {policy}"
    )))
}

/// Check, parse and apply one command outside the transaction layer (or queued, from `EXEC`).
async fn run(node: &Arc<Node>, session: &mut Session, args: Vec<Vec<u8>>) -> Executed {
    node.metrics.client_commands.fetch_add(1, Ordering::Relaxed);
    let Some(first) = args.first() else { return Executed::reply(Reply::err("empty command")) };
    let name = String::from_utf8_lossy(first).to_ascii_lowercase();
    session.touch(&name);
    let spec = table::find(&name);
    let allowed = session.may_run(&node.cfg, &name, table::access(spec)).and_then(|()| disk_failed(node, spec));
    if let Err(refused) = allowed.and_then(|()| check_keys(node, spec, &args)) {
        return Executed::reply(refused);
    }
    match Command::parse(spec, args) {
        Ok(command) => command.apply(node, session).await,
        Err(refused) => Executed::reply(refused),
    }
}

impl Command {
    /// Run this command against `node` for `session`'s connection.
    pub async fn apply(self, node: &Arc<Node>, session: &mut Session) -> Executed {
        let coord = &node.coordinator;
        Executed::reply(match self {
            Command::Ping { message: None } => Reply::Simple("PONG".into()),
            Command::Ping { message: Some(m) } | Command::Echo { message: m } => Reply::Bulk(m),
            Command::Quit => return Executed { reply: Reply::ok(), close: true, lease: None },
            Command::Unwatch => Reply::ok(), // nothing is ever watched ([`transaction`])
            // answered by [`transaction::route`] before a command runs
            Command::Transaction => Reply::err("transaction commands are answered before they run"),
            Command::Consistency { level } => consistency(node, session, level),
            Command::Select { level } => {
                session.set_consistency(level);
                Reply::ok()
            }
            Command::Auth { user, password } => match session.auth(&node.cfg, user.as_deref(), &password) {
                Ok(_) => Reply::ok(),
                Err(refused) => refused,
            },
            Command::Hello { protocol, options } => connection::hello(node, session, protocol, options),
            Command::Client(sub) => connection::client(session, sub),
            Command::Command(query) => connection::command(query),
            Command::ConfigGet { patterns } => connection::config_get(node, &patterns),
            Command::Info { sections } => connection::info(node, session, &sections).await,
            Command::Get { key } => strings::get(node, session, &key).await,
            Command::Set { key, value, options } => strings::set(node, session, &key, &value, options).await,
            Command::SetEx { key, expires, value } => strings::setex(node, session, &key, expires, &value).await,
            Command::SetNx { key, value } => strings::setnx(node, session, &key, &value).await,
            Command::GetSet { key, value } => strings::get_and(node, session, &key, Some(&value)).await,
            Command::GetDel { key } => strings::get_and(node, session, &key, None).await,
            Command::MSet { pairs } => strings::mset(node, session, &pairs).await,
            Command::MGet { keys } => return mget::mget(node, session, &keys).await,
            Command::Append { key, value } => strings::append(node, session, &key, &value).await,
            Command::Strlen { key } => strings::strlen(node, session, &key).await,
            Command::Incr { key, by } => counters::incr(node, session, &key, by).await,
            Command::Expire { key, at, cond } => expiry::expire(node, session, &key, at, cond).await,
            Command::Ttl { key, millis } => expiry::ttl(node, session, &key, millis).await,
            Command::Persist { key } => expiry::persist(node, session, &key).await,
            Command::Del { keys } => keyspace::del(node, session, &keys).await,
            Command::Exists { keys } => keyspace::exists(node, session, &keys).await,
            Command::Type { key } => keyspace::key_type(node, session, &key).await,
            Command::Scan { cursor, pattern, count } => scan::scan(node, cursor, pattern.as_deref(), count).await,
            Command::Keys { pattern } => scan::keys(node, &pattern).await,
            Command::DbSize => scan::dbsize(node).await,
            Command::FlushDb => scan::flushdb(node, session).await,
            Command::Repair => match crate::anti_entropy::run(node).await {
                Ok(report) => Reply::Simple(report.to_string()),
                Err(e) => Reply::err(e),
            },
            Command::Hints(sub) => hints::hints(node, sub).await,
            Command::TailorSet { knob, value } => tailor_set(node, &knob, &value),
            Command::TailorGet { knob } => tailor_get(node, &knob),
            Command::SizeClass { key } => {
                let class = if coord.size_hint(&key).large { "large" } else { "small" };
                Reply::Bulk(class.as_bytes().to_vec())
            }
            Command::LocalGet { key } => match node.storage.get(&key) {
                Ok(v) => access::live(v.value, crate::expiry::now_ms).map_or(Reply::Null, |v| Reply::Bulk(v.value)),
                Err(e) => Reply::err(e),
            },
        })
    }
}

/// `CONSISTENCY [ONE|QUORUM|ALL|DEFAULT]` (cqlsh's command): this connection's level for its
/// reads and writes, or the node's configured levels again; without an argument, the level in use.
/// (`SELECT db` sets the same level from a database number, so that the level rides on what
/// clients re-send by themselves on every reconnect: redis-py's `db`, a URL's `/2`, redis-cli's
/// `-n 2`.)
fn consistency(node: &Node, session: &mut Session, level: Option<Level>) -> Reply {
    match level {
        None => Reply::Simple(match session.consistency() {
            Some(c) => format!("{c:?}").to_uppercase(),
            None => {
                let (r, w) = node.coordinator.consistency();
                format!("DEFAULT (reads {r:?}, writes {w:?})").to_uppercase()
            }
        }),
        Some(Level::Default) => {
            session.set_consistency(None);
            Reply::ok()
        }
        Some(Level::Is(c)) => {
            session.set_consistency(Some(c));
            Reply::ok()
        }
    }
}

fn tailor_set(node: &Arc<Node>, knob: &str, value: &str) -> Reply {
    match knob {
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
        "read_consistency" | "write_consistency" => match Consistency::parse(value) {
            Some(c) => {
                node.coordinator.set_consistency(knob == "write_consistency", c);
                Reply::ok()
            }
            None => Reply::err(format!("invalid value '{value}' for knob '{knob}' (one, quorum, all)")),
        },
        _ => match node.emulation.set(knob, value) {
            Ok(()) => Reply::ok(),
            Err(e) => Reply::err(e),
        },
    }
}

fn tailor_get(node: &Arc<Node>, knob: &str) -> Reply {
    let (r, w) = node.coordinator.consistency();
    let text = match knob {
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
        _ => match node.emulation.get(knob) {
            Some(v) => v,
            None => return Reply::err(format!("unknown knob '{knob}'")),
        },
    };
    Reply::Bulk(text.into_bytes())
}
