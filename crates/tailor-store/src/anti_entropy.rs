//! Anti-entropy (Cassandra's repair): replicas compare Merkle trees of each token range and
//! exchange keys only where the trees differ.
//!
//! A pass (`TAILOR.REPAIR`, `tailor cluster repair`, or every `repair_every_s`) first drops the
//! tombstones past their grace (`gc.rs`), then, for every token range this node replicates:
//! builds its own tree of the range (`merkle.rs`, one scan of the token-ordered `versions`
//! keyspace), asks every other replica of the range for theirs, and compares. For each leaf
//! where some replica differs, it lists the keys and versions of the leaf's tokens on this node
//! and on the replicas that differ (a replica whose leaf equals this node's holds the same
//! list), and for each key writes the newest version to every replica holding an older one or
//! none (`repair::write_back`, the path of read repair; the value is read from a replica that
//! holds it); when that newest copy is a counter record, versions are not the order of records
//! (`counter.rs`), so every replica's copy is read, resolved (merged), and the resolution written
//! to each replica whose copy differs. Tombstones past their grace count as absent: left out of the trees (every replica
//! uses the pass's cutoff) and never copied to a replica that lacks them, though one still held
//! overwrites an older value.
//!
//! Costs: each range is scanned once per replica for its tree (a replica answers with `2^depth`
//! leaves, 16 bytes each: 16 KB at the default `merkle_depth` 10), and only the keys of
//! differing leaves cross the network. `repair_keys_per_s` paces the pass: keys scanned here
//! plus keys received in lists, a second, on average (a tree is built in one scan, so one
//! range's scan is a burst; the replicas of a range hold about the same keys, so pacing this
//! node's scans paces theirs). A replica that cannot be reached is counted in `failed` and the
//! range repaired among the others: run the pass again once it is back.

use crate::internode::codec::MAX_LISTED;
use crate::internode::{Failure, Message};
use crate::limits::Pace;
use crate::merkle::{MerkleTree, Tokens, TreeBuilder, MAX_DEPTH};
use crate::node::Node;
use crate::repair::{side_send, write_back};
use crate::replica::{Outcome, Work};
use crate::storage::{KeyVersion, Storage, StorageError, Versioned};
use crate::transport::Transport;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tailor_core::model::{NodeId, Tags};
use tailor_core::ring::{Ring, TokenRange};
use tokio::sync::mpsc;

/// Timeout of one tree or key-list request: a replica scans a whole range for a tree.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Bytes of keys one key-list reply carries before it stops (`more`): with keys of at most
/// 64 KB, a reply stays well within the frame limit's 1 MB of slack.
const LIST_BYTES: usize = 256 * 1024;

/// What one anti-entropy pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Token ranges whose trees were compared.
    pub ranges: u64,
    /// Ranges where some replica's tree differed from this node's.
    pub mismatched: u64,
    /// Leaves (sub-ranges) whose keys were exchanged.
    pub leaves: u64,
    /// Keys this node scanned for its trees.
    pub scanned: u64,
    /// Keys (with versions) received from other replicas' lists.
    pub exchanged: u64,
    /// Keys written to at least one replica that was behind.
    pub repaired: u64,
    /// Replica requests that failed (a replica down: run the pass again once it is back).
    pub failed: u64,
    /// Tombstones past their grace dropped here.
    pub purged: u64,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ranges={} mismatched={} leaves={} scanned={} exchanged={} repaired={} failed={} purged={}",
            self.ranges,
            self.mismatched,
            self.leaves,
            self.scanned,
            self.exchanged,
            self.repaired,
            self.failed,
            self.purged
        )
    }
}

