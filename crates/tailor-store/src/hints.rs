//! Hinted handoff (Dynamo §4.6, Cassandra's hints): a write copy that could not reach its
//! replica (the replica was down, or the copy failed) is kept here, durably, and replayed in
//! order when the replica is up again, so a node back from a crash catches up with the writes
//! it missed.
//!
//! Hints live in their own keyspace of the node's database, keyed `target (u32 BE) ++ sequence
//! (u64 BE)` so each replica's hints replay in the order they were written; a hint is removed
//! once its replica acknowledged it. The bytes kept per replica are bounded: past the bound a
//! hint is dropped and counted (that replica then needs a repair of its ranges).
//!
//! No hint blocks the ones behind it: a copy the replica refuses for good (the empty key from
//! an older version, a version from the future) is dropped at once, one the replica answers with
//! a failure is retried at most [`MAX_FAILED_REPLAYS`] times and then dropped; each drop is
//! logged and counted (`tailor_hints_undeliverable_total`). A copy with no answer (the replica
//! went down again) ends the pass for that replica and is retried in the next. `TAILOR.HINTS`
//! lists a node's hints per replica and drops them (`commands/hints.rs`).

use crate::repair::SideTags;
use crate::replica::{Outcome, Work};
use crate::storage::{Storage, StorageError};
use crate::transport::{CopyFailure, Exchanged, Transport};
use fjall::Keyspace;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tailor_core::model::NodeId;

/// Copies replayed to one replica at once (concurrently), batch after batch.
const REPLAY_BATCH: usize = 64;

/// Replays a replica may answer with a failure (busy, a storage error) before the hint is
/// dropped as undeliverable (at one pass per `hint_replay_ms`, about 10 s by default).
pub const MAX_FAILED_REPLAYS: u32 = 10;

/// A write a replica missed.
#[derive(Clone, Debug, PartialEq)]
pub struct Hint {
    /// The key.
    pub key: Vec<u8>,
    /// The write's version.
    pub version: u64,
    /// The value (`None`: a delete).
    pub value: Option<Vec<u8>>,
}

impl Hint {
    fn encode(&self) -> Vec<u8> {
        let value = self.value.as_deref().unwrap_or(&[]);
        let mut out = Vec::with_capacity(13 + self.key.len() + value.len());
        out.extend_from_slice(&self.version.to_le_bytes());
        out.push(self.value.is_none() as u8);
        out.extend_from_slice(&(self.key.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.key);
        out.extend_from_slice(value);
        out
    }

    fn decode(rec: &[u8]) -> Option<Hint> {
        let version = u64::from_le_bytes(rec.get(0..8)?.try_into().ok()?);
        let delete = *rec.get(8)? == 1;
        let key_len = u32::from_le_bytes(rec.get(9..13)?.try_into().ok()?) as usize;
        let key = rec.get(13..13 + key_len)?.to_vec();
        let value = (!delete).then(|| rec[13 + key_len..].to_vec());
        Some(Hint { key, version, value })
    }

    fn bytes(&self) -> u64 {
        (13 + self.key.len() + self.value.as_ref().map_or(0, |v| v.len())) as u64
    }
}

/// What the hints of one node did, for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HintStats {
    /// Hints waiting for their replica.
    pub pending: u64,
    /// Hints stored so far.
    pub stored: u64,
    /// Hints replayed and acknowledged.
    pub replayed: u64,
    /// Hints dropped because their replica's bound was reached.
    pub dropped: u64,
    /// Hints dropped because their replica refused them, failed them past the retries, or an
    /// operator dropped them (`TAILOR.HINTS DROP`).
    pub undeliverable: u64,
}

/// The hints waiting for one replica.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waiting {
    /// Hints.
    pub hints: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// One node's hints for its peers.
pub struct Hints {
    storage: Arc<Storage>,
    keyspace: Keyspace,
    max_bytes: u64,
    next: AtomicU64,
    /// Per target: (hints, bytes) waiting.
    waiting: Mutex<Vec<(u64, u64)>>,
    stored: AtomicU64,
    replayed: AtomicU64,
    dropped: AtomicU64,
    undeliverable: AtomicU64,
    /// Failed replays per hint id since this process started.
    failures: Mutex<HashMap<[u8; 12], u32>>,
}

fn hint_id(target: NodeId, seq: u64) -> [u8; 12] {
    let mut id = [0u8; 12];
    id[..4].copy_from_slice(&target.to_be_bytes());
    id[4..].copy_from_slice(&seq.to_be_bytes());
    id
}

