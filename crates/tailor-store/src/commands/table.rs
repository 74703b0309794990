//! The one command table: every command this node implements, with Redis's `COMMAND` fields
//! (arity, negative: at least; flags; the first key, last key, negative: from the end, and key
//! step) and this node's rules for it (who may run it, whether a node whose disk failed answers
//! it, whether a transaction may queue it). `COMMAND` and its subcommands answer from it, the
//! key-size check finds a command's keys with it, and the checks before a command runs or is
//! queued (`mod.rs`, `transaction.rs`) read its rules; [`super::parse`] turns the arguments of a
//! command found here into its typed [`super::Command`].

use crate::resp::Reply;
use crate::session::Access;

/// One command's `COMMAND` entry.
pub struct Spec {
    /// Lower-case name.
    pub name: &'static str,
    /// Arity, the name included (negative: at least that many).
    pub arity: i64,
    /// Flags (`write`, `readonly`, `fast`, ...).
    pub flags: &'static [&'static str],
    /// First key argument (0: none), last (negative: counted from the end), step.
    pub keys: (i64, i64, i64),
    /// Group and one-line summary (`COMMAND DOCS`).
    pub group: &'static str,
    /// One-line summary.
    pub summary: &'static str,
    /// Who may run it.
    pub access: Access,
    /// Answered by a node whose disk failed (an operator's or a client library's look at it,
    /// `disk.rs`); every other command is refused there with the reason.
    pub while_disk_failed: bool,
    /// Why a transaction refuses to queue it, if it does.
    pub not_in_transaction: Option<&'static str>,
    /// `MULTI`, `EXEC`, `DISCARD`, `WATCH`: the transaction layer's own, never queued.
    pub control: bool,
}

impl Spec {
    /// Runnable before authenticating.
    const fn before_auth(self) -> Spec {
        Spec { access: Access::BeforeAuth, ..self }
    }

    /// Only the admin user's, when there is an admin password.
    const fn admin(self) -> Spec {
        Spec { access: Access::Admin, ..self }
    }

    /// Answered while the disk is failed.
    const fn on_failed_disk(self) -> Spec {
        Spec { while_disk_failed: true, ..self }
    }

    /// Refused inside a transaction, for reason `why`.
    const fn not_queued(self, why: &'static str) -> Spec {
        Spec { not_in_transaction: Some(why), ..self }
    }

    /// A transaction-control command.
    const fn control(self) -> Spec {
        Spec { control: true, ..self }
    }
}

const R: &[&str] = &["readonly", "fast"];
const W: &[&str] = &["write", "denyoom"];
const C: &[&str] = &["fast", "stale", "loading"];
const A: &[&str] = &["admin", "noscript"];

const fn spec(
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    keys: (i64, i64, i64),
    group: &'static str,
    summary: &'static str,
) -> Spec {
    Spec {
        name,
        arity,
        flags,
        keys,
        group,
        summary,
        access: Access::User,
        while_disk_failed: false,
        not_in_transaction: None,
        control: false,
    }
}

/// Why `HELLO` is not queued.
const HELLO_IN_MULTI: &str = "it would switch the protocol of EXEC's reply part way; send it before MULTI";
/// Why `AUTH` is not queued.
const AUTH_IN_MULTI: &str = "the queued commands were checked against the user before it; send it before MULTI";

