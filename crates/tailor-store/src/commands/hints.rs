//! `TAILOR.HINTS`: what this node keeps for peers that missed writes, and the operator's way out
//! when a hint cannot be delivered (`hints.rs` drops those by itself after bounded retries).
//!
//! - `TAILOR.HINTS`: per member, `hints` and `bytes` waiting, then the node's counters;
//! - `TAILOR.HINTS LIST <node> [count]`: the oldest `count` (default 10, at most 1,000) hints for
//!   `node`, each `[key, version, value bytes or -1 for a delete]`;
//! - `TAILOR.HINTS DROP <node>`: drop every hint for `node` (it then needs `TAILOR.REPAIR`);
//!   answers how many were dropped.

use super::wrong_args;
use crate::anti_entropy::blocking;
use crate::node::Node;
use crate::resp::Reply;
use tailor_core::model::NodeId;

/// Most hints one `LIST` returns.
const MAX_LISTED: usize = 1_000;

/// Run `TAILOR.HINTS` with `args` (its name first).
pub async fn hints(node: &Node, args: &[Vec<u8>]) -> Reply {
    let Some(hints) = node.hints.clone() else {
        return Reply::err("hinted handoff is off on this node (hint_max_bytes = 0)");
    };
    let sub = args.get(1).map(|a| String::from_utf8_lossy(a).to_ascii_lowercase());
    match (sub.as_deref(), args.len()) {
        (None, _) => overview(&hints),
        (Some("list"), 3 | 4) => {
            let Some(target) = member(node, &args[2]) else { return not_a_member(node, &args[2]) };
            let count = match args.get(3).map(|c| String::from_utf8_lossy(c).parse::<usize>()) {
                None => 10,
                Some(Ok(n)) if (1..=MAX_LISTED).contains(&n) => n,
                Some(_) => return Reply::err(format!("count must be a number from 1 to {MAX_LISTED}")),
            };
            match blocking(move || hints.list(target, count)).await {
                Ok(list) => Reply::Array(list.into_iter().map(listed).collect()),
                Err(e) => Reply::err(e),
            }
        }
        (Some("drop"), 3) => {
            let Some(target) = member(node, &args[2]) else { return not_a_member(node, &args[2]) };
            match blocking(move || hints.drop_all(target)).await {
                Ok(n) => Reply::Integer(n as i64),
                Err(e) => Reply::err(e),
            }
        }
        (Some("list" | "drop"), _) => wrong_args("tailor.hints"),
        (Some(other), _) => Reply::err(format!("unknown TAILOR.HINTS subcommand '{other}' (LIST, DROP)")),
    }
}

fn overview(hints: &crate::hints::Hints) -> Reply {
    let mut out: Vec<(Reply, Reply)> = hints
        .waiting()
        .into_iter()
        .enumerate()
        .map(|(id, w)| (Reply::text(format!("node{id}")), Reply::text(format!("hints={},bytes={}", w.hints, w.bytes))))
        .collect();
    let st = hints.stats();
    for (name, v) in [
        ("pending", st.pending),
        ("stored", st.stored),
        ("replayed", st.replayed),
        ("dropped_full", st.dropped),
        ("undeliverable", st.undeliverable),
    ] {
        out.push((Reply::text(name), Reply::Integer(v as i64)));
    }
    Reply::Map(out)
}

fn listed(h: crate::hints::Hint) -> Reply {
    let size = h.value.as_ref().map_or(-1, |v| v.len() as i64);
    Reply::Array(vec![Reply::Bulk(h.key), Reply::Integer(h.version as i64), Reply::Integer(size)])
}

fn member(node: &Node, arg: &[u8]) -> Option<NodeId> {
    let id = String::from_utf8_lossy(arg).parse::<NodeId>().ok()?;
    ((id as usize) < node.cfg.members.len()).then_some(id)
}

fn not_a_member(node: &Node, arg: &[u8]) -> Reply {
    let last = node.cfg.members.len() - 1;
    Reply::err(format!("node must be a member id from 0 to {last}, not '{}'", String::from_utf8_lossy(arg)))
}