impl Hints {
    /// The hints kept in `storage` for a cluster of `members` nodes, at most `max_bytes` per
    /// replica (hints left from before a restart are counted and will replay).
    pub fn open(storage: Arc<Storage>, members: usize, max_bytes: u64) -> Result<Hints, StorageError> {
        let keyspace = storage.keyspace("hints")?;
        let mut waiting = vec![(0u64, 0u64); members];
        let mut next = 0;
        for item in keyspace.iter() {
            let (id, rec) = item.into_inner()?;
            let corrupt = || StorageError::Corrupt(id.len());
            let target = u32::from_be_bytes(id.get(..4).ok_or_else(corrupt)?.try_into().map_err(|_| corrupt())?);
            let seq = u64::from_be_bytes(id.get(4..12).ok_or_else(corrupt)?.try_into().map_err(|_| corrupt())?);
            next = next.max(seq + 1);
            if let Some(w) = waiting.get_mut(target as usize) {
                w.0 += 1;
                w.1 += rec.len() as u64;
            }
        }
        Ok(Hints {
            storage,
            keyspace,
            max_bytes,
            next: AtomicU64::new(next),
            waiting: Mutex::new(waiting),
            stored: AtomicU64::new(0),
            replayed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            undeliverable: AtomicU64::new(0),
            failures: Mutex::default(),
        })
    }

    /// Keep `hint` for `target`; false (and counted) if its bound is reached.
    pub fn add(&self, target: NodeId, hint: &Hint) -> Result<bool, StorageError> {
        {
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            let Some(w) = waiting.get_mut(target as usize) else { return Ok(false) };
            if w.1 + hint.bytes() > self.max_bytes {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("hints for node {target} are full ({} bytes): a write is dropped", w.1);
                return Ok(false);
            }
            w.0 += 1;
            w.1 += hint.bytes();
        }
        let id = hint_id(target, self.next.fetch_add(1, Ordering::Relaxed));
        self.storage.put_in(&self.keyspace, &id, Some(&hint.encode()))?;
        self.stored.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// The counters.
    pub fn stats(&self) -> HintStats {
        let pending = self.waiting.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|w| w.0).sum();
        HintStats {
            pending,
            stored: self.stored.load(Ordering::Relaxed),
            replayed: self.replayed.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            undeliverable: self.undeliverable.load(Ordering::Relaxed),
        }
    }

    /// The hints waiting for each member, by node id.
    pub fn waiting(&self) -> Vec<Waiting> {
        let waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.iter().map(|&(hints, bytes)| Waiting { hints, bytes }).collect()
    }

    /// The oldest hints (at most `n`) waiting for `target`, oldest first (`TAILOR.HINTS LIST`).
    pub fn list(&self, target: NodeId, n: usize) -> Result<Vec<Hint>, StorageError> {
        Ok(self.oldest(target, n)?.into_iter().map(|(_, h)| h).collect())
    }

    /// Drop every hint waiting for `target` (an operator's choice: that replica then needs a
    /// repair of its ranges); returns how many were dropped.
    pub fn drop_all(&self, target: NodeId) -> Result<u64, StorageError> {
        let mut dropped = 0;
        loop {
            let batch = self.oldest(target, 1024)?;
            if batch.is_empty() {
                break;
            }
            for (id, hint) in batch {
                self.discard(target, &id, &hint)?;
                dropped += 1;
            }
        }
        self.undeliverable.fetch_add(dropped, Ordering::Relaxed);
        tracing::warn!(peer = target, dropped, "hints dropped by an operator (TAILOR.HINTS DROP): repair that replica");
        Ok(dropped)
    }

    /// The oldest hints (at most `n`) waiting for `target`, with their ids.
    fn oldest(&self, target: NodeId, n: usize) -> Result<Vec<([u8; 12], Hint)>, StorageError> {
        let mut out = Vec::new();
        for item in self.keyspace.prefix(target.to_be_bytes()).take(n) {
            let (id, rec) = item.into_inner()?;
            let id: [u8; 12] = id.as_ref().try_into().map_err(|_| StorageError::Corrupt(id.len()))?;
            out.push((id, Hint::decode(&rec).ok_or(StorageError::Corrupt(rec.len()))?));
        }
        Ok(out)
    }

