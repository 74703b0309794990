//! The writes one flush scope ([`crate::flush_scope`]) made to one database, staged in a single
//! engine batch that commits once, at the scope's end or when it must end early; then their
//! acknowledgements wait for one journal flush (`buffer`) or the committer's sync (`sync`).
//!
//! Why: each write committed its own batch, taking fjall's journal lock for the journal write
//! and both memtable inserts; under SET -P16 the node's threads queued on that lock (perf:
//! 9 % of the node's CPU in futex waits and contended locking inside `WriteBatch::commit`).
//! One batch per scope takes it once for a whole pipeline.
//!
//! A staged write keeps its key's stripe lock until the batch commits, so no other writer can
//! check its version against storage that lacks the staged one, nor commit a newer version of
//! the key before it. A thread waits for a stripe only after committing what it staged (see
//! `Storage::lock_stripe`), so two threads never wait on each other. The row cache holds a
//! staged row at once (a read in the same pipeline sees it, as it saw a write in fjall's
//! journal buffer before); a failed commit takes those rows out again.

use crate::commit::SyncAcks;
use crate::row_cache::RowCache;
use fjall::{Database, OwnedWriteBatch, PersistMode};
use parking_lot::{ArcMutexGuard, RawMutex};
use std::sync::Arc;

/// What an acknowledgement learns: the journal reached the OS, or why not.
pub type Flushed = Result<(), String>;

/// An acknowledgement waiting for the scope's flush.
pub type Ack = Box<dyn FnOnce(Flushed) + Send>;

/// Move `db`'s journal to the OS: what a `buffer` write's acknowledgement waits for.
pub fn flush(db: &Database) -> Flushed {
    db.persist(PersistMode::Buffer).map_err(|e| format!("journal flush failed: {e}"))
}

/// A held key stripe (see `Storage::lock_stripe`).
pub type StripeGuard = ArcMutexGuard<RawMutex, ()>;

/// Most writes one batch stages before it commits early: bounds the batch's memory and how
/// long its stripes stay held.
pub const MAX_STAGED_WRITES: usize = 64;

/// Most bytes (keys and values) one batch stages before it commits early.
pub const MAX_STAGED_BYTES: usize = 4 << 20;

/// Writes staged for one database, with the stripes they hold.
pub struct Staged {
    db: Database,
    batch: OwnedWriteBatch,
    rows: Arc<RowCache>,
    /// The committer that syncs the journal (`sync` durability); none: a flush suffices.
    sync: Option<SyncAcks>,
    /// Stripe index and guard of every stripe held.
    held: Vec<(usize, StripeGuard)>,
    /// Keys staged: a second write of one of them must not share the batch (both would get one
    /// sequence number, so the engine could not order them).
    keys: Vec<Box<[u8]>>,
    bytes: usize,
}

impl Staged {
    /// Nothing staged yet for `db`, whose rows `rows` caches and whose journal `sync` syncs
    /// (none: `buffer` durability).
    pub fn new(db: &Database, rows: Arc<RowCache>, sync: Option<SyncAcks>) -> Staged {
        let (held, keys) = (Vec::new(), Vec::new());
        Staged { db: db.clone(), batch: db.batch(), rows, sync, held, keys, bytes: 0 }
    }

    /// Whether this batch holds `stripe`.
    pub fn holds(&self, stripe: usize) -> bool {
        self.held.iter().any(|h| h.0 == stripe)
    }

    /// Whether `key` has a write staged here.
    pub fn has(&self, key: &[u8]) -> bool {
        self.keys.iter().any(|k| &**k == key)
    }

    /// Keep `guard` of `stripe` until the commit.
    pub fn hold(&mut self, stripe: usize, guard: StripeGuard) {
        debug_assert!(!self.holds(stripe), "a stripe is held once");
        self.held.push((stripe, guard));
    }

    /// Stage a write of `key` (`bytes`: its size with the value) that `fill` puts in the batch;
    /// the caller holds the key's stripe. True when the batch is full and must commit now.
    pub fn stage(&mut self, key: &[u8], bytes: usize, fill: impl FnOnce(&mut OwnedWriteBatch)) -> bool {
        debug_assert!(!self.has(key), "a key is staged once per batch");
        fill(&mut self.batch);
        self.keys.push(key.into());
        self.bytes += bytes;
        self.keys.len() >= MAX_STAGED_WRITES || self.bytes >= MAX_STAGED_BYTES
    }

    /// Commit what is staged to the journal buffer (the scope's flush moves it to the OS) and
    /// release every stripe; on failure first take the staged rows out of the row cache.
    pub fn commit(&mut self) -> Result<(), String> {
        let batch = std::mem::replace(&mut self.batch, self.db.batch());
        let committed = if self.keys.is_empty() { Ok(()) } else { batch.commit() };
        if committed.is_err() {
            self.keys.iter().for_each(|k| self.rows.remove(k));
        }
        self.keys.clear();
        self.bytes = 0;
        self.held.clear();
        committed.map_err(|e| format!("journal write failed: {e}"))
    }

    /// Answer `acks`, whose writes were committed: with `failed` if a commit failed, else once
    /// durable. True if they were answered here (not later, on the committer's thread).
    pub fn acknowledge(&self, acks: Vec<Ack>, failed: Option<String>) -> bool {
        if acks.is_empty() {
            return false;
        }
        let done = match (failed, &self.sync) {
            (Some(e), _) => Err(e),
            (None, Some(sync)) => {
                sync.then_all(acks);
                return false;
            }
            (None, None) => flush(&self.db),
        };
        if let Err(e) = &done {
            tracing::error!("{e}; the writes it covered are answered with the error");
        }
        acks.into_iter().for_each(|ack| ack(done.clone()));
        true
    }
}

