//! Group commit for `sync` durability: one committer thread makes the journal durable for every
//! write committed so far, then acknowledges all of them at once.
//!
//! Why a thread of its own: a write that waited for its fsync on the replica's worker thread
//! held that worker for the whole sync, so one fsync covered at most as many writes as there
//! were workers (8k SET/s with 4 workers). Here a worker commits its batch to fjall's journal
//! (buffered), hands the acknowledgement to the committer ([`GroupCommit::then`]) and takes the
//! next job; the committer syncs once for everything committed meanwhile, so the writes per
//! fsync grow with the clients, not the workers.
//!
//! Why the sync runs outside fjall's journal lock: `Database::persist(SyncData)` holds the
//! journal writer's mutex during the fdatasync, which stalls every commit behind it. The
//! committer instead asks fjall to move its buffer to the OS (`persist(Buffer)`, a write under
//! the lock) and then fdatasyncs the active journal file through its own descriptor, without
//! the lock. The journal is `<data_dir>/<id>.jnl` with the highest id active (fjall 3's layout,
//! checked by a test); a rotation between the two steps is harmless, as fjall syncs a journal
//! (`SyncAll`) before it seals it. Without a journal file in sight the committer falls back to
//! fjall's own locked `persist(SyncData)`.
//!
//! Durability is not weakened: a write is acknowledged only after a sync that started after
//! its commit returned. A failed sync fails every write it covered and every later one: after
//! a failed fdatasync Linux may have dropped the dirty pages, so nothing written since can be
//! promised durable (the node must be restarted, as fjall poisons itself alike).

use fjall::{Database, PersistMode};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// What a waiter learns: durable, or why not.
pub type Synced = Result<(), String>;

/// An acknowledgement to send once its write is durable.
pub type Waiter = Box<dyn FnOnce(Synced) + Send>;

#[derive(Default)]
struct State {
    /// Commits counted so far (each after its batch reached fjall's journal buffer).
    committed: u64,
    /// Every commit up to this one is durable.
    synced: u64,
    /// Acknowledgements waiting for a sync, with their commit numbers.
    waiters: Vec<(u64, Waiter)>,
    /// A sync failed: nothing is durable from then on.
    failed: Option<String>,
    stop: bool,
}

struct Shared {
    db: Database,
    dir: PathBuf,
    state: Mutex<State>,
    /// The committer waits on it for work.
    work: Condvar,
    /// Blocking writers wait on it for their sync.
    synced: Condvar,
}

/// The committer of one database (a thread, stopped and joined on drop).
pub struct GroupCommit {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Count a commit whose batch just returned from fjall; its commit number.
    fn count(&self, s: &mut State) -> u64 {
        s.committed += 1;
        self.work.notify_one();
        s.committed
    }
}

impl GroupCommit {
    /// Start the committer for `db`, whose files are in `dir`.
    pub fn start(db: Database, dir: &Path) -> std::io::Result<GroupCommit> {
        let shared = Arc::new(Shared {
            db,
            dir: dir.to_path_buf(),
            state: Mutex::new(State::default()),
            work: Condvar::new(),
            synced: Condvar::new(),
        });
        let me = shared.clone();
        let thread = std::thread::Builder::new().name("tailor-commit".into()).spawn(move || committer(&me))?;
        Ok(GroupCommit { shared, thread: Some(thread) })
    }

    /// A batch was committed: call `ack` once it is durable (on the committer thread, or here
    /// when a sync already failed). The caller's thread is free meanwhile.
    pub fn then(&self, ack: impl FnOnce(Synced) + Send + 'static) {
        self.acks().then_all(vec![Box::new(ack)]);
    }

    /// A handle that acknowledges batches after their sync, for a flush scope's writes
    /// ([`crate::staged`]).
    pub fn acks(&self) -> SyncAcks {
        SyncAcks(self.shared.clone())
    }

