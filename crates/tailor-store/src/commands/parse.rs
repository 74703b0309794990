//! A command's arguments parsed once into a typed [`Command`] ([`Command::from_frame`]), with
//! Redis's error for each way they can be wrong; the families then run the typed value
//! ([`Command::apply`] in `mod.rs`). mini-redis's `Command::from_frame` and its `Parse` cursor
//! are the model: [`Args`] hands out the arguments one by one and names the command in the
//! errors it gives.
//!
//! What is checked here: the name (known to the [table](super::table), else Redis's `unknown
//! command`), the arity from the table, and each argument's form (integers, options, their
//! combinations, expiry times). What needs the node is checked when the command runs: a value's
//! size (`max_value_bytes`), a node id's membership, a knob's name and range.

use super::expiry::{self, Cond, Unit};
use super::mget::MAX_MGET_KEYS;
use super::strings::{SetOptions, MAX_MSET_KEYS, NO_FLOAT_COUNTERS};
use super::{access, scan, table};
use crate::config::Consistency;
use crate::resp::{Protocol, Reply};

/// Redis's error for a command given the wrong number of arguments.
pub(crate) fn wrong_args(name: &str) -> Reply {
    Reply::err(format!("wrong number of arguments for '{name}' command"))
}

/// Redis's error for a command this node does not know, quoting its first arguments (bounded).
pub(super) fn unknown(args: &[Vec<u8>]) -> Reply {
    let name = args.first().map_or(String::new(), |a| String::from_utf8_lossy(a).into_owned());
    let mut rest = String::new();
    for a in args.iter().skip(1).take(8) {
        let a = String::from_utf8_lossy(a);
        let a: String = a.chars().take(64).collect();
        rest.push_str(&format!("'{a}' "));
    }
    let name: String = name.chars().take(128).collect();
    Reply::err(format!("unknown command '{name}', with args beginning with: {rest}"))
}

/// Up to 64 characters of an argument, for an error message.
pub(super) fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).chars().take(64).collect()
}

/// A cursor over one command's arguments after its name.
pub struct Args {
    /// The command's name (lower case), for `wrong number of arguments` errors.
    name: &'static str,
    it: std::vec::IntoIter<Vec<u8>>,
}

impl Args {
    /// The arguments of command `name` (`args` without the name).
    fn new(name: &'static str, args: Vec<Vec<u8>>) -> Args {
        Args { name, it: args.into_iter() }
    }

    /// The next argument; missing, Redis's arity error.
    fn next(&mut self) -> Result<Vec<u8>, Reply> {
        self.it.next().ok_or_else(|| wrong_args(self.name))
    }

    /// The next argument, if any.
    fn next_opt(&mut self) -> Option<Vec<u8>> {
        self.it.next()
    }

    /// The next argument as Redis's integer (an `i64`, no `+`, no spaces).
    fn integer(&mut self) -> Result<i64, Reply> {
        access::integer(&self.next()?)
    }

    /// Arguments not read yet.
    fn remaining(&self) -> usize {
        self.it.len()
    }

    /// Every argument not read yet.
    fn rest(&mut self) -> Vec<Vec<u8>> {
        self.it.by_ref().collect()
    }

    /// No argument may be left.
    fn finish(self) -> Result<(), Reply> {
        if self.it.len() == 0 {
            Ok(())
        } else {
            Err(wrong_args(self.name))
        }
    }
}

/// `CONSISTENCY`'s argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// `DEFAULT`: the node's configured levels again.
    Default,
    /// `ONE`, `QUORUM` or `ALL`.
    Is(Consistency),
}

/// One option of `HELLO`, applied in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HelloOption {
    /// `AUTH user password`.
    Auth {
        /// The user.
        user: Vec<u8>,
        /// The password.
        password: Vec<u8>,
    },
    /// `SETNAME name`.
    SetName(Vec<u8>),
}

/// `CLIENT`'s subcommands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientCommand {
    /// `CLIENT ID`.
    Id,
    /// `CLIENT GETNAME`.
    GetName,
    /// `CLIENT SETNAME name`.
    SetName(Vec<u8>),
    /// `CLIENT INFO`.
    Info,
    /// `CLIENT LIST`.
    List,
    /// `SETINFO` (redis-py sends it on connect), `NO-EVICT`, `NO-TOUCH`, `REPLY`, ...: accepted,
    /// no effect.
    Ignored,
}