impl Drop for Staged {
    /// Staged writes are committed before the scope ends; a batch dropped otherwise (a panic in
    /// the scope's end) is not, so its rows leave the cache before its stripes are released.
    fn drop(&mut self) {
        self.keys.iter().for_each(|k| self.rows.remove(k));
    }
}

#[cfg(test)]
mod tests {
    use super::MAX_STAGED_WRITES;
    use crate::config::Durability;
    use crate::flush_scope::run;
    use crate::storage::{Applied, Storage};
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Apply a write in the current scope and count its acknowledgement in `acked`.
    fn write(s: &Storage, key: &[u8], version: u64, value: Option<&[u8]>, acked: &Arc<AtomicUsize>) -> Applied {
        let applied = s.apply(key, version, value).unwrap();
        if applied == Applied::Committed {
            let acked = acked.clone();
            s.when_durable(move |r| {
                r.unwrap();
                acked.fetch_add(1, Ordering::SeqCst);
            });
        }
        applied
    }

    #[test]
    fn a_scope_stages_its_writes_in_order_and_they_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let acked = Arc::new(AtomicUsize::new(0));
        {
            // no row cache: a read in the scope must commit the staged write before it reads
            let s = Storage::open(dir.path(), Durability::Buffer).unwrap();
            run(|| {
                assert_eq!(write(&s, b"k", 5, Some(b"five"), &acked), Applied::Committed);
                assert_eq!(write(&s, b"k", 4, Some(b"four"), &acked), Applied::Stale, "older than the staged write");
                assert_eq!(write(&s, b"k", 7, Some(b"seven"), &acked), Applied::Committed, "a key twice in a scope");
                assert_eq!(s.get(b"k").unwrap().value.as_deref(), Some(&b"seven"[..]));
                assert_eq!(write(&s, b"gone", 9, None, &acked), Applied::Committed);
                for i in 0..(MAX_STAGED_WRITES as u64 + 5) {
                    assert_eq!(write(&s, &i.to_le_bytes(), 1, Some(b"v"), &acked), Applied::Committed);
                }
                assert_eq!(acked.load(Ordering::SeqCst), 0, "acknowledged only after the scope's flush");
            });
            assert_eq!(acked.load(Ordering::SeqCst), MAX_STAGED_WRITES + 8);
        }
        let s = Storage::open(dir.path(), Durability::Buffer).unwrap();
        assert_eq!(s.get(b"k").unwrap().value.as_deref(), Some(&b"seven"[..]));
        assert_eq!(s.get(b"gone").unwrap().version, 9, "the tombstone was staged too");
        for i in 0..(MAX_STAGED_WRITES as u64 + 5) {
            assert_eq!(s.get(&i.to_le_bytes()).unwrap().value.as_deref(), Some(&b"v"[..]));
        }
    }

    /// Threads whose scopes stage writes to the same keys at the same time, each in its own
    /// order (which would deadlock if a thread waited for a stripe while holding another):
    /// every scope ends, and each key keeps its highest version, in the engine as in the row
    /// cache, though a write staged earlier may meet a later one that another thread commits
    /// first.
    #[test]
    fn scopes_on_many_threads_never_wait_on_each_other_and_the_newest_version_wins() {
        const THREADS: u64 = 4;
        const ROUNDS: u64 = 500;
        let dir = tempfile::tempdir().unwrap();
        let s = Arc::new(Storage::open(dir.path(), Durability::Buffer).unwrap().with_row_cache(16 << 20));
        let newest: Arc<Vec<AtomicU64>> = Arc::new((0..ROUNDS * 16).map(|_| AtomicU64::new(0)).collect());
        let acked = Arc::new(AtomicUsize::new(0));
        // versions in the order the writes are made
        let clock = Arc::new(AtomicU64::new(1));
        let round_start = Arc::new(std::sync::Barrier::new(THREADS as usize));
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (s, newest, acked) = (s.clone(), newest.clone(), acked.clone());
                let (clock, round_start) = (clock.clone(), round_start.clone());
                std::thread::spawn(move || {
                    for round in 0..ROUNDS {
                        round_start.wait();
                        run(|| {
                            for i in 0..16u64 {
                                // the round's 16 keys, each thread in its own order
                                let k = round * 16 + (i * (2 * t + 1) + t) % 16;
                                let version = clock.fetch_add(1, Ordering::SeqCst);
                                if write(&s, &k.to_le_bytes(), version, Some(&version.to_le_bytes()), &acked)
                                    == Applied::Committed
                                {
                                    newest[k as usize].fetch_max(version, Ordering::SeqCst);
                                }
                            }
                        });
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert!(acked.load(Ordering::SeqCst) >= (ROUNDS * 16) as usize);
        let keys = 0..ROUNDS * 16;
        let read =
            |s: &Storage| -> Vec<u64> { keys.clone().map(|k| s.get(&k.to_le_bytes()).unwrap().version).collect() };
        let expected: Vec<u64> = newest.iter().map(|v| v.load(Ordering::SeqCst)).collect();
        assert_eq!(read(&s), expected, "the row cache");
        drop(s);
        assert_eq!(read(&Storage::open(dir.path(), Durability::Buffer).unwrap()), expected, "the engine");
    }
}
