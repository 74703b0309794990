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
//! What is queued is the command's arguments, checked as above but not parsed: a command's
//! syntax error (`SET k v BOGUS`) is its reply in `EXEC`'s array, as in Redis, and the queue
//! ([`Transaction`]) is the session's, so that `session` never depends on `commands`.
//!
//! Limits (a client controls what it queues): at most
//! [`MAX_QUEUED_COMMANDS`](crate::session::MAX_QUEUED_COMMANDS) commands and
//! `max_command_bytes` bytes of arguments per transaction (a transaction holds what one command
//! may), the bytes leased from the node's `max_buffered_bytes` budget like a connection's input
//! buffer; `EXEC`'s reply is leased from that budget as MGET's is. A refusal names the limit.

use super::{check_keys, table, unknown, wrong_args, Executed};
use crate::limits::Lease;
use crate::node::Node;
use crate::resp::Reply;
use crate::session::{Session, Transaction};
use std::sync::atomic::Ordering;
use std::sync::Arc;

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
    let control = table::find(&name).is_some_and(|s| s.control);
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
            session.begin_transaction(Transaction::new(node.budget.lease()));
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
    let spec = table::find(name);
    session.may_run(&node.cfg, name, table::access(spec))?;
    let spec = spec.ok_or_else(|| unknown(args))?;
    if !spec.arity_fits(args.len()) {
        return Err(wrong_args(name));
    }
    if !session.in_transaction() {
        return Ok(());
    }
    if let Some(why) = spec.not_in_transaction {
        return Err(Reply::err(format!("{} is not allowed in a transaction here: {why}", name.to_uppercase())));
    }
    check_keys(node, Some(spec), args)
}

/// `EXEC` in a transaction: its queued commands, or `EXECABORT` if one was refused.
fn exec_or_abort(session: &mut Session) -> Route {
    match session.end_transaction() {
        Some(t) if !t.aborted() => Route::Exec(t),
        _ => Route::Answer(Reply::Error("EXECABORT Transaction discarded because of previous errors.".into())),
    }
}

/// Queue `args` (admitted) within the limits; `QUEUED`, or the refusal that aborts.
fn queue(node: &Node, session: &mut Session, args: Vec<Vec<u8>>) -> Reply {
    let Some(t) = session.transaction() else { return Reply::err("not in a transaction") };
    if t.aborted() {
        return Reply::Simple("QUEUED".into()); // never runs: not held
    }
    if let Err(why) = t.push(args, node.cfg.max_command_bytes) {
        node.metrics.limit_refusals.fetch_add(1, Ordering::Relaxed);
        t.abort();
        return Reply::err(format!("{why}; the transaction is discarded at EXEC"));
    }
    Reply::Simple("QUEUED".into())
}

/// `EXEC`: run the queued commands in order; the array of their replies, whose bytes are leased
/// from the node's buffer budget until written (a reply over it is replaced by an error).
pub(super) async fn exec(node: &Arc<Node>, session: &mut Session, t: Transaction) -> Executed {
    let mut lease = node.budget.lease();
    let queued = t.into_queued();
    let mut replies = Vec::with_capacity(queued.len());
    for args in queued {
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
