//! `TAILOR.HINTS`: what this node keeps for peers that missed writes, and the operator's way out
//! when a hint cannot be delivered (`hints.rs` drops those by itself after bounded retries).
//!
//! - `TAILOR.HINTS`: per member, `hints` and `bytes` waiting, then the node's counters;
//! - `TAILOR.HINTS LIST <node> [count]`: the oldest `count` (default 10, at most 1,000) hints for
//!   `node`, each `[key, version, value bytes or -1 for a delete]`;
//! - `TAILOR.HINTS DROP <node>`: drop every hint for `node` (it then needs `TAILOR.REPAIR`);
//!   answers how many were dropped.

use super::parse::HintsCommand;
use crate::anti_entropy::blocking;
use crate::node::Node;
use crate::resp::Reply;
use tailor_core::model::NodeId;

/// Run `TAILOR.HINTS`' subcommand `sub`.
pub async fn hints(node: &Node, sub: HintsCommand) -> Reply {
    let Some(hints) = node.hints.clone() else {
        return Reply::err("hinted handoff is off on this node (hint_max_bytes = 0)");
    };
    match sub {
        HintsCommand::Overview => overview(&hints),
        HintsCommand::List { node: target, count } => {
            let Some(target) = member(node, &target) else { return not_a_member(node, &target) };
            match blocking(move || hints.list(target, count)).await {
                Ok(list) => Reply::Array(list.into_iter().map(listed).collect()),
                Err(e) => Reply::err(e),
            }
        }
        HintsCommand::Drop { node: target } => {
            let Some(target) = member(node, &target) else { return not_a_member(node, &target) };
            match blocking(move || hints.drop_all(target)).await {
                Ok(n) => Reply::Integer(n as i64),
                Err(e) => Reply::err(e),
            }
        }
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