/// `COMMAND`'s subcommands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandQuery {
    /// `COMMAND`: every entry.
    All,
    /// `COMMAND COUNT`.
    Count,
    /// `COMMAND LIST`.
    List,
    /// `COMMAND INFO name...`.
    Info(Vec<Vec<u8>>),
    /// `COMMAND DOCS [name...]` (none: every command).
    Docs(Vec<Vec<u8>>),
}

/// `TAILOR.HINTS`' subcommands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HintsCommand {
    /// No subcommand: what waits per member, and the counters.
    Overview,
    /// `LIST node [count]`; the node is checked against the members when it runs.
    List {
        /// The member id as given.
        node: Vec<u8>,
        /// How many hints (1 to 1,000).
        count: usize,
    },
    /// `DROP node`.
    Drop {
        /// The member id as given.
        node: Vec<u8>,
    },
}

/// Most hints one `TAILOR.HINTS LIST` returns.
pub const MAX_LISTED_HINTS: usize = 1_000;

/// One client command, its arguments parsed (keys and values as bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `PING [message]`.
    Ping {
        /// Echoed back if given.
        message: Option<Vec<u8>>,
    },
    /// `ECHO message`.
    Echo {
        /// Echoed back.
        message: Vec<u8>,
    },
    /// `QUIT`.
    Quit,
    /// `UNWATCH`: nothing is ever watched (`transaction.rs`).
    Unwatch,
    /// `MULTI`, `EXEC`, `DISCARD`, `WATCH`: the transaction layer's, answered before a command
    /// is run (`transaction.rs`).
    Transaction,
    /// `CONSISTENCY [level]`.
    Consistency {
        /// The level to use; none: show the level in use.
        level: Option<Level>,
    },
    /// `SELECT db`: the consistency level of database `db` (0: the node's).
    Select {
        /// The level it selects.
        level: Option<Consistency>,
    },
    /// `AUTH [user] password`.
    Auth {
        /// The user; none: `default`.
        user: Option<Vec<u8>>,
        /// The password.
        password: Vec<u8>,
    },
    /// `HELLO [protover [AUTH user pass] [SETNAME name]]`.
    Hello {
        /// The version asked for, if any.
        protocol: Option<Protocol>,
        /// Its options, in order.
        options: Vec<HelloOption>,
    },
    /// `CLIENT subcommand`.
    Client(ClientCommand),
    /// `COMMAND [subcommand]`.
    Command(CommandQuery),
    /// `CONFIG GET pattern...`.
    ConfigGet {
        /// Glob patterns of parameter names.
        patterns: Vec<Vec<u8>>,
    },
    /// `INFO [section...]`.
    Info {
        /// Section names, lower case.
        sections: Vec<String>,
    },
    /// `GET key`.
    Get {
        /// The key.
        key: Vec<u8>,
    },
    /// `SET key value [options]`.
    Set {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
        /// Expiry, conditions, GET.
        options: SetOptions,
    },
    /// `SETEX key seconds value`, `PSETEX key ms value`.
    SetEx {
        /// The key.
        key: Vec<u8>,
        /// The expiry, Unix ms.
        expires: u64,
        /// The value.
        value: Vec<u8>,
    },
    /// `SETNX key value`.
    SetNx {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// `GETSET key value`.
    GetSet {
        /// The key.
        key: Vec<u8>,
        /// The new value.
        value: Vec<u8>,
    },
    /// `GETDEL key`.
    GetDel {
        /// The key.
        key: Vec<u8>,
    },
    /// `MSET key value [key value ...]`.
    MSet {
        /// The pairs, in order.
        pairs: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// `MGET key [key ...]`.
    MGet {
        /// The keys.
        keys: Vec<Vec<u8>>,
    },
    /// `APPEND key value`.
    Append {
        /// The key.
        key: Vec<u8>,
        /// What to append.
        value: Vec<u8>,
    },
    /// `STRLEN key`.
    Strlen {
        /// The key.
        key: Vec<u8>,
    },
    /// `INCR`, `DECR`, `INCRBY`, `DECRBY`.
    Incr {
        /// The key.
        key: Vec<u8>,
        /// The increment (negative for DECR/DECRBY).
        by: i64,
    },
    /// `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT`.
    Expire {
        /// The key.
        key: Vec<u8>,
        /// The new expiry, Unix ms (0 for a time before 1970: deletes the key).
        at: u64,
        /// NX, XX, GT, LT.
        cond: Cond,
    },
    /// `TTL key`, `PTTL key`.
    Ttl {
        /// The key.
        key: Vec<u8>,
        /// PTTL: in milliseconds.
        millis: bool,
    },
    /// `PERSIST key`.
    Persist {
        /// The key.
        key: Vec<u8>,
    },
    /// `DEL`/`UNLINK key [key ...]`.
    Del {
        /// The keys.
        keys: Vec<Vec<u8>>,
    },
    /// `EXISTS key [key ...]`.
    Exists {
        /// The keys.
        keys: Vec<Vec<u8>>,
    },
    /// `TYPE key`.
    Type {
        /// The key.
        key: Vec<u8>,
    },
    /// `SCAN cursor [MATCH pattern] [COUNT n]`.
    Scan {
        /// The token to go on from.
        cursor: u64,
        /// Keys to keep.
        pattern: Option<Vec<u8>>,
        /// About how many tokens one step covers (at most [`scan::MAX_COUNT`]).
        count: usize,
    },
    /// `KEYS pattern`.
    Keys {
        /// Keys to keep.
        pattern: Vec<u8>,
    },
    /// `DBSIZE`.
    DbSize,
    /// `FLUSHDB [ASYNC|SYNC]`.
    FlushDb,
    /// `TAILOR.REPAIR`.
    Repair,
    /// `TAILOR.HINTS [LIST node [count] | DROP node]`.
    Hints(HintsCommand),
    /// `TAILOR.SET knob value`.
    TailorSet {
        /// The knob, lower case, `-` as `_`.
        knob: String,
        /// Its new value as given.
        value: String,
    },
    /// `TAILOR.GET knob`.
    TailorGet {
        /// The knob, lower case, `-` as `_`.
        knob: String,
    },
    /// `TAILOR.GET size_class key`.
    SizeClass {
        /// The key.
        key: Vec<u8>,
    },
    /// `TAILOR.LOCALGET key`.
    LocalGet {
        /// The key.
        key: Vec<u8>,
    },
}

/// A knob's name as `TAILOR.SET`/`TAILOR.GET` take it: any case, `-` or `_`.
fn knob(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).to_ascii_lowercase().replace('-', "_")
}

