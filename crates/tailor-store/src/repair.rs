//! Repair at the coordinator: what a read at QUORUM or ALL writes back, and what a write keeps
//! as hints for the replicas it could not reach (`hints.rs` stores and replays them). What
//! neither saw, anti-entropy catches (`anti_entropy.rs`: Merkle trees per token range, with the
//! write-back below).
//!
//! Blocking read repair (Cassandra's, at QUORUM and ALL): when the answers a read waited for
//! disagree, the replicas that answered with an older version are sent the newest one, and the
//! client gets its value once they acknowledged (or failed), so a value a client has read is
//! on every replica that answered. These write-backs are not scheduling decisions: they bypass
//! the coordinator core, like hint replays.
//!
//! Background read repair (Cassandra's `read_repair_chance`): a read at ONE that had more than
//! one copy out (the `read_repair` fraction of reads also goes to every other replica; a hedge is
//! a second copy too) answers its client at once, and once every copy is in, the replicas that
//! answered older get the newest version, with no one waiting (`coordinator.rs`).

use crate::replica::Work;
use crate::storage::Versioned;
use crate::transport::Transport;
use std::sync::Arc;
use tailor_core::coordinator::{Send, SendKind, Ticket};
use tailor_core::model::{NodeId, Tags};

/// The index of the newest of `answers` (a higher version; at one version, a value over a
/// tombstone), if there is one.
pub fn newest(answers: &[(NodeId, Versioned)]) -> Option<usize> {
    let order = |a: &Versioned| (a.version, a.value.is_some());
    (0..answers.len()).max_by_key(|&i| order(&answers[i].1))
}

/// The replicas among `answers` whose version is older than `newest`'s.
pub fn stale(answers: &[(NodeId, Versioned)], newest: &Versioned) -> Vec<NodeId> {
    answers.iter().filter(|(_, v)| v.version < newest.version).map(|(r, _)| *r).collect()
}

/// What a read's `answers` reconcile to and the replicas to write it back to: the newest answer
/// and those that answered an older version, or, when a counter record is among them, the
/// resolution of them all (`counter.rs`: counters of one epoch merge; a plain value newer than
/// a counter's base ends it, whatever their versions) and those whose answer differs from it.
/// `None` without answers.
pub fn reconcile(mut answers: Vec<(NodeId, Versioned)>) -> Option<(Versioned, Vec<NodeId>)> {
    let counter = |v: &Versioned| v.value.as_deref().is_some_and(crate::counter::is_counter);
    if answers.iter().any(|(_, v)| counter(v)) {
        if let Some(best) = merge(&answers) {
            let differ = answers.iter().filter(|(_, v)| *v != best).map(|(r, _)| *r).collect();
            return Some((best, differ));
        }
    }
    let i = newest(&answers)?;
    let best = answers.swap_remove(i).1;
    let stale = stale(&answers, &best);
    Some((best, stale))
}

/// The resolution of every answer (`None`: a malformed counter record, or no answers).
fn merge(answers: &[(NodeId, Versioned)]) -> Option<Versioned> {
    let mut it = answers.iter().map(|(_, v)| (v.version, v.value.clone()));
    let first = it.next()?;
    let (version, value) = it.try_fold(first, crate::counter::resolved).ok()?;
    Some(Versioned { version, value })
}

/// The tags the coordinator core gives a side copy of a key (`Coordinator::side_tags`), for
/// code that sends copies of many keys (hint replay).
pub type SideTags<'a> = &'a (dyn Fn(&[u8], Option<u64>) -> Tags + Sync);

/// A copy that goes around the coordinator core's scheduling (a read repair, an anti-entropy
/// read or write-back, a hint replay), with the `tags` the core gives it (`side_tags`: a
/// client write's), so its replica queues it as it would the write it repairs; age 0.
pub fn side_send(replica: NodeId, tags: Tags) -> Send {
    Send { ticket: Ticket { slot: u32::MAX, id: 0 }, replica, tags, age: 0, kind: SendKind::Write }
}

/// Whether `s` is a copy [`side_send`] made (no scheduling decision stands behind it).
pub fn is_side_send(s: &Send) -> bool {
    s.ticket.slot == u32::MAX
}

/// Write `newest` of `key` back to each of `stale` with the core's `tags`, concurrently;
/// returns how many acknowledged.
pub async fn write_back(
    transport: &dyn Transport,
    key: &[u8],
    newest: &Versioned,
    stale: &[NodeId],
    tags: Tags,
) -> usize {
    let copies = stale.iter().map(|&r| {
        let work =
            Work::Write { key: key.to_vec(), version: newest.version, value: newest.value.clone().map(Arc::new) };
        transport.exchange(r, work, side_send(r, tags))
    });
    let mut acked = 0;
    for copy in copies.collect::<Vec<_>>() {
        acked += copy.await.is_ok() as usize;
    }
    acked
}