/// The tree of `storage`'s keys in `tokens` with `2^depth` leaves, tombstones below `cutoff`
/// left out; and how many keys were scanned.
pub fn tree(storage: &Storage, tokens: Tokens, depth: u8, cutoff: u64) -> Result<(MerkleTree, u64), StorageError> {
    let mut builder = TreeBuilder::new(tokens, depth);
    let mut keys = 0;
    storage.scan(tokens.first..=tokens.last, None, |token, kv, _| {
        keys += 1;
        if !(kv.tombstone && kv.version < cutoff) {
            builder.add(token, &kv.key, kv.version, kv.tombstone);
        }
        true
    })?;
    Ok((builder.finish(), keys))
}

/// One page of `storage`'s keys in `tokens` after `after`: at most [`MAX_LISTED`] keys and
/// about [`LIST_BYTES`] bytes of them; true if more follow.
pub fn list(storage: &Storage, tokens: Tokens, after: Option<&[u8]>) -> Result<(Vec<KeyVersion>, bool), StorageError> {
    let (mut out, mut bytes, mut more) = (Vec::new(), 0, false);
    storage.scan(tokens.first..=tokens.last, after, |_, kv, _| {
        if out.len() == MAX_LISTED || bytes >= LIST_BYTES {
            more = true;
            return false;
        }
        bytes += kv.key.len();
        out.push(kv);
        true
    })?;
    Ok((out, more))
}

/// The answer to a peer's [`Message::TreeRequest`] or [`Message::KeysRequest`] (a blocking
/// scan: run it off the async threads).
fn answer(storage: &Storage, max_key: u64, msg: Message) -> Message {
    let failed = |id, reason: String| Message::Failed { id, reason, failure: Failure::ForGood };
    let storage_failed = |id, e: StorageError| Message::Failed { id, reason: e.to_string(), failure: Failure::Now };
    match msg {
        Message::TreeRequest { id, depth, .. } if depth > MAX_DEPTH => {
            failed(id, format!("tree depth {depth} is above the limit of {MAX_DEPTH}"))
        }
        Message::TreeRequest { id, first, last, depth, cutoff } => match Tokens::new(first, last) {
            None => failed(id, format!("empty token range {first}..={last}")),
            Some(tokens) => match tree(storage, tokens, depth, cutoff) {
                Ok((t, _)) => Message::TreeReply { id, leaves: t.leaves().to_vec() },
                Err(e) => storage_failed(id, e),
            },
        },
        Message::KeysRequest { id, after: Some(a), .. } if a.len() as u64 > max_key => {
            failed(id, format!("key of {} bytes is above max_key_bytes", a.len()))
        }
        Message::KeysRequest { id, first, last, after } => match Tokens::new(first, last) {
            None => failed(id, format!("empty token range {first}..={last}")),
            Some(tokens) => match list(storage, tokens, after.as_deref()) {
                Ok((entries, more)) => Message::KeysReply { id, entries, more },
                Err(e) => storage_failed(id, e),
            },
        },
        other => failed(other.id(), "not an anti-entropy request".into()),
    }
}

/// Answer a peer's tree or key-list request through `tx`, at most `repair_scans` at once.
pub fn serve(node: &Arc<Node>, tx: &mpsc::Sender<Vec<u8>>, msg: Message) {
    let (node, tx) = (node.clone(), tx.clone());
    tokio::spawn(async move {
        let id = msg.id();
        let Ok(_permit) = node.repair_scans.acquire().await else { return };
        let (storage, max_key) = (node.storage.clone(), node.cfg.max_key_bytes);
        let reply = tokio::task::spawn_blocking(move || answer(&storage, max_key, msg))
            .await
            .unwrap_or_else(|e| Message::Failed { id, reason: format!("scan failed: {e}"), failure: Failure::Now });
        let _ = tx.send(node.seal.encode(&reply)).await;
    });
}