impl Command {
    /// Parse a command from its arguments (`args[0]` is its name, any case).
    pub fn from_frame(args: Vec<Vec<u8>>) -> Result<Command, Reply> {
        let spec = args.first().and_then(|n| table::find(&String::from_utf8_lossy(n).to_ascii_lowercase()));
        Command::parse(spec, args)
    }

    /// Parse the arguments of the command whose table entry is `spec` (found by its name,
    /// `args[0]`; `None`: not in the table).
    pub(super) fn parse(spec: Option<&'static table::Spec>, args: Vec<Vec<u8>>) -> Result<Command, Reply> {
        let Some(first) = args.first() else { return Err(Reply::err("empty command")) };
        let Some(spec) = spec else {
            let refused = first.eq_ignore_ascii_case(b"incrbyfloat");
            return Err(if refused { Reply::err(NO_FLOAT_COUNTERS) } else { unknown(&args) });
        };
        if !spec.arity_fits(args.len()) {
            return Err(wrong_args(spec.name));
        }
        let mut args = args;
        args.remove(0);
        let mut a = Args::new(spec.name, args);
        let key = |a: &mut Args| a.next();
        let command = match spec.name {
            "ping" => {
                let message = a.next_opt();
                a.finish()?;
                return Ok(Command::Ping { message });
            }
            "echo" => Command::Echo { message: a.next()? },
            "quit" => return Ok(Command::Quit),
            "unwatch" => Command::Unwatch,
            "multi" | "exec" | "discard" | "watch" => return Ok(Command::Transaction),
            "consistency" => Command::Consistency { level: level(&mut a)? },
            "select" => Command::Select { level: database(&a.next()?)? },
            "auth" => {
                let (first, second) = (a.next()?, a.next_opt());
                a.finish()?;
                return Ok(match second {
                    None => Command::Auth { user: None, password: first },
                    Some(password) => Command::Auth { user: Some(first), password },
                });
            }
            "hello" => return hello(a),
            "client" => return client(a).map(Command::Client),
            "command" => return command(a).map(Command::Command),
            "config" => return config(a),
            "info" => Command::Info {
                sections: a.rest().iter().map(|s| String::from_utf8_lossy(s).to_ascii_lowercase()).collect(),
            },
            "get" => Command::Get { key: key(&mut a)? },
            "set" => {
                let (key, value) = (a.next()?, a.next()?);
                Command::Set { key, value, options: SetOptions::parse(&a.rest())? }
            }
            "setex" | "psetex" => {
                let key = a.next()?;
                let unit = if spec.name == "psetex" { Unit::Millis } else { Unit::Seconds };
                let expires = expiry::positive(unit, &a.next()?, spec.name)?;
                Command::SetEx { key, expires, value: a.next()? }
            }
            "setnx" => Command::SetNx { key: a.next()?, value: a.next()? },
            "getset" => Command::GetSet { key: a.next()?, value: a.next()? },
            "getdel" => Command::GetDel { key: key(&mut a)? },
            "mset" => return mset(a),
            "mget" if a.remaining() > MAX_MGET_KEYS => return Err(super::mget::too_many(a.remaining())),
            "mget" => Command::MGet { keys: a.rest() },
            "append" => Command::Append { key: a.next()?, value: a.next()? },
            "strlen" => Command::Strlen { key: key(&mut a)? },
            "incr" => Command::Incr { key: key(&mut a)?, by: 1 },
            "decr" => Command::Incr { key: key(&mut a)?, by: -1 },
            "incrby" => Command::Incr { key: a.next()?, by: a.integer()? },
            "decrby" => {
                let key = a.next()?;
                let by = a.integer()?.checked_neg().ok_or_else(|| Reply::err("decrement would overflow"))?;
                Command::Incr { key, by }
            }
            "expire" | "pexpire" | "expireat" | "pexpireat" => return expire(spec.name, a),
            "ttl" | "pttl" => Command::Ttl { key: key(&mut a)?, millis: spec.name == "pttl" },
            "persist" => Command::Persist { key: key(&mut a)? },
            "del" | "unlink" => Command::Del { keys: a.rest() },
            "exists" => Command::Exists { keys: a.rest() },
            "type" => Command::Type { key: key(&mut a)? },
            "scan" => {
                let cursor = a.next()?;
                let Some(cursor) = std::str::from_utf8(&cursor).ok().and_then(|c| c.parse::<u64>().ok()) else {
                    return Err(Reply::err("invalid cursor"));
                };
                let (pattern, count) = scan::options(&a.rest())?;
                Command::Scan { cursor, pattern, count }
            }
            "keys" => Command::Keys { pattern: a.next()? },
            "dbsize" => Command::DbSize,
            "flushdb" => return flushdb(a),
            "tailor.repair" => Command::Repair,
            "tailor.hints" => return hints(a).map(Command::Hints),
            "tailor.set" => {
                Command::TailorSet { knob: knob(&a.next()?), value: String::from_utf8_lossy(&a.next()?).into_owned() }
            }
            "tailor.get" => return tailor_get(a),
            "tailor.localget" => Command::LocalGet { key: key(&mut a)? },
            other => unreachable!("command '{other}' is in the table but has no parser"),
        };
        a.finish()?;
        Ok(command)
    }
}

