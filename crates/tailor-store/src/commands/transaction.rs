//! `MULTI` / `EXEC` / `DISCARD`, with Redis's protocol behaviour, and `WATCH` refused.
//!
//! After `MULTI`, each command is checked as Redis checks it before queuing (authentication,
//! a known command, its arity, key sizes, allowed in a transaction) and answered `+QUEUED`, or
//! with the error, which marks the transaction so that `EXEC` answers `-EXECABORT` and runs
//! nothing. `EXEC` runs the queued commands in order on this connection's session and answers
//! the array of their replies; a command that fails has its error in the array and the others
//! still run (as in Redis). `DISCARD` drops the queue. `QUIT` is not queued: it closes the
//! connection at once, as in Redis 7.2.
//!
//! What `EXEC` honours: the commands run one after the other, in order, with nothing else of
//! this connection's between them. Nothing more: other clients' commands interleave with them,
//! each command keeps its own consistency level and its own failure (no atomicity, across keys
//! or replicas), and a reader may see some of the writes and not others. That is what a
//! replicated store without transactions can honour; `WATCH` (optimistic locking) would need
//! isolation it does not have, so it is refused rather than silently not watching.
//!
//! Refused inside a transaction, at queue time, naming the command: `HELLO` (it would switch
//! the protocol of `EXEC`'s own reply part way) and `AUTH` (the queued commands were checked
//! against the user before it). `SELECT`, `CONSISTENCY`, `CLIENT SETNAME` are queued and change
//! the session in their turn, for the commands after them. `FLUSHDB`, `KEYS`, `TAILOR.REPAIR`
//! are queued too: they are long, not unsafe, and run in their turn like outside a
//! transaction. This node has no blocking or subscribe commands to refuse.
//!
//! Limits (a client controls what it queues): at most [`MAX_QUEUED_COMMANDS`] commands and
//! `max_command_bytes` bytes of arguments per transaction (a transaction holds what one command
//! may), the bytes leased from the node's `max_buffered_bytes` budget like a connection's input
//! buffer; `EXEC`'s reply is leased from that budget as MGET's is. A refusal names the limit.

use super::{check_keys, table, unknown, wrong_args, Executed};
use crate::limits::Lease;
use crate::node::Node;
use crate::resp::Reply;
use crate::session::Session;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Most commands one transaction queues.
pub const MAX_QUEUED_COMMANDS: usize = 100_000;

/// Bytes a queued argument costs beyond its own (its vector).
const ARGUMENT_OVERHEAD: u64 = 32;

/// Commands refused inside a transaction, and why.
const NOT_IN_TRANSACTION: &[(&str, &str)] = &[
    ("hello", "it would switch the protocol of EXEC's reply part way; send it before MULTI"),
    ("auth", "the queued commands were checked against the user before it; send it before MULTI"),
];

/// A connection's open transaction: the commands queued since `MULTI`.
#[derive(Debug)]
pub struct Transaction {
    queued: Vec<Vec<Vec<u8>>>,
    /// The queued bytes' share of the node's buffer budget.
    lease: Lease,
    /// A command was refused while queuing: `EXEC` answers `EXECABORT`.
    aborted: bool,
}

/// What the connection's transaction makes of a command.
pub(super) enum Route {
    /// Not the transaction's business: run it now.
    Run(Vec<Vec<u8>>),
    /// Answered by the transaction layer (`QUEUED`, `OK`, an error).
    Answer(Reply),
    /// `EXEC` of these queued commands.
    Exec(Transaction),
}

/// Route one command through this connection's transaction state.
pub(super) fn route(node: &Arc<Node>, session: &mut Session, args: Vec<Vec<u8>>) -> Route {
    let Some(name) = args.first().map(|a| String::from_utf8_lossy(a).to_ascii_lowercase()) else {
        return Route::Run(args);
    };
    let control = matches!(name.as_str(), "multi" | "exec" | "discard" | "watch");
    if name == "quit" || !(control || session.in_transaction()) {
        return Route::Run(args);
    }
    if control {
        // a queued command is counted when EXEC runs it, as Redis counts it
        node.metrics.client_commands.fetch_add(1, Ordering::Relaxed);
    }
    session.touch(&name);
    if let Err(refused) = admit(node, session, &name, &args) {
        if let Some(t) = session.transaction() {
            t.abort();
        }
        return Route::Answer(refused);
    }
    answer(node, session, &name, args)
}

/// An admitted command's answer: MULTI, EXEC, DISCARD and WATCH in or out of a transaction, or
/// another command queued.
fn answer(node: &Arc<Node>, session: &mut Session, name: &str, args: Vec<Vec<u8>>) -> Route {
    Route::Answer(match (name, session.in_transaction()) {
        ("multi", true) => Reply::err("MULTI calls can not be nested"),
        ("multi", false) => {
            session.begin_transaction(Transaction { queued: Vec::new(), lease: node.budget.lease(), aborted: false });
            Reply::ok()
        }
        ("exec", true) => return exec_or_abort(session),
        ("exec", false) => Reply::err("EXEC without MULTI"),
        ("discard", true) => {
            session.end_transaction();
            Reply::ok()
        }
        ("discard", false) => Reply::err("DISCARD without MULTI"),
        ("watch", true) => Reply::err("WATCH inside MULTI is not allowed"),
        ("watch", false) => Reply::err(
            "WATCH is not supported: optimistic locking needs isolation, which this replicated store \
             does not have (MULTI/EXEC only keeps this connection's commands in order)",
        ),
        _ => queue(node, session, args),
    })
}