/// Run one pass on `node`: drop expired tombstones, then compare and repair every range it
/// replicates. Counted in the node's metrics as it goes.
pub async fn run(node: &Node) -> Result<Report, StorageError> {
    let mut pass = Pass {
        node,
        pace: Pace::new(node.cfg.repair_keys_per_s),
        cutoff: node.storage.gc_cutoff(),
        depth: node.cfg.merkle_depth,
        report: Report::default(),
    };
    pass.report.purged = crate::gc::purge(&node.storage, &mut pass.pace).await?;
    node.metrics.tombstones_purged.fetch_add(pass.report.purged, Ordering::Relaxed);
    let ring = Ring::new(node.cfg.members.len(), node.cfg.replication, node.cfg.vnodes)
        .expect("the node started with this ring");
    let ranges: Vec<_> = ring.ranges().into_iter().filter(|r| r.replicas.contains(&node.cfg.id)).collect();
    tracing::info!(ranges = ranges.len(), purged = pass.report.purged, "anti-entropy pass started");
    for range in ranges {
        let before = pass.report;
        pass.range(range).await?;
        pass.count(&before);
    }
    let r = &pass.report;
    tracing::info!(
        ranges = r.ranges,
        mismatched = r.mismatched,
        exchanged = r.exchanged,
        repaired = r.repaired,
        failed = r.failed,
        "anti-entropy pass done"
    );
    Ok(pass.report)
}

/// Where each replica of a leaf stands on each key: `(version, tombstone)`, `(0, false)` if
/// the replica lacks it; replicas in the order of the leaf's replica list.
type Held = BTreeMap<Vec<u8>, Vec<(u64, bool)>>;

/// One pass in progress.
struct Pass<'a> {
    node: &'a Node,
    pace: Pace,
    /// Tombstones below this version are past their grace.
    cutoff: u64,
    depth: u8,
    report: Report,
}