    /// Remove a delivered hint.
    fn remove(&self, target: NodeId, id: &[u8; 12], hint: &Hint) -> Result<(), StorageError> {
        self.discard(target, id, hint)?;
        self.replayed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Remove a hint from storage and from the counts, delivered or not.
    fn discard(&self, target: NodeId, id: &[u8; 12], hint: &Hint) -> Result<(), StorageError> {
        self.storage.put_in(&self.keyspace, id, None)?;
        self.failures.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let w = &mut waiting[target as usize];
        assert!(w.0 > 0, "a removed hint was counted");
        w.0 -= 1;
        w.1 = w.1.saturating_sub(hint.bytes());
        Ok(())
    }

    /// Drop a hint its replica will not take, with a log line and a count.
    fn undeliverable(&self, target: NodeId, id: &[u8; 12], hint: &Hint, why: &str) -> Result<(), StorageError> {
        self.discard(target, id, hint)?;
        self.undeliverable.fetch_add(1, Ordering::Relaxed);
        let key_bytes = hint.key.len();
        tracing::error!(peer = target, key_bytes, version = hint.version, "hint dropped as undeliverable: {why}");
        Ok(())
    }

    /// Count one failed replay of hint `id`; whether it has now failed too often.
    fn failed_too_often(&self, id: &[u8; 12]) -> bool {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let n = failures.entry(*id).or_insert(0);
        *n += 1;
        *n >= MAX_FAILED_REPLAYS
    }

    /// One replay pass: to every replica that is up and has hints, send them oldest first until
    /// none is left or one fails (the replica is probably down again; the next pass retries).
    /// Each copy carries the core's `tags` for its key (`repair::side_send`).
    pub async fn replay(&self, transport: &dyn Transport, tags: SideTags<'_>) -> Result<(), StorageError> {
        for target in 0..transport.members() as NodeId {
            let pending = self.waiting_for(target);
            if pending == 0 || !transport.is_up(target) {
                continue;
            }
            tracing::info!(peer = target, pending, "hint replay started");
            let replayed = self.replayed.load(Ordering::Relaxed);
            while self.waiting_for(target) > 0 && transport.is_up(target) {
                let batch = self.oldest(target, REPLAY_BATCH)?;
                if batch.is_empty() || !self.send_all(transport, target, batch, tags).await? {
                    break;
                }
            }
            let (done, left) = (self.replayed.load(Ordering::Relaxed) - replayed, self.waiting_for(target));
            tracing::info!(peer = target, replayed = done, left, "hint replay done");
        }
        Ok(())
    }

    /// Hints waiting for `target` (a heartbeat's answer tells it: `recovery.rs`).
    pub fn waiting_for(&self, target: NodeId) -> u64 {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner()).get(target as usize).map_or(0, |w| w.0)
    }

    /// Send `batch` to `target` at once; false if some copy got no answer (the replica is
    /// probably down again) or was failed and is kept for a retry.
    async fn send_all(
        &self,
        transport: &dyn Transport,
        target: NodeId,
        batch: Vec<([u8; 12], Hint)>,
        tags: SideTags<'_>,
    ) -> Result<bool, StorageError> {
        let copies = batch.iter().map(|(_, hint)| {
            let work =
                Work::Write { key: hint.key.clone(), version: hint.version, value: hint.value.clone().map(Arc::new) };
            let tags = tags(&hint.key, hint.value.as_ref().map(|v| v.len() as u64));
            transport.exchange(target, work, crate::repair::side_send(target, tags))
        });
        let answers = futures_util::future::join_all(copies).await;
        let mut all_delivered = true;
        for ((id, hint), answer) in batch.iter().zip(answers) {
            all_delivered &= self.settle(target, id, hint, answer)?;
        }
        Ok(all_delivered)
    }

    /// What one replayed copy's answer does to its hint; whether the hint is gone.
    fn settle(&self, target: NodeId, id: &[u8; 12], hint: &Hint, answer: Exchanged) -> Result<bool, StorageError> {
        let e = match answer {
            Ok((Outcome::Written(_), _)) => return self.remove(target, id, hint).map(|()| true),
            Ok(_) => crate::transport::CopyError::failed("a write answered with a read's reply"),
            Err(e) => e,
        };
        match e.kind {
            CopyFailure::Refused => self.undeliverable(target, id, hint, &format!("refused: {}", e.reason))?,
            CopyFailure::Failed | CopyFailure::FromTheFuture if self.failed_too_often(id) => {
                let why = format!("failed {MAX_FAILED_REPLAYS} times, last: {}", e.reason);
                self.undeliverable(target, id, hint, &why)?
            }
            CopyFailure::Failed | CopyFailure::FromTheFuture | CopyFailure::Unreachable => return Ok(false),
        }
        Ok(true)
    }
}