    /// A batch was committed: return once it is durable.
    pub fn wait(&self) -> Synced {
        let mut s = self.shared.lock();
        let mine = self.shared.count(&mut s);
        loop {
            if let Some(e) = &s.failed {
                return Err(e.clone());
            }
            if s.synced >= mine {
                return Ok(());
            }
            s = self.shared.synced.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Acknowledges committed batches once a sync covers them ([`GroupCommit::acks`]); used while
/// its [`GroupCommit`] lives (a waiter handed over after the committer stopped is dropped
/// unanswered, which its sender sees as a failure).
#[derive(Clone)]
pub struct SyncAcks(Arc<Shared>);

impl SyncAcks {
    /// Batches were committed: call each of `acks` once they are durable (on the committer
    /// thread, or here when a sync already failed).
    pub fn then_all(&self, acks: Vec<Waiter>) {
        let mut s = self.0.lock();
        if let Some(e) = s.failed.clone() {
            drop(s);
            return acks.into_iter().for_each(|ack| ack(Err(e.clone())));
        }
        let mine = self.0.count(&mut s);
        s.waiters.extend(acks.into_iter().map(|ack| (mine, ack)));
    }
}

impl Drop for GroupCommit {
    /// Sync what is pending, answer its waiters, and stop the thread (so the database can be
    /// reopened once the storage is dropped).
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.work.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn committer(shared: &Shared) {
    let mut journal: Option<(u64, File)> = None;
    loop {
        let mut s = shared.lock();
        while s.synced == s.committed && !s.stop {
            s = shared.work.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        if s.synced == s.committed {
            return;
        }
        let target = s.committed;
        let waiters = std::mem::take(&mut s.waiters);
        drop(s);
        let done = sync(shared, &mut journal).map_err(|e| format!("journal sync failed: {e}"));
        let mut s = shared.lock();
        match &done {
            Ok(()) => s.synced = target,
            Err(e) => {
                tracing::error!("{e}; no write is acknowledged as durable from now on");
                s.failed = Some(e.clone());
                s.synced = target;
            }
        }
        let failed = s.failed.clone();
        drop(s);
        shared.synced.notify_all();
        for (_, ack) in waiters {
            ack(failed.clone().map_or(Ok(()), Err));
        }
    }
}

/// Make every batch committed before the call durable (see the module comment for why this
/// sequence and not `persist(SyncData)`).
fn sync(shared: &Shared, journal: &mut Option<(u64, File)>) -> Result<(), String> {
    shared.db.persist(PersistMode::Buffer).map_err(|e| e.to_string())?;
    // a journal that vanished between the listing and the open was rotated, hence synced:
    // look again for the new active one
    for _ in 0..8 {
        let Some(id) = active_journal(&shared.dir) else { break };
        if journal.as_ref().map(|j| j.0) != Some(id) {
            match File::open(journal_path(&shared.dir, id)) {
                Ok(f) => *journal = Some((id, f)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e.to_string()),
            }
        }
        if let Some((id, f)) = journal.as_ref() {
            match f.sync_data() {
                Ok(()) => return Ok(()),
                Err(e) => {
                    tracing::warn!("fdatasync of journal {id} failed ({e}); syncing through fjall");
                    break;
                }
            }
        }
    }
    shared.db.persist(PersistMode::SyncData).map_err(|e| e.to_string())
}

fn journal_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id}.jnl"))
}

/// The id of the active (newest) journal file in `dir`, if any.
fn active_journal(dir: &Path) -> Option<u64> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".jnl")?.parse::<u64>().ok())
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// The committer's sync without fjall's lock relies on fjall 3 keeping its active journal
    /// as `<dir>/<id>.jnl`: a flushed write must be in that file (it is preallocated, so its
    /// length says nothing; look for the bytes).
    #[test]
    fn the_active_journal_is_where_the_committer_looks() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder(dir.path()).manual_journal_persist(true).open().unwrap();
        let ks = db.keyspace("k", fjall::KeyspaceCreateOptions::default).unwrap();
        // below fjall's journal compression threshold (4 KiB), so it is in the journal as written
        let value: Vec<u8> = (0..2048u64).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8).collect();
        ks.insert(b"key", &value).unwrap();
        db.persist(PersistMode::Buffer).unwrap();
        let id = active_journal(dir.path()).expect("a journal file in the data directory");
        let bytes = std::fs::read(journal_path(dir.path(), id)).unwrap();
        assert!(bytes.windows(value.len()).any(|w| w == value.as_slice()), "the write is not in {id}.jnl");
    }

    #[test]
    fn every_waiter_is_answered_after_a_sync() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder(dir.path()).manual_journal_persist(true).open().unwrap();
        let ks = db.keyspace("k", fjall::KeyspaceCreateOptions::default).unwrap();
        let acked = Arc::new(AtomicU64::new(0));
        {
            let gc = GroupCommit::start(db.clone(), dir.path()).unwrap();
            for i in 0..100u32 {
                ks.insert(i.to_be_bytes(), b"v").unwrap();
                let acked = acked.clone();
                gc.then(move |r| {
                    r.unwrap();
                    acked.fetch_add(1, Ordering::SeqCst);
                });
            }
            ks.insert(b"last", b"v").unwrap();
            gc.wait().unwrap();
        }
        assert_eq!(acked.load(Ordering::SeqCst), 100, "drop answers whatever is still pending");
    }
}