/// Every command, in `COMMAND`'s order.
pub const COMMANDS: &[Spec] = &[
    spec("get", 2, R, (1, 1, 1), "string", "Get the value of a key"),
    spec("set", -3, W, (1, 1, 1), "string", "Set a key's value, with expiry and conditions"),
    spec("setex", 4, W, (1, 1, 1), "string", "Set a value that expires in seconds"),
    spec("psetex", 4, W, (1, 1, 1), "string", "Set a value that expires in milliseconds"),
    spec("setnx", 3, W, (1, 1, 1), "string", "Set a value if the key is absent (not atomic)"),
    spec("getset", 3, W, (1, 1, 1), "string", "Set a value and return the old one (not atomic)"),
    spec("getdel", 2, W, (1, 1, 1), "string", "Get a value and delete the key (not atomic)"),
    spec("mset", -3, W, (1, -1, 2), "string", "Set several keys, each its own write"),
    spec("mget", -2, R, (1, -1, 1), "string", "Get the values of several keys"),
    spec("append", 3, W, (1, 1, 1), "string", "Append to a value (not atomic)"),
    spec("strlen", 2, R, (1, 1, 1), "string", "The length of a value"),
    spec("incr", 2, W, (1, 1, 1), "string", "Replicated counter: increments merge across replicas"),
    spec("decr", 2, W, (1, 1, 1), "string", "Replicated counter: increments merge across replicas"),
    spec("incrby", 3, W, (1, 1, 1), "string", "Replicated counter: increments merge across replicas"),
    spec("decrby", 3, W, (1, 1, 1), "string", "Replicated counter: increments merge across replicas"),
    spec("expire", -3, W, (1, 1, 1), "generic", "Set a key's expiry in seconds"),
    spec("pexpire", -3, W, (1, 1, 1), "generic", "Set a key's expiry in milliseconds"),
    spec("expireat", -3, W, (1, 1, 1), "generic", "Set a key's expiry as a Unix time in seconds"),
    spec("pexpireat", -3, W, (1, 1, 1), "generic", "Set a key's expiry as a Unix time in milliseconds"),
    spec("ttl", 2, R, (1, 1, 1), "generic", "Seconds to a key's expiry"),
    spec("pttl", 2, R, (1, 1, 1), "generic", "Milliseconds to a key's expiry"),
    spec("persist", 2, W, (1, 1, 1), "generic", "Remove a key's expiry"),
    spec("del", -2, W, (1, -1, 1), "generic", "Delete keys"),
    spec("unlink", -2, W, (1, -1, 1), "generic", "Delete keys (same as DEL)"),
    spec("exists", -2, R, (1, -1, 1), "generic", "Count the keys that exist"),
    spec("type", 2, R, (1, 1, 1), "generic", "The type of a key: string or none"),
    spec("scan", -2, &["readonly"], (0, 0, 0), "generic", "Iterate the cluster's keys in token order"),
    spec("keys", 2, &["readonly"], (0, 0, 0), "generic", "Every key matching a pattern (a whole scan)"),
    spec("flushdb", -1, &["write", "admin"], (0, 0, 0), "server", "Delete every key of the cluster (admin)").admin(),
    spec("dbsize", 1, &["readonly"], (0, 0, 0), "server", "Count the cluster's live keys (a whole scan)"),
    spec("ping", -1, C, (0, 0, 0), "connection", "Ping the node"),
    spec("echo", 2, C, (0, 0, 0), "connection", "Echo the argument"),
    spec("hello", -1, C, (0, 0, 0), "connection", "Handshake; HELLO 3 switches to RESP3, HELLO 2 back")
        .before_auth()
        .on_failed_disk()
        .not_queued(HELLO_IN_MULTI),
    spec("auth", -2, C, (0, 0, 0), "connection", "Authenticate")
        .before_auth()
        .on_failed_disk()
        .not_queued(AUTH_IN_MULTI),
    spec("client", -2, C, (0, 0, 0), "connection", "CLIENT ID/SETNAME/GETNAME/LIST/INFO").on_failed_disk(),
    spec("select", 2, C, (0, 0, 0), "connection", "Select database 0 (the only one)"),
    spec("quit", -1, C, (0, 0, 0), "connection", "Close the connection").before_auth().on_failed_disk(),
    spec("info", -1, C, (0, 0, 0), "server", "Node information").on_failed_disk(),
    spec("command", -1, C, (0, 0, 0), "server", "Command table").on_failed_disk(),
    spec("config", -2, A, (0, 0, 0), "server", "CONFIG GET of a few parameters").on_failed_disk(),
    spec("multi", 1, C, (0, 0, 0), "transactions", "Queue the commands up to EXEC (order only, no isolation)")
        .control(),
    spec("exec", 1, &["slow"], (0, 0, 0), "transactions", "Run the queued commands in order").control(),
    spec("discard", 1, C, (0, 0, 0), "transactions", "Drop the queued commands").control(),
    spec("watch", -2, C, (0, 0, 0), "transactions", "Refused: no optimistic locking without isolation").control(),
    spec("unwatch", 1, C, (0, 0, 0), "transactions", "Nothing to unwatch: OK"),
    spec("consistency", -1, C, (0, 0, 0), "tailor", "This connection's consistency level"),
    spec("tailor.repair", 1, A, (0, 0, 0), "tailor", "Run an anti-entropy pass").admin(),
    spec("tailor.hints", -1, A, (0, 0, 0), "tailor", "List or drop this node's hints (LIST/DROP <node>)").admin(),
    spec("tailor.set", 3, A, (0, 0, 0), "tailor", "Set a node knob").admin(),
    spec("tailor.get", -2, A, (0, 0, 0), "tailor", "Get a node knob"),
    spec("tailor.localget", 2, R, (1, 1, 1), "tailor", "Read this node's own replica"),
];