/// `CONSISTENCY`'s optional level.
fn level(a: &mut Args) -> Result<Option<Level>, Reply> {
    if a.remaining() > 1 {
        return Err(wrong_args("consistency"));
    }
    let Some(level) = a.next_opt() else { return Ok(None) };
    if level.eq_ignore_ascii_case(b"default") {
        return Ok(Some(Level::Default));
    }
    match Consistency::parse(&String::from_utf8_lossy(&level)) {
        Some(c) => Ok(Some(Level::Is(c))),
        None => Err(Reply::err("consistency must be ONE, QUORUM, ALL or DEFAULT")),
    }
}

/// `SELECT`'s database: 0 the node's levels, 1 ONE, 2 QUORUM, 3 ALL.
fn database(db: &[u8]) -> Result<Option<Consistency>, Reply> {
    match db {
        b"0" => Ok(None),
        b"1" => Ok(Some(Consistency::One)),
        b"2" => Ok(Some(Consistency::Quorum)),
        b"3" => Ok(Some(Consistency::All)),
        _ => Err(Reply::err("DB index is out of range (0: the node's consistency levels, 1: ONE, 2: QUORUM, 3: ALL)")),
    }
}

fn hello(mut a: Args) -> Result<Command, Reply> {
    let mut protocol = None;
    if let Some(v) = a.next_opt() {
        let Ok(v) = access::integer(&v) else {
            return Err(Reply::err("Protocol version is not an integer or out of range"));
        };
        let Some(p) = Protocol::from_version(v) else {
            return Err(Reply::Error("NOPROTO unsupported protocol version (this node speaks 2 and 3)".into()));
        };
        protocol = Some(p);
    }
    let mut options = Vec::new();
    while let Some(opt) = a.next_opt() {
        let syntax = || Reply::err("syntax error");
        match opt.to_ascii_lowercase().as_slice() {
            b"auth" => {
                let (Some(user), Some(password)) = (a.next_opt(), a.next_opt()) else { return Err(syntax()) };
                options.push(HelloOption::Auth { user, password });
            }
            b"setname" => options.push(HelloOption::SetName(a.next_opt().ok_or_else(syntax)?)),
            _ => return Err(Reply::err(format!("Syntax error in HELLO option '{}'", lossy(&opt)))),
        }
    }
    Ok(Command::Hello { protocol, options })
}