/// Keep `hints` (replica, write) durably, off the async threads (a hint may wait for an fsync).
pub fn keep(hints: &Arc<Hints>, missed: Vec<(NodeId, Hint)>) {
    if missed.is_empty() {
        return;
    }
    let hints = hints.clone();
    tokio::task::spawn_blocking(move || {
        for (target, hint) in missed {
            if let Err(e) = hints.add(target, &hint) {
                tracing::error!("cannot keep a hint for node {target}: {e}");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Durability;
    use crate::transport::{CopyError, Exchange};
    use tailor_core::coordinator::Send;
    use tailor_core::facts::Feedback;

    /// A replica that refuses the empty key, fails key `f` (busy), and takes anything else,
    /// counting what it took.
    struct Picky {
        taken: Mutex<Vec<Vec<u8>>>,
    }

    impl Transport for Picky {
        fn members(&self) -> usize {
            2
        }

        fn is_up(&self, _: NodeId) -> bool {
            true
        }

        fn exchange(&self, _: NodeId, work: Work, _: Send) -> Exchange<'_> {
            let Work::Write { key, .. } = work else { unreachable!("hints replay writes") };
            let answer = match key.as_slice() {
                b"" => Err(CopyError::refused(crate::limits::EMPTY_KEY)),
                b"f" => Err(CopyError::failed("replica busy")),
                _ => {
                    self.taken.lock().unwrap().push(key);
                    Ok((Outcome::Written(true), Feedback::default()))
                }
            };
            Box::pin(async move { answer })
        }
    }

    #[tokio::test]
    async fn an_undeliverable_hint_is_dropped_and_never_blocks_the_ones_behind_it() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Arc::new(Storage::open(dir.path(), Durability::Buffer).unwrap());
        let h = Hints::open(storage, 2, 1 << 20).unwrap();
        let hint = |k: &[u8]| Hint { key: k.to_vec(), version: 1, value: Some(b"v".to_vec()) };
        // the poison pill of issue 36: an empty key first, then a failing one, then good ones
        for k in [&b""[..], b"f", b"a", b"b"] {
            assert!(h.add(1, &hint(k)).unwrap());
        }
        let replica = Picky { taken: Mutex::default() };
        h.replay(&replica, &|_, _| Default::default()).await.unwrap();
        assert_eq!(*replica.taken.lock().unwrap(), vec![b"a".to_vec(), b"b".to_vec()], "delivered past the bad two");
        let st = h.stats();
        assert_eq!((st.pending, st.replayed, st.undeliverable), (1, 2, 1), "the refused one is gone, `f` waits");
        for pass in 2..=MAX_FAILED_REPLAYS {
            h.replay(&replica, &|_, _| Default::default()).await.unwrap();
            assert_eq!(h.stats().pending, (pass < MAX_FAILED_REPLAYS) as u64, "pass {pass}");
        }
        assert_eq!(h.stats().undeliverable, 2, "a hint failed {MAX_FAILED_REPLAYS} times is dropped");
        // the operator's way out
        for k in [&b"x"[..], b"y"] {
            h.add(1, &hint(k)).unwrap();
        }
        assert_eq!(h.list(1, 10).unwrap().iter().map(|h| h.key.clone()).collect::<Vec<_>>(), [b"x", b"y"]);
        assert_eq!(h.waiting()[1], Waiting { hints: 2, bytes: 2 * hint(b"x").bytes() });
        assert_eq!(h.drop_all(1).unwrap(), 2);
        assert_eq!((h.stats().pending, h.stats().undeliverable), (0, 4));
    }

    #[test]
    fn hints_survive_a_restart_in_order_and_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let hint = |i: u8| Hint { key: vec![i], version: i as u64, value: i.is_multiple_of(2).then(|| vec![i; 10]) };
        {
            let storage = Arc::new(Storage::open(dir.path(), Durability::Sync).unwrap());
            // hints of 24 and 14 bytes: four take 76, a fifth of 24 would pass 90
            let h = Hints::open(storage, 3, 90).unwrap();
            for i in 0..4 {
                assert!(h.add(1, &hint(i)).unwrap());
            }
            assert!(!h.add(1, &hint(4)).unwrap(), "the fifth is over the 90-byte bound");
            assert!(h.add(2, &hint(9)).unwrap());
            assert!(!h.add(7, &hint(1)).unwrap(), "not a member");
            assert_eq!(h.stats(), HintStats { pending: 5, stored: 5, replayed: 0, dropped: 1, undeliverable: 0 });
        }
        let storage = Arc::new(Storage::open(dir.path(), Durability::Sync).unwrap());
        let h = Hints::open(storage, 3, 90).unwrap();
        assert_eq!(h.stats().pending, 5);
        let oldest = h.oldest(1, 10).unwrap();
        assert_eq!(oldest.iter().map(|(_, x)| x.clone()).collect::<Vec<_>>(), (0..4).map(hint).collect::<Vec<_>>());
        h.remove(1, &oldest[0].0, &oldest[0].1).unwrap();
        assert_eq!(h.oldest(1, 10).unwrap().len(), 3);
        assert!(h.add(1, &hint(4)).unwrap(), "a replayed hint frees its bytes");
        assert_eq!(h.oldest(2, 10).unwrap()[0].1, hint(9));
    }
}