/// Command `name`'s entry.
pub fn find(name: &str) -> Option<&'static Spec> {
    COMMANDS.iter().find(|s| s.name == name)
}

/// Who may run the command whose entry is `spec` (an unknown one, `None`: an authenticated
/// user, so that it is refused before authenticating as any command is).
pub fn access(spec: Option<&Spec>) -> Access {
    spec.map_or(Access::User, |s| s.access)
}

impl Spec {
    /// Whether `n` arguments (the name included) fit its arity.
    pub fn arity_fits(&self, n: usize) -> bool {
        let n = n as i64;
        if self.arity >= 0 {
            n == self.arity
        } else {
            n >= -self.arity
        }
    }

    /// The arguments of this command that are keys (`args[0]` is the name).
    pub fn keys_of<'a>(&self, args: &'a [Vec<u8>]) -> Vec<&'a [u8]> {
        let (first, last, step) = self.keys;
        if first == 0 || args.len() < 2 {
            return Vec::new();
        }
        let end = if last < 0 { args.len() as i64 + last + 1 } else { (last + 1).min(args.len() as i64) };
        let range = (first as usize)..(end.max(first) as usize);
        args.get(range).unwrap_or_default().iter().step_by(step as usize).map(Vec::as_slice).collect()
    }
}

/// `COMMAND`'s entry for `s`.
pub fn entry(s: &Spec) -> Reply {
    let flags = s.flags.iter().map(|f| Reply::Simple(f.to_string())).collect();
    let (first, last, step) = s.keys;
    Reply::Array(vec![
        Reply::Bulk(s.name.as_bytes().to_vec()),
        Reply::Integer(s.arity),
        Reply::Array(flags),
        Reply::Integer(first),
        Reply::Integer(last),
        Reply::Integer(step),
    ])
}

/// `COMMAND DOCS`' entry for `s`: its name and a map of summary, since and group.
pub fn docs(s: &Spec) -> (Reply, Reply) {
    let field = |t: &str| Reply::text(t);
    let doc = [("summary", s.summary), ("since", "1.0.0"), ("group", s.group)];
    (field(s.name), Reply::Map(doc.iter().map(|(k, v)| (field(k), field(v))).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<Vec<u8>> {
        a.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn keys_follow_first_last_and_step() {
        let k = |a: &[&str]| {
            let args = args(a);
            let spec = find(&a[0].to_lowercase());
            spec.map_or_else(Vec::new, |s| s.keys_of(&args)).iter().map(|k| k.to_vec()).collect::<Vec<_>>()
        };
        assert_eq!(k(&["set", "a", "v", "EX", "1"]), args(&["a"]));
        assert_eq!(k(&["mset", "a", "1", "b", "2"]), args(&["a", "b"]));
        assert_eq!(k(&["del", "a", "b", "c"]), args(&["a", "b", "c"]));
        assert_eq!(k(&["mset", "a"]), args(&["a"]));
        assert!(k(&["get"]).is_empty() && k(&["ping", "x"]).is_empty() && k(&["nosuch", "x"]).is_empty());
    }

    #[test]
    fn every_name_is_lower_case_and_unique() {
        for (i, s) in COMMANDS.iter().enumerate() {
            assert_eq!(s.name, s.name.to_lowercase());
            assert!(COMMANDS[..i].iter().all(|o| o.name != s.name), "{} twice", s.name);
        }
    }
}