impl Pass<'_> {
    fn me(&self) -> NodeId {
        self.node.cfg.id
    }

    /// Add what the pass did since `before` to the node's metrics.
    fn count(&self, before: &Report) {
        let m = &self.node.metrics;
        let add = |c: &AtomicU64, now: u64, then: u64| c.fetch_add(now - then, Ordering::Relaxed);
        add(&m.repair_ranges_compared, self.report.ranges, before.ranges);
        add(&m.repair_ranges_mismatched, self.report.mismatched, before.mismatched);
        add(&m.repair_keys_exchanged, self.report.exchanged, before.exchanged);
        add(&m.repair_keys_repaired, self.report.repaired, before.repaired);
    }

    /// Compare one range's trees and repair the leaves that differ.
    async fn range(&mut self, range: TokenRange) -> Result<(), StorageError> {
        let tokens = Tokens { first: range.first, last: range.last };
        let mine = self.local_tree(tokens).await?;
        let me = self.me();
        let (mut same, mut differing) = (vec![me], Vec::new());
        for &peer in range.replicas.iter().filter(|&&r| r != me) {
            match self.remote_tree(peer, tokens).await {
                Ok(theirs) => match mine.differing_leaves(&theirs) {
                    d if d.is_empty() => same.push(peer),
                    d => differing.push((peer, d.into_iter().collect::<HashSet<usize>>())),
                },
                Err(e) => self.failed(peer, &e),
            }
        }
        self.report.ranges += 1;
        if differing.is_empty() {
            return Ok(());
        }
        self.report.mismatched += 1;
        let leaves: BTreeSet<usize> = differing.iter().flat_map(|(_, d)| d.iter().copied()).collect();
        for leaf in leaves {
            let Some(sub) = tokens.leaf(leaf, 1 << self.depth) else { continue };
            let (odd, even): (Vec<_>, Vec<_>) = differing.iter().partition(|(_, d)| d.contains(&leaf));
            let agree = same.iter().copied().chain(even.iter().map(|(p, _)| *p)).collect();
            self.report.leaves += 1;
            self.repair_leaf(sub, agree, odd.iter().map(|(p, _)| *p).collect()).await?;
        }
        Ok(())
    }

    /// Repair the keys of `sub`: `agree` (this node first) hold this node's list, `others`
    /// are asked for theirs.
    async fn repair_leaf(&mut self, sub: Tokens, agree: Vec<NodeId>, others: Vec<NodeId>) -> Result<(), StorageError> {
        assert_eq!(agree.first(), Some(&self.me()), "this node holds its own list");
        let width = agree.len() + others.len();
        let mut replicas = agree.clone();
        let mut held = Held::new();
        for kv in self.local_list(sub).await? {
            let entry = held.entry(kv.key).or_insert_with(|| vec![(0, false); width]);
            entry[..agree.len()].fill((kv.version, kv.tombstone));
        }
        for peer in others {
            match self.remote_list(peer, sub).await {
                Ok(list) => {
                    let j = replicas.len();
                    for kv in list {
                        held.entry(kv.key).or_insert_with(|| vec![(0, false); width])[j] = (kv.version, kv.tombstone);
                    }
                    replicas.push(peer);
                }
                Err(e) => self.failed(peer, &e),
            }
        }
        for (key, versions) in held {
            self.repair_key(&key, &replicas, &versions[..replicas.len()]).await;
        }
        Ok(())
    }

    /// Write the newest of `versions` (what each of `replicas` holds) of `key` to the replicas
    /// behind it.
    async fn repair_key(&mut self, key: &[u8], replicas: &[NodeId], versions: &[(u64, bool)]) {
        let Some((newest, tombstone)) = versions.iter().copied().max() else { return };
        let expired = tombstone && newest < self.cutoff;
        let stale: Vec<NodeId> = replicas
            .iter()
            .zip(versions)
            // a tombstone past its grace is as good as no key: never copied where there is none
            .filter(|(_, &(v, _))| v < newest && !(expired && v == 0))
            .map(|(r, _)| *r)
            .collect();
        if stale.is_empty() {
            return;
        }
        let holder = replicas[versions.iter().position(|&(v, _)| v == newest).expect("the newest is held")];
        let value = match tombstone {
            true => Versioned { version: newest, value: None },
            false => match self.read(holder, key).await {
                Ok(v) if v.value.as_deref().is_some_and(crate::counter::is_counter) => {
                    return self.repair_counter(key, replicas).await;
                }
                Ok(v) if v.version >= newest => v,
                Ok(_) => return,
                Err(e) => return self.failed(holder, &e),
            },
        };
        if write_back(self.network(), key, &value, &stale, self.tags(key, &value)).await > 0 {
            self.report.repaired += 1;
        }
    }

    /// A key whose newest copy is a counter record: versions are not the order of records then
    /// (`counter.rs`), so every replica's copy is read, they are resolved, and the resolution is
    /// written to each replica whose copy differs.
    async fn repair_counter(&mut self, key: &[u8], replicas: &[NodeId]) {
        let mut answers = Vec::with_capacity(replicas.len());
        for &r in replicas {
            match self.read(r, key).await {
                Ok(v) => answers.push((r, v)),
                Err(e) => return self.failed(r, &e),
            }
        }
        let Some((value, differ)) = crate::repair::reconcile(answers) else { return };
        if !differ.is_empty() && write_back(self.network(), key, &value, &differ, self.tags(key, &value)).await > 0 {
            self.report.repaired += 1;
        }
    }

    fn network(&self) -> &dyn Transport {
        self.node.network.as_ref()
    }

    fn failed(&mut self, peer: NodeId, error: &str) {
        self.report.failed += 1;
        tracing::warn!(peer, "anti-entropy: {error}");
    }

    /// The core's tags for a write-back of `value` to `key` (`repair::side_send`).
    fn tags(&self, key: &[u8], value: &Versioned) -> Tags {
        self.node.coordinator.side_tags(key, value.value.as_ref().map(|v| v.len() as u64))
    }

    async fn read(&self, holder: NodeId, key: &[u8]) -> Result<Versioned, String> {
        let work = Work::Read { key: key.to_vec() };
        let tags = self.node.coordinator.side_tags(key, None);
        match self.network().exchange(holder, work, side_send(holder, tags)).await? {
            (Outcome::Read(v), _) => Ok(v),
            _ => Err(format!("node {holder} answered a read with a write's reply")),
        }
    }

    async fn local_tree(&mut self, tokens: Tokens) -> Result<MerkleTree, StorageError> {
        let (storage, depth, cutoff) = (self.node.storage.clone(), self.depth, self.cutoff);
        let (tree, keys) = blocking(move || tree(&storage, tokens, depth, cutoff)).await?;
        self.report.scanned += keys;
        self.pace.take(keys).await;
        Ok(tree)
    }

    async fn local_list(&mut self, tokens: Tokens) -> Result<Vec<KeyVersion>, StorageError> {
        let storage = self.node.storage.clone();
        let list = blocking(move || {
            let mut out = Vec::new();
            storage.scan(tokens.first..=tokens.last, None, |_, kv, _| {
                out.push(kv);
                true
            })?;
            Ok(out)
        })
        .await?;
        self.pace.take(list.len() as u64).await;
        Ok(list)
    }

    /// Send `msg` to `peer` (if the failure detector has it up) and wait for its answer.
    async fn call(&self, peer: NodeId, msg: Message) -> Result<Message, String> {
        let Some(Some(p)) = self.node.peers.get(peer as usize) else { return Err(format!("node {peer} is no peer")) };
        if !p.is_up() {
            // not one timeout per range while the failure detector already knows
            return Err(format!("node {peer} is down"));
        }
        match p.call(msg, CALL_TIMEOUT).await.map_err(|e| e.to_string())? {
            Message::Failed { reason, .. } => Err(format!("node {peer}: {reason}")),
            reply => Ok(reply),
        }
    }

    fn id(&self) -> u64 {
        self.node.network.ids.fetch_add(1, Ordering::Relaxed)
    }

    async fn remote_tree(&mut self, peer: NodeId, tokens: Tokens) -> Result<MerkleTree, String> {
        let (first, last, depth, cutoff) = (tokens.first, tokens.last, self.depth, self.cutoff);
        match self.call(peer, Message::TreeRequest { id: self.id(), first, last, depth, cutoff }).await? {
            Message::TreeReply { leaves, .. } if leaves.len() == 1 << depth => {
                MerkleTree::from_leaves(leaves).map_err(|e| e.to_string())
            }
            other => Err(format!("node {peer} answered a tree request with {other:?}")),
        }
    }

    /// Every key of `tokens` on `peer`, page by page; each page must follow the last in token
    /// order and stay within `tokens` (so a peer cannot make the pass loop or stray).
    async fn remote_list(&mut self, peer: NodeId, tokens: Tokens) -> Result<Vec<KeyVersion>, String> {
        let (mut out, mut after): (Vec<KeyVersion>, Option<Vec<u8>>) = (Vec::new(), None);
        loop {
            let msg =
                Message::KeysRequest { id: self.id(), first: tokens.first, last: tokens.last, after: after.clone() };
            let Message::KeysReply { entries, more, .. } = self.call(peer, msg).await? else {
                return Err(format!("node {peer} answered a key list request with another message"));
            };
            let mut prev = after.as_deref().map(|k| (crate::token(k), k.to_vec()));
            for kv in &entries {
                let at = (crate::token(&kv.key), kv.key.clone());
                if !tokens.contains(at.0) || prev.as_ref().is_some_and(|p| *p >= at) {
                    return Err(format!("node {peer} listed keys out of the range or out of order"));
                }
                prev = Some(at);
            }
            self.report.exchanged += entries.len() as u64;
            self.pace.take(entries.len() as u64).await;
            after = entries.last().map(|kv| kv.key.clone());
            out.extend(entries);
            match (more, &after) {
                (false, _) => return Ok(out),
                (true, None) => return Err(format!("node {peer} sent an empty page with more to come")),
                (true, Some(_)) => {}
            }
        }
    }
}

/// Run a blocking storage job off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, StorageError> + Send + 'static,
) -> Result<T, StorageError> {
    tokio::task::spawn_blocking(job).await.map_err(|e| StorageError::Task(e.to_string()))?
}