fn client(mut a: Args) -> Result<ClientCommand, Reply> {
    let sub = a.next()?.to_ascii_lowercase();
    let n = a.remaining();
    Ok(match (sub.as_slice(), n) {
        (b"id", 0) => ClientCommand::Id,
        (b"getname", 0) => ClientCommand::GetName,
        (b"setname", 1) => ClientCommand::SetName(a.next()?),
        (b"info", 0) => ClientCommand::Info,
        (b"list", 0) => ClientCommand::List,
        (b"id" | b"getname" | b"setname" | b"info" | b"list", _) => {
            return Err(wrong_args(&format!("client|{}", lossy(&sub))))
        }
        // answering OK while doing nothing would mislead a script or a Jepsen nemesis
        (b"kill" | b"pause" | b"unpause", _) => {
            return Err(Reply::err(format!("CLIENT {} is not supported by this node", lossy(&sub).to_uppercase())))
        }
        _ => ClientCommand::Ignored,
    })
}

fn command(mut a: Args) -> Result<CommandQuery, Reply> {
    let Some(sub) = a.next_opt() else { return Ok(CommandQuery::All) };
    Ok(match sub.to_ascii_lowercase().as_slice() {
        b"count" => CommandQuery::Count,
        b"list" => CommandQuery::List,
        b"info" => CommandQuery::Info(a.rest()),
        b"docs" => CommandQuery::Docs(a.rest()),
        other => return Err(Reply::err(format!("unknown subcommand '{}'. Try COMMAND HELP.", lossy(other)))),
    })
}

/// `CONFIG GET pattern...`; any other `CONFIG` is refused, naming what to use instead.
fn config(mut a: Args) -> Result<Command, Reply> {
    let sub = a.next()?.to_ascii_lowercase();
    match sub.as_slice() {
        b"get" if a.remaining() > 0 => Ok(Command::ConfigGet { patterns: a.rest() }),
        b"get" => Err(wrong_args("config|get")),
        b"set" => Err(Reply::err(
            "CONFIG SET is not supported: a node's settings come from its config file; change a \
             running node's knobs with TAILOR.SET <knob> <value> (workers, read_consistency, \
             write_consistency, the emulation knobs)",
        )),
        other => Err(Reply::err(format!("CONFIG {} is not supported: only CONFIG GET", lossy(other).to_uppercase()))),
    }
}