/// The checks Redis makes before queuing (or running a transaction command).
fn admit(node: &Node, session: &Session, name: &str, args: &[Vec<u8>]) -> Result<(), Reply> {
    session.may_run(&node.cfg, name)?;
    let spec = table::find(name).ok_or_else(|| unknown(args))?;
    let n = args.len() as i64;
    if (spec.arity >= 0 && n != spec.arity) || n < spec.arity.abs() {
        return Err(wrong_args(name));
    }
    if !session.in_transaction() {
        return Ok(());
    }
    if let Some((_, why)) = NOT_IN_TRANSACTION.iter().find(|(refused, _)| *refused == name) {
        return Err(Reply::err(format!("{} is not allowed in a transaction here: {why}", name.to_uppercase())));
    }
    check_keys(node, name, args)
}

/// `EXEC` in a transaction: its queued commands, or `EXECABORT` if one was refused.
fn exec_or_abort(session: &mut Session) -> Route {
    match session.end_transaction() {
        Some(t) if !t.aborted => Route::Exec(t),
        _ => Route::Answer(Reply::Error("EXECABORT Transaction discarded because of previous errors.".into())),
    }
}

/// Queue `args` (admitted) within the limits; `QUEUED`, or the refusal that aborts.
fn queue(node: &Node, session: &mut Session, args: Vec<Vec<u8>>) -> Reply {
    let Some(t) = session.transaction() else { return Reply::err("not in a transaction") };
    if t.aborted {
        return Reply::Simple("QUEUED".into()); // never runs: not held
    }
    let held = t.lease.held() + args.iter().map(|a| a.len() as u64 + ARGUMENT_OVERHEAD).sum::<u64>();
    let refusal = if t.queued.len() >= MAX_QUEUED_COMMANDS {
        Some(format!("a transaction queues at most {MAX_QUEUED_COMMANDS} commands (this node's fixed limit)"))
    } else if held > node.cfg.max_command_bytes {
        Some(format!(
            "a transaction's queued commands may hold at most {} bytes (max_command_bytes)",
            node.cfg.max_command_bytes
        ))
    } else if let Err(e) = t.lease.resize(held) {
        Some(e.to_string())
    } else {
        None
    };
    if let Some(why) = refusal {
        node.metrics.limit_refusals.fetch_add(1, Ordering::Relaxed);
        t.abort();
        return Reply::err(format!("{why}; the transaction is discarded at EXEC"));
    }
    t.queued.push(args);
    Reply::Simple("QUEUED".into())
}

impl Transaction {
    /// Mark it failed and drop what it queued (EXEC will run none of it).
    fn abort(&mut self) {
        self.aborted = true;
        self.queued = Vec::new();
        self.lease.resize(0).expect("shrinking a lease cannot fail");
    }
}

/// `EXEC`: run the queued commands in order; the array of their replies, whose bytes are leased
/// from the node's buffer budget until written (a reply over it is replaced by an error).
pub(super) async fn exec(node: &Arc<Node>, session: &mut Session, t: Transaction) -> Executed {
    let mut lease = node.budget.lease();
    let mut replies = Vec::with_capacity(t.queued.len());
    for args in t.queued {
        let done = super::run(node, session, args).await;
        replies.push(hold(node, &mut lease, done));
    }
    Executed { reply: Reply::Array(replies), close: false, lease: Some(lease) }
}

/// One command's reply within `EXEC`'s, its bytes added to `lease`.
fn hold(node: &Node, lease: &mut Lease, done: Executed) -> Reply {
    if let Some(own) = done.lease {
        lease.absorb(own); // MGET leased its reply already
        return done.reply;
    }
    if lease.resize(lease.held() + reply_bytes(&done.reply)).is_ok() {
        return done.reply;
    }
    node.metrics.limit_refusals.fetch_add(1, Ordering::Relaxed);
    Reply::err(format!(
        "EXEC's reply would go over the node's {}-byte buffer budget (max_buffered_bytes): this \
         command ran but its reply was dropped; queue fewer large reads",
        node.cfg.max_buffered_bytes
    ))
}

/// About the bytes `reply` takes encoded.
fn reply_bytes(reply: &Reply) -> u64 {
    match reply {
        Reply::Simple(s) | Reply::Error(s) => s.len() as u64 + 3,
        Reply::Integer(_) | Reply::Null => 24,
        Reply::Bulk(b) => b.len() as u64 + 16,
        Reply::Array(items) => 16 + items.iter().map(reply_bytes).sum::<u64>(),
        Reply::Map(pairs) => 16 + pairs.iter().map(|(k, v)| reply_bytes(k) + reply_bytes(v)).sum::<u64>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_bytes_count_values_and_headers() {
        assert_eq!(reply_bytes(&Reply::Bulk(vec![0; 100])), 116);
        let nested =
            Reply::Array(vec![Reply::ok(), Reply::Null, Reply::Map(vec![(Reply::Integer(1), Reply::text("ab"))])]);
        assert_eq!(reply_bytes(&nested), 16 + 5 + 24 + 16 + 24 + 18);
    }
}