fn mset(mut a: Args) -> Result<Command, Reply> {
    if !a.remaining().is_multiple_of(2) {
        return Err(wrong_args("mset"));
    }
    let pairs = a.remaining() / 2;
    if pairs > MAX_MSET_KEYS {
        return Err(Reply::err(format!("MSET of {pairs} keys is above the limit of {MAX_MSET_KEYS} keys; split it")));
    }
    let mut out = Vec::with_capacity(pairs);
    while let (Some(k), Some(v)) = (a.next_opt(), a.next_opt()) {
        out.push((k, v));
    }
    Ok(Command::MSet { pairs: out })
}

fn expire(name: &'static str, mut a: Args) -> Result<Command, Reply> {
    let unit = match name {
        "expire" => Unit::Seconds,
        "pexpire" => Unit::Millis,
        "expireat" => Unit::SecondsAt,
        _ => Unit::MillisAt,
    };
    let key = a.next()?;
    let n = a.integer()?;
    let cond = Cond::parse(&a.rest())?;
    let at = expiry::absolute(unit, n, crate::expiry::now_ms()).ok_or_else(|| expiry::invalid(name))?;
    Ok(Command::Expire { key, at: u64::try_from(at).unwrap_or(0), cond })
}

fn flushdb(mut a: Args) -> Result<Command, Reply> {
    if a.remaining() > 1 {
        return Err(wrong_args("flushdb"));
    }
    match a.next_opt() {
        Some(mode) if !(mode.eq_ignore_ascii_case(b"async") || mode.eq_ignore_ascii_case(b"sync")) => {
            Err(Reply::err("syntax error"))
        }
        _ => Ok(Command::FlushDb),
    }
}

fn hints(mut a: Args) -> Result<HintsCommand, Reply> {
    let Some(sub) = a.next_opt() else { return Ok(HintsCommand::Overview) };
    let sub = String::from_utf8_lossy(&sub).to_ascii_lowercase();
    let n = a.remaining();
    match (sub.as_str(), n) {
        ("list", 1 | 2) => {
            let node = a.next()?;
            let count = match a.next_opt().map(|c| String::from_utf8_lossy(&c).parse::<usize>()) {
                None => 10,
                Some(Ok(n)) if (1..=MAX_LISTED_HINTS).contains(&n) => n,
                Some(_) => return Err(Reply::err(format!("count must be a number from 1 to {MAX_LISTED_HINTS}"))),
            };
            Ok(HintsCommand::List { node, count })
        }
        ("drop", 1) => Ok(HintsCommand::Drop { node: a.next()? }),
        ("list" | "drop", _) => Err(wrong_args("tailor.hints")),
        (other, _) => Err(Reply::err(format!("unknown TAILOR.HINTS subcommand '{other}' (LIST, DROP)"))),
    }
}

/// `TAILOR.GET knob` or `TAILOR.GET size_class key`.
fn tailor_get(mut a: Args) -> Result<Command, Reply> {
    let first = a.next()?;
    match (a.next_opt(), a.remaining()) {
        (None, _) => Ok(Command::TailorGet { knob: knob(&first) }),
        (Some(key), 0) if first.eq_ignore_ascii_case(b"size_class") => Ok(Command::SizeClass { key }),
        _ => Err(wrong_args("tailor.get")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<Command, Reply> {
        Command::from_frame(a.iter().map(|s| s.as_bytes().to_vec()).collect())
    }

    fn b(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    /// `a` is refused with `ERR <text>`.
    #[track_caller]
    fn refused(a: &[&str], text: &str) {
        assert_eq!(parse(a), Err(Reply::err(text)), "{a:?}");
    }

    #[test]
    fn good_frames_become_typed_commands() {
        assert_eq!(parse(&["GET", "k"]), Ok(Command::Get { key: b("k") }));
        assert_eq!(parse(&["ping"]), Ok(Command::Ping { message: None }));
        assert_eq!(parse(&["PiNg", "hi"]), Ok(Command::Ping { message: Some(b("hi")) }));
        assert_eq!(
            parse(&["set", "k", "v"]),
            Ok(Command::Set { key: b("k"), value: b("v"), options: SetOptions::default() })
        );
        assert_eq!(parse(&["DECRBY", "n", "5"]), Ok(Command::Incr { key: b("n"), by: -5 }));
        assert_eq!(parse(&["incr", "n"]), Ok(Command::Incr { key: b("n"), by: 1 }));
        assert_eq!(
            parse(&["mset", "a", "1", "b", "2"]),
            Ok(Command::MSet { pairs: vec![(b("a"), b("1")), (b("b"), b("2"))] })
        );
        assert_eq!(parse(&["MGET", "a", "b"]), Ok(Command::MGet { keys: vec![b("a"), b("b")] }));
        assert_eq!(parse(&["unlink", "a", "b"]), Ok(Command::Del { keys: vec![b("a"), b("b")] }));
        assert_eq!(parse(&["pttl", "k"]), Ok(Command::Ttl { key: b("k"), millis: true }));
        assert_eq!(parse(&["auth", "pw"]), Ok(Command::Auth { user: None, password: b("pw") }));
        assert_eq!(parse(&["auth", "u", "pw"]), Ok(Command::Auth { user: Some(b("u")), password: b("pw") }));
        assert_eq!(parse(&["select", "2"]), Ok(Command::Select { level: Some(Consistency::Quorum) }));
        assert_eq!(parse(&["consistency", "default"]), Ok(Command::Consistency { level: Some(Level::Default) }));
        assert_eq!(
            parse(&["consistency", "all"]),
            Ok(Command::Consistency { level: Some(Level::Is(Consistency::All)) })
        );
        assert_eq!(
            parse(&["scan", "0", "match", "k*", "count", "5"]),
            Ok(Command::Scan { cursor: 0, pattern: Some(b("k*")), count: 5 })
        );
        assert_eq!(parse(&["flushdb", "ASYNC"]), Ok(Command::FlushDb));
        assert_eq!(
            parse(&["hello", "3", "auth", "u", "p", "setname", "n"]),
            Ok(Command::Hello {
                protocol: Some(Protocol::Resp3),
                options: vec![HelloOption::Auth { user: b("u"), password: b("p") }, HelloOption::SetName(b("n"))],
            })
        );
        assert_eq!(parse(&["client", "setinfo", "lib-name", "x"]), Ok(Command::Client(ClientCommand::Ignored)));
        assert_eq!(parse(&["client", "SETNAME", "x"]), Ok(Command::Client(ClientCommand::SetName(b("x")))));
        assert_eq!(parse(&["command", "docs"]), Ok(Command::Command(CommandQuery::Docs(vec![]))));
        assert_eq!(parse(&["config", "get", "max*"]), Ok(Command::ConfigGet { patterns: vec![b("max*")] }));
        assert_eq!(parse(&["info", "CPU"]), Ok(Command::Info { sections: vec!["cpu".into()] }));
        assert_eq!(
            parse(&["tailor.set", "Read-Consistency", "ONE"]),
            Ok(Command::TailorSet { knob: "read_consistency".into(), value: "ONE".into() })
        );
        assert_eq!(parse(&["tailor.get", "size_class", "k"]), Ok(Command::SizeClass { key: b("k") }));
        assert_eq!(
            parse(&["tailor.hints", "LIST", "1"]),
            Ok(Command::Hints(HintsCommand::List { node: b("1"), count: 10 }))
        );
        assert_eq!(parse(&["exec"]), Ok(Command::Transaction));
        assert!(matches!(parse(&["expire", "k", "0"]), Ok(Command::Expire { at, .. }) if at > 0));
        assert!(matches!(parse(&["pexpireat", "k", "-5"]), Ok(Command::Expire { at: 0, .. })));
        assert!(matches!(parse(&["setex", "k", "10", "v"]), Ok(Command::SetEx { expires, .. }) if expires > 10_000));
    }

    #[test]
    fn unknown_and_refused_commands() {
        refused(&["nosuch", "a", "b"], "unknown command 'nosuch', with args beginning with: 'a' 'b' ");
        assert_eq!(parse(&["incrbyfloat", "k", "1.5"]), Err(Reply::err(NO_FLOAT_COUNTERS)));
        assert_eq!(Command::from_frame(Vec::new()), Err(Reply::err("empty command")));
        refused(&["client", "kill", "x"], "CLIENT KILL is not supported by this node");
        refused(&["config", "rewrite"], "CONFIG REWRITE is not supported: only CONFIG GET");
        assert!(matches!(parse(&["config", "set", "a", "b"]), Err(Reply::Error(e)) if e.contains("TAILOR.SET")));
    }

    #[test]
    fn arity_errors_name_the_command() {
        for (a, name) in [
            (&["get"][..], "get"),
            (&["get", "a", "b"], "get"),
            (&["GETDEL"], "getdel"),
            (&["psetex", "k", "1"], "psetex"),
            (&["ping", "a", "b"], "ping"),
            (&["mset", "a", "1", "b"], "mset"),
            (&["consistency", "one", "two"], "consistency"),
            (&["auth", "a", "b", "c"], "auth"),
            (&["flushdb", "async", "x"], "flushdb"),
            (&["tailor.get", "a", "b"], "tailor.get"),
            (&["tailor.get", "size_class", "k", "x"], "tailor.get"),
            (&["tailor.hints", "drop"], "tailor.hints"),
            (&["client"], "client"),
            (&["client", "id", "x"], "client|id"),
            (&["config"], "config"),
            (&["config", "get"], "config|get"),
            (&["unwatch", "x"], "unwatch"),
        ] {
            refused(a, &format!("wrong number of arguments for '{name}' command"));
        }
    }

    #[test]
    fn argument_errors_are_redis_s() {
        refused(&["set", "k", "v", "nx", "xx"], "syntax error");
        refused(&["set", "k", "v", "ex", "0"], "invalid expire time in 'set' command");
        refused(&["setex", "k", "0", "v"], "invalid expire time in 'setex' command");
        refused(&["psetex", "k", "x", "v"], "value is not an integer or out of range");
        refused(&["incrby", "k", "1.5"], "value is not an integer or out of range");
        refused(&["decrby", "k", "-9223372036854775808"], "decrement would overflow");
        refused(&["expire", "k", "x"], "value is not an integer or out of range");
        refused(&["expire", "k", "1", "soon"], "Unsupported option soon");
        refused(&["expire", "k", "1", "nx", "xx"], "NX and XX, GT or LT options at the same time are not compatible");
        refused(&["expire", "k", "9223372036854775807"], "invalid expire time in 'expire' command");
        refused(&["scan", "x"], "invalid cursor");
        refused(&["scan", "0", "count", "0"], "syntax error");
        refused(&["flushdb", "now"], "syntax error");
        refused(
            &["select", "4"],
            "DB index is out of range (0: the node's consistency levels, 1: ONE, 2: QUORUM, 3: ALL)",
        );
        refused(&["consistency", "most"], "consistency must be ONE, QUORUM, ALL or DEFAULT");
        refused(&["hello", "x"], "Protocol version is not an integer or out of range");
        assert!(matches!(parse(&["hello", "4"]), Err(Reply::Error(e)) if e.starts_with("NOPROTO")));
        refused(&["hello", "3", "auth", "u"], "syntax error");
        refused(&["hello", "3", "setname"], "syntax error");
        refused(&["hello", "3", "bogus"], "Syntax error in HELLO option 'bogus'");
        refused(&["command", "help"], "unknown subcommand 'help'. Try COMMAND HELP.");
        refused(&["tailor.hints", "list", "1", "0"], "count must be a number from 1 to 1000");
        refused(&["tailor.hints", "nope"], "unknown TAILOR.HINTS subcommand 'nope' (LIST, DROP)");
        let many: Vec<String> = std::iter::once("mset".to_string())
            .chain((0..=MAX_MSET_KEYS).flat_map(|i| [format!("k{i}"), "v".into()]))
            .collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        refused(&many, "MSET of 1025 keys is above the limit of 1024 keys; split it");
        let many: Vec<String> =
            std::iter::once("mget".to_string()).chain((0..=MAX_MGET_KEYS).map(|i| format!("k{i}"))).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        refused(&many, "MGET of 1025 keys is above the limit of 1024 keys; split it");
    }

    #[test]
    fn every_table_entry_has_a_parser() {
        for spec in table::COMMANDS {
            // enough arguments of a harmless form for every arity; only "no parser" would panic
            let n = spec.arity.unsigned_abs() as usize;
            let mut a = vec![spec.name.to_string()];
            a.extend((1..n).map(|_| "1".to_string()));
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            let _ = parse(&a);
        }
    }
}
