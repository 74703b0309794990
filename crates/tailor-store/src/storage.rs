//! The storage engine: an embedded fjall 3 database with versioned values.
//!
//! Why fjall: it is a pure-Rust LSM tree (no C++ toolchain, a 46 s clean build against 24 min
//! for bundled RocksDB) with key-value separation, so 1 MB values live in blob files and do not
//! bloat compactions; on these machines it measured faster than RocksDB for both 1 KB and
//! 512 KB values (docs/design.md).
//!
//! Every value carries a version (last writer wins across replicas): the `data` keyspace maps
//! key → `version (u64 LE) ++ bytes`, and the small `versions` keyspace maps `token (u64 BE) ++
//! key` → `version ++ flag ++ size`, so a replica can check versions and learn a value's size
//! without reading it, deletes leave a versioned tombstone, and the keys of a token range are
//! one ordered scan (anti-entropy's Merkle trees). The token prefix costs 8 bytes of each entry
//! and of the engine's key limit, and nothing per write (the entry was written anyway).
//!
//! Tombstones are kept for `gc_grace_s` (Cassandra's gc_grace_seconds), measured on their
//! version's physical time: then [`Storage::purge_tombstones`] drops them, and a tombstone that
//! arrives already older than the grace is never stored (it still deletes an older value), so
//! a dropped tombstone is dropped once and not brought back by a replica that still held it.

use crate::config::Durability;
use crate::limits::ENGINE_MAX_KEY;
use crate::row_cache::{Row, RowCache, RowCacheStats};
use byteview::ByteView;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, KvSeparationOptions, PersistMode, Slice};
use std::borrow::Cow;
use std::ops::{Bound, RangeInclusive};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Storage errors.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The engine failed.
    #[error("storage engine: {0}")]
    Engine(#[from] fjall::Error),
    /// A stored record is shorter than its header (corruption).
    #[error("corrupt record for key of {0} bytes")]
    Corrupt(usize),
    /// A key longer than the engine takes (fjall would panic); callers refuse these earlier
    /// (`max_key_bytes`), so this is the last line, not the limit.
    #[error("key of {0} bytes is above the engine's limit of {ENGINE_MAX_KEY} bytes")]
    KeyTooLong(usize),
    /// The empty key (fjall asserts keys are not empty); callers refuse it earlier
    /// ([`crate::limits::check_key`]), so this is the last line.
    #[error("the empty key cannot be stored (the engine takes keys of 1 byte or more)")]
    EmptyKey,
    /// The journal sync of a `sync` write failed (the write may be lost).
    #[error("{0}")]
    Sync(String),
    /// A counter record that cannot be decoded (`counter.rs`).
    #[error("malformed counter record: {0}")]
    Counter(String),
    /// A blocking storage task did not finish (it panicked).
    #[error("storage task failed: {0}")]
    Task(String),
}

/// Refuse a key the engine would panic on.
fn engine_key(key: &[u8]) -> Result<&[u8], StorageError> {
    if key.is_empty() {
        return Err(StorageError::EmptyKey);
    }
    if key.len() as u64 > ENGINE_MAX_KEY {
        return Err(StorageError::KeyTooLong(key.len()));
    }
    Ok(key)
}

/// A value read from the engine with its version.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Versioned {
    /// Version of the newest write (0 = never written).
    pub version: u64,
    /// The value, or `None` if absent or deleted.
    pub value: Option<Vec<u8>>,
}

/// One key's entry in the token-ordered `versions` keyspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyVersion {
    /// The client key.
    pub key: Vec<u8>,
    /// Its newest version.
    pub version: u64,
    /// Whether that version is a delete.
    pub tombstone: bool,
}

/// What one page of [`Storage::purge_tombstones`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    /// Keys scanned.
    pub scanned: u64,
    /// Tombstones dropped.
    pub purged: u64,
    /// Where the next page starts (`None`: the scan is done).
    pub next: Option<Vec<u8>>,
}

/// Key stripes (locks serialising a key's version check and write). Many, because a flush
/// scope holds the stripes of its staged writes until its batch commits ([`crate::staged`]): with
/// 16 pipelined writes per scope, a write on another thread meets a held stripe 1.5 % of the
/// time per busy thread.
const STRIPES: usize = 1024;

/// fjall's background threads (memtable flushes and compactions). One, because with more its
/// first worker hands every compaction request back to the queue while the others are busy and
/// takes it again at once (fjall 3.1's `worker_tick`): a spin that took 10-14 % of a node's CPU
/// under SET load in perf, for as long as a compaction ran.
const ENGINE_WORKERS: usize = 1;

/// The `versions` keyspace's memtable cap (fjall's default is 64 MiB). Its entries are small
/// (about 50 bytes), so 64 MiB held half a million of them: a skiplist that deep made each
/// insert a dozen cache misses, and a SET's `versions` entry cost more CPU than its 1 KiB value
/// (`benches/storage_set.rs`). Applies to keyspaces created from now on; fjall keeps an existing
/// keyspace's setting.
pub const VERSIONS_MEMTABLE_BYTES: u64 = 4 << 20;

/// The node's persistent key-value store.
pub struct Storage {
    db: Database,
    data: Keyspace,
    /// `token ++ key` → `version ++ flag ++ size`.
    versions: Keyspace,
    durability: Durability,
    /// Tombstones older than this many µs are dropped (`u64::MAX`: kept forever).
    grace_us: AtomicU64,
    /// Serialises version check + write per key stripe so concurrent writers cannot interleave
    /// (in an `Arc` each, so a flush scope can hold one past the call, [`crate::staged`]).
    stripes: Vec<Arc<parking_lot::Mutex<()>>>,
    /// The committer of `sync` durability (`None` with `buffer`, where a flush to the OS is
    /// cheap enough to do on the writer's thread).
    group: Option<crate::commit::GroupCommit>,
    /// Newest records of recent keys, kept exact under the stripe locks (`row_cache.rs`).
    rows: Arc<RowCache>,
    /// Whether the engine has refused writes since it opened (`disk.rs`).
    disk: crate::disk::DiskState,
}

/// The engine's files at one moment ([`Storage::disk`]).
#[derive(Clone, Debug, PartialEq)]
pub struct DiskUsage {
    /// Bytes of every file: journals and every keyspace's tables.
    pub bytes: Option<u64>,
    /// Bytes of the write-ahead journals.
    pub journal_bytes: Option<u64>,
    /// Journal files.
    pub journals: usize,
    /// Table (sorted segment) files of the values and of the token-ordered versions.
    pub tables: [(&'static str, usize); 2],
    /// Compactions the engine finished since the node started.
    pub compactions: usize,
    /// About how many values it holds ([`Storage::approximate_keys`]).
    pub keys: usize,
}

/// What [`Storage::admit`] lets through: the version and value to store, and whether it is an
/// expired delete.
type Admitted<'a> = (u64, Option<Cow<'a, [u8]>>, bool);

/// A write to store: its version and value (`None`: a delete).
type Write<'a> = (u64, Option<Cow<'a, [u8]>>);

/// Whether an applied write is durable yet (see [`Storage::apply`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// Not applied: a newer version was stored.
    Stale,
    /// Applied and durable per the configured policy.
    Durable,
    /// Applied; durable once [`Storage::when_durable`] says so (`sync` durability).
    Committed,
}

const META_VALUE: u8 = 0;
const META_TOMBSTONE: u8 = 1;
/// A value with an expiry: its record also holds the expiry (u64 LE, Unix ms) after the size.
const META_EXPIRING: u8 = 2;

fn stripe_of(key: &[u8]) -> usize {
    (crate::key_hash(key) % STRIPES as u64) as usize
}

/// `key`'s entry name in the `versions` keyspace: its token first.
fn versions_key(key: &[u8]) -> Result<Vec<u8>, StorageError> {
    let key = engine_key(key)?;
    let mut out = Vec::with_capacity(8 + key.len());
    out.extend_from_slice(&crate::token(key).to_be_bytes());
    out.extend_from_slice(key);
    Ok(out)
}

/// A `versions` record: (version, tombstone, size); a value past its expiry counts as a
/// tombstone (it reads as absent, and is dropped like one after the grace).
fn parse_meta(key_len: usize, m: &[u8]) -> Result<(u64, bool, u64), StorageError> {
    let corrupt = || StorageError::Corrupt(key_len);
    let word = |at: usize| -> Result<u64, StorageError> {
        Ok(u64::from_le_bytes(m.get(at..at + 8).ok_or_else(corrupt)?.try_into().map_err(|_| corrupt())?))
    };
    let (version, flag, size) = (word(0)?, *m.get(8).ok_or_else(corrupt)?, word(9)?);
    let expired = flag == META_EXPIRING && word(17)? <= crate::expiry::now_ms();
    Ok((version, flag == META_TOMBSTONE || expired, size))
}

/// The `versions` record of a write of `value` (`None`: a delete) at `version`.
fn meta_record(version: u64, value: Option<&[u8]>) -> Vec<u8> {
    let mut meta = Vec::with_capacity(25);
    meta.extend_from_slice(&version.to_le_bytes());
    let expires = value.and_then(crate::expiry::expires);
    meta.push(match (value, expires) {
        (None, _) => META_TOMBSTONE,
        (Some(_), None) => META_VALUE,
        (Some(_), Some(_)) => META_EXPIRING,
    });
    meta.extend_from_slice(&(value.map_or(0, |v| v.len() as u64)).to_le_bytes());
    if let Some(at) = expires {
        meta.extend_from_slice(&at.to_le_bytes());
    }
    meta
}

/// The version a data record (`version ++ value`) starts with.
fn record_version(key_len: usize, rec: &[u8]) -> Result<u64, StorageError> {
    let head = rec.get(0..8).ok_or(StorageError::Corrupt(key_len))?;
    Ok(u64::from_le_bytes(head.try_into().map_err(|_| StorageError::Corrupt(key_len))?))
}

/// What a read of `row` returns: an expired value reads as absent, with its version (like a
/// tombstone).
fn versioned(key_len: usize, row: &Row) -> Result<Versioned, StorageError> {
    let Some(rec) = &row.record else { return Ok(Versioned { version: row.version, value: None }) };
    debug_assert_eq!(record_version(key_len, rec).ok(), Some(row.version), "a row's version is its record's");
    let value = &rec[8..];
    let live = !crate::expiry::expired_now(value);
    Ok(Versioned { version: row.version, value: live.then(|| value.to_vec()) })
}

/// Microseconds since the Unix epoch.
fn now_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

impl Storage {
    /// Open (or create) the database under `dir`, with the engine's default block cache.
    pub fn open(dir: &Path, durability: Durability) -> Result<Storage, StorageError> {
        Storage::open_with_cache(dir, durability, None)
    }

    /// Open (or create) the database under `dir`, with a block cache of `cache_bytes` if set.
    pub fn open_with_cache(
        dir: &Path,
        durability: Durability,
        cache_bytes: Option<u64>,
    ) -> Result<Storage, StorageError> {
        // Manual persistence: the replica decides when the journal reaches the disk (before the ack).
        let mut builder = Database::builder(dir).manual_journal_persist(true).worker_threads(ENGINE_WORKERS);
        if let Some(bytes) = cache_bytes {
            builder = builder.cache_size(bytes);
        }
        let db = builder.open()?;
        let data = db.keyspace("data", || {
            KeyspaceCreateOptions::default()
                .with_kv_separation(Some(KvSeparationOptions::default().separation_threshold(4096)))
        })?;
        let versions =
            db.keyspace("versions", || KeyspaceCreateOptions::default().max_memtable_size(VERSIONS_MEMTABLE_BYTES))?;
        migrate_meta(&db, &versions)?;
        Ok(Storage {
            data,
            versions,
            durability,
            grace_us: AtomicU64::new(u64::MAX),
            stripes: (0..STRIPES).map(|_| Arc::new(parking_lot::Mutex::new(()))).collect(),
            group: match durability {
                Durability::Sync => {
                    Some(crate::commit::GroupCommit::start(db.clone(), dir).map_err(fjall::Error::from)?)
                }
                Durability::Buffer => None,
            },
            rows: Arc::new(RowCache::new(0)),
            disk: Default::default(),
            db,
        })
    }

    /// Keep up to `bytes` of recent rows in memory in front of the engine (0: off).
    pub fn with_row_cache(mut self, bytes: u64) -> Storage {
        self.rows = Arc::new(RowCache::new(bytes));
        self
    }

    /// The row cache's counters.
    pub fn row_cache(&self) -> RowCacheStats {
        self.rows.stats()
    }

    /// Lock `key`'s stripe. A thread waits for a stripe only after committing the writes its
    /// flush scope staged, which releases every stripe it held: so no two threads wait on each
    /// other (and none on itself).
    fn lock_stripe(&self, key: &[u8]) -> parking_lot::MutexGuard<'_, ()> {
        let stripe = &self.stripes[stripe_of(key)];
        stripe.try_lock().unwrap_or_else(|| {
            crate::flush_scope::commit_staged();
            stripe.lock()
        })
    }

    /// Make this thread's flush scope hold `key`'s stripe for a staged write, as
    /// [`Storage::lock_stripe`] does; a key already staged is committed first (one batch cannot
    /// order two writes of a key). False with no scope open.
    fn hold_stripe(&self, key: &[u8]) -> bool {
        let index = stripe_of(key);
        let stripe = &self.stripes[index];
        let held = self.in_scope(|s| {
            if s.has(key) {
                return false;
            }
            if !s.holds(index) {
                let Some(guard) = stripe.try_lock_arc() else { return false };
                s.hold(index, guard);
            }
            true
        });
        match held {
            None => false,
            Some(true) => true,
            Some(false) => {
                crate::flush_scope::commit_staged();
                let guard = stripe.lock_arc();
                self.in_scope(|s| s.hold(index, guard)).is_some()
            }
        }
    }

    /// Run `f` on this thread's flush scope's staged writes to this database (`None`: no scope).
    fn in_scope<R>(&self, f: impl FnOnce(&mut crate::staged::Staged) -> R) -> Option<R> {
        let make = || crate::staged::Staged::new(&self.db, self.rows.clone(), self.group.as_ref().map(|g| g.acks()));
        crate::flush_scope::staged(self.id(), make, f)
    }

    /// This storage's identity while it lives (flush scopes keep their state per database).
    fn id(&self) -> usize {
        self as *const Storage as usize
    }

    /// Drop tombstones older than `grace` (by their version's physical time) from now on.
    pub fn set_gc_grace(&self, grace: std::time::Duration) {
        self.grace_us.store(grace.as_micros().min(u64::MAX as u128 - 1) as u64, Ordering::Relaxed);
    }

    /// Versions below this are of tombstones to drop (0: none).
    pub fn gc_cutoff(&self) -> u64 {
        match self.grace_us.load(Ordering::Relaxed) {
            u64::MAX => 0,
            grace => crate::hlc::first_version_at(now_us().saturating_sub(grace)),
        }
    }

    /// (version, tombstone, size) of `key`'s newest write, if any.
    fn meta(&self, key: &[u8]) -> Result<Option<(u64, bool, u64)>, StorageError> {
        match self.versions.get(versions_key(key)?)? {
            Some(m) => Ok(Some(parse_meta(key.len(), &m)?)),
            None => Ok(None),
        }
    }

    /// Size in bytes and version of the value under `key`, without reading it.
    pub fn size_of(&self, key: &[u8]) -> Result<Option<(u64, u64)>, StorageError> {
        if let Some(row) = self.rows.peek(engine_key(key)?) {
            let read = versioned(key.len(), &row)?;
            return Ok(read.value.map(|v| (v.len() as u64, read.version)));
        }
        Ok(self.meta(key)?.and_then(|(version, tombstone, size)| (!tombstone).then_some((size, version))))
    }

    /// The version of `key`'s newest write (0: none); the caller holds its stripe lock, so a
    /// cached row is storage's own.
    fn meta_version(&self, key: &[u8]) -> Result<u64, StorageError> {
        if let Some(row) = self.rows.peek(key) {
            return Ok(row.version);
        }
        Ok(self.meta(key)?.map_or(0, |m| m.0))
    }

    /// Read `key` with its version: from the row cache, or from the engine under the key's
    /// stripe lock (so no write can slip between the read and the cache's copy of it).
    pub fn get(&self, key: &[u8]) -> Result<Versioned, StorageError> {
        let key = engine_key(key)?;
        if let Some(row) = self.rows.get(key) {
            return versioned(key.len(), &row);
        }
        let _guard = self.lock_stripe(key);
        let row = match self.data.get(key)? {
            Some(rec) => Row { version: record_version(key.len(), &rec)?, record: Some(rec) },
            // absent: a tombstone may still carry a version (matters when merging replicas);
            // straight to the engine, the row cache was just missed
            None => Row { version: self.meta(key)?.map_or(0, |m| m.0), record: None },
        };
        let read = versioned(key.len(), &row)?;
        self.rows.put(key, row);
        Ok(read)
    }

    /// Apply a write (`None` deletes) if `version` is newer than the stored one; durable per the
    /// configured policy before returning. Returns whether it was applied. A delete (or an
    /// already expired value) older than the tombstone grace removes the key without leaving a
    /// tombstone.
    pub fn put(&self, key: &[u8], version: u64, value: Option<&[u8]>) -> Result<bool, StorageError> {
        match self.commit_now(key, version, value)? {
            Applied::Stale => Ok(false),
            Applied::Durable => Ok(true),
            Applied::Committed => {
                self.wait_durable()?;
                Ok(true)
            }
        }
    }

    /// [`Storage::put`] without waiting for a `sync` durability's fsync, nor, inside a flush
    /// scope ([`crate::flush_scope`]), for a `buffer` durability's commit and flush (the write
    /// is staged, [`crate::staged`]): [`Applied::Committed`] then asks the caller to acknowledge
    /// through [`Storage::when_durable`], so the thread that wrote is free meanwhile and one
    /// sync or flush covers every write made meanwhile.
    pub fn apply(&self, key: &[u8], version: u64, value: Option<&[u8]>) -> Result<Applied, StorageError> {
        if crate::flush_scope::active() {
            self.stage(key, version, value)
        } else {
            self.commit_now(key, version, value)
        }
    }

    /// A write committed here and now, under its stripe's lock.
    fn commit_now(&self, key: &[u8], version: u64, value: Option<&[u8]>) -> Result<Applied, StorageError> {
        let vkey = versions_key(key)?;
        let guard = self.lock_stripe(key);
        let Some((version, value, expired)) = self.admit(key, version, value)? else { return Ok(Applied::Stale) };
        let mut batch = self.batch();
        self.write_into(&mut batch, key, vkey, version, value.as_deref(), expired);
        if let Err(e) = batch.commit() {
            self.rows.remove(key);
            return Err(e.into());
        }
        drop(guard);
        Ok(if self.group.is_some() { Applied::Committed } else { Applied::Durable })
    }

    /// A write in a flush scope: staged in the scope's batch, its stripe held until
    /// that batch commits ([`crate::staged`]).
    fn stage(&self, key: &[u8], version: u64, value: Option<&[u8]>) -> Result<Applied, StorageError> {
        let vkey = versions_key(key)?;
        assert!(self.hold_stripe(key), "staged only inside a flush scope");
        let Some((version, value, expired)) = self.admit(key, version, value)? else { return Ok(Applied::Stale) };
        let bytes = key.len() + value.as_ref().map_or(0, |v| v.len());
        let value = value.as_deref();
        let full = self.in_scope(|s| s.stage(key, bytes, |b| self.write_into(b, key, vkey, version, value, expired)));
        if full.expect("inside a flush scope") {
            crate::flush_scope::commit_staged();
        }
        Ok(Applied::Committed)
    }

    /// Whether a write of `key` at `version` applies (`None`: a newer version is stored, or it
    /// would leave nothing), and if so the (version, value) to store — the write's own, or, when
    /// a counter record is involved, what [`crate::counter::resolve`] makes of it and the stored
    /// record — and whether it is an expired delete (older than the tombstone grace: it removes
    /// the key without leaving a tombstone). The caller holds the stripe.
    fn admit<'a>(
        &self,
        key: &[u8],
        version: u64,
        value: Option<&'a [u8]>,
    ) -> Result<Option<Admitted<'a>>, StorageError> {
        let stored = self.meta_version(key)?;
        let (version, value) = if stored < version && !value.is_some_and(crate::counter::is_counter) {
            (version, value.map(Cow::Borrowed))
        } else {
            match self.resolve_counter(key, stored, version, value)? {
                Some(resolved) => resolved,
                None => return Ok(None),
            }
        };
        let dead = value.as_deref().is_none_or(crate::expiry::expired_now);
        let expired = dead && version < self.gc_cutoff();
        // an expired delete of nothing: the tombstone would only be dropped again
        Ok((!expired || stored != 0).then_some((version, value, expired)))
    }

    /// The slow path of [`Storage::admit`]: a counter record arrives, or a write older than the
    /// stored version does (it still wins over a counter whose base epoch it is newer than).
    /// Reads the stored record only if it can be a counter; `None`: nothing to store.
    fn resolve_counter<'a>(
        &self,
        key: &[u8],
        stored: u64,
        version: u64,
        value: Option<&'a [u8]>,
    ) -> Result<Option<Write<'a>>, StorageError> {
        let incoming_counter = value.is_some_and(crate::counter::is_counter);
        let record = self.small_record(key)?;
        let held = record.as_ref().map(|r| &r[8..]);
        if !incoming_counter && !held.is_some_and(crate::counter::is_counter) {
            return Ok(None); // plain over plain: last writer wins, and this one is older
        }
        let corrupt = |e: crate::counter::CounterError| StorageError::Counter(e.to_string());
        let r = crate::counter::resolve((stored, held), (version, value)).map_err(corrupt)?;
        if r.pick == crate::counter::Pick::Stored && r.version == stored {
            return Ok(None);
        }
        Ok(Some(match r.pick {
            crate::counter::Pick::Stored => (r.version, held.map(|h| Cow::Owned(h.to_vec()))),
            crate::counter::Pick::Incoming => (r.version, value.map(Cow::Borrowed)),
            crate::counter::Pick::Merged(m) => (r.version, Some(Cow::Owned(m))),
        }))
    }

    /// `key`'s stored record (`version ++ value`) if it is small enough to be a counter (larger
    /// ones are not read); the caller holds the stripe.
    fn small_record(&self, key: &[u8]) -> Result<Option<Slice>, StorageError> {
        if let Some(row) = self.rows.peek(key) {
            return Ok(row.record.filter(|r| r.len() <= 8 + crate::counter::MAX_BYTES));
        }
        match self.meta(key)? {
            Some((_, false, size)) if size as usize <= crate::counter::MAX_BYTES => Ok(self.data.get(key)?),
            _ => Ok(None),
        }
    }

    /// Put an admitted write in `batch` (its record, or its removal, and its `versions` entry)
    /// and in the row cache; the caller holds the stripe until the batch commits.
    fn write_into(
        &self,
        batch: &mut fjall::OwnedWriteBatch,
        key: &[u8],
        vkey: Vec<u8>,
        version: u64,
        value: Option<&[u8]>,
        expired: bool,
    ) {
        let meta = meta_record(version, value);
        // the record built once, in the engine's own buffer (a Vec would be copied again), and
        // shared with the row cache
        let record = value.filter(|_| !expired).map(|v| Slice::from(ByteView::fused(&version.to_le_bytes(), v)));
        match &record {
            Some(rec) => batch.insert(&self.data, key, rec.clone()),
            None => batch.remove(&self.data, key),
        }
        if expired {
            batch.remove(&self.versions, vkey);
        } else {
            batch.insert(&self.versions, vkey, meta);
        }
        // an expired delete leaves nothing: the key reads as never written
        self.rows.put(key, Row { version: if expired { 0 } else { version }, record });
    }

    /// A write batch; with `buffer` durability its commit also moves the journal to the OS,
    /// under the journal lock the commit holds anyway (a separate flush after it took that lock
    /// a second time, and contended for it: perf showed both under SET load). With `sync` the
    /// committer makes it durable ([`crate::commit`]).
    fn batch(&self) -> fjall::OwnedWriteBatch {
        let batch = self.db.batch();
        match self.durability {
            Durability::Buffer => batch.durability(Some(PersistMode::Buffer)),
            Durability::Sync => batch,
        }
    }

    /// Call `ack` once the write [`Storage::apply`] answered [`Applied::Committed`] for is
    /// durable: at the end of this thread's flush scope if the write was staged there, else on
    /// the committer thread after its sync (`sync`) or at once after a flush (`buffer`); with the
    /// error if that failed.
    pub fn when_durable(&self, ack: impl FnOnce(Result<(), String>) + Send + 'static) {
        let Err(ack) = crate::flush_scope::defer(self.id(), Box::new(ack)) else { return };
        match &self.group {
            Some(g) => g.then(ack),
            None => ack(crate::flush_scope::flush(&self.db)),
        }
    }

    /// Wait for the committer to sync the batch just committed (`sync` durability).
    fn wait_durable(&self) -> Result<(), StorageError> {
        match &self.group {
            Some(g) => g.wait().map_err(StorageError::Sync),
            None => Ok(()),
        }
    }

    /// Hashes ([`crate::key_hash`]) of the keys whose live value is strictly larger than
    /// `threshold` bytes: a scan of the small `versions` keyspace only, so values are never read.
    /// Not a snapshot: writes racing with the scan may or may not be seen.
    pub fn large_keys(&self, threshold: u64) -> Result<Vec<u64>, StorageError> {
        let mut out = Vec::new();
        self.scan(0..=u64::MAX, None, |_, kv, size| {
            if !kv.tombstone && size > threshold {
                out.push(crate::key_hash(&kv.key));
            }
            true
        })?;
        Ok(out)
    }

    /// Visit the keys (tombstones included) whose token is in `tokens`, in token order, after
    /// `after` if given, with their token and value size, until `visit` returns false. Not a
    /// snapshot: writes racing with the scan may or may not be seen.
    pub fn scan(
        &self,
        tokens: RangeInclusive<u64>,
        after: Option<&[u8]>,
        mut visit: impl FnMut(u64, KeyVersion, u64) -> bool,
    ) -> Result<(), StorageError> {
        let (first, last) = (*tokens.start(), *tokens.end());
        let lo = match after.map(versions_key).transpose()? {
            Some(a) if a.as_slice() >= first.to_be_bytes().as_slice() => Bound::Excluded(a),
            _ => Bound::Included(first.to_be_bytes().to_vec()),
        };
        let hi = last.checked_add(1).map_or(Bound::Unbounded, |n| Bound::Excluded(n.to_be_bytes().to_vec()));
        let empty = match (&lo, &hi) {
            (Bound::Excluded(l) | Bound::Included(l), Bound::Excluded(h)) => l >= h,
            _ => false,
        };
        if first > last || empty {
            return Ok(());
        }
        for item in self.versions.range::<Vec<u8>, _>((lo, hi)) {
            let (vkey, m) = item.into_inner()?;
            let (token, key) = vkey.split_at_checked(8).ok_or(StorageError::Corrupt(vkey.len()))?;
            let token = u64::from_be_bytes(token.try_into().map_err(|_| StorageError::Corrupt(vkey.len()))?);
            let (version, tombstone, size) = parse_meta(key.len(), &m)?;
            if !visit(token, KeyVersion { key: key.to_vec(), version, tombstone }, size) {
                break;
            }
        }
        Ok(())
    }

    /// Scan up to `max` keys after `after` (in token order, from the first with `None`) and drop
    /// the tombstones (and expired values) among them whose version is below `cutoff`.
    pub fn purge_tombstones(&self, cutoff: u64, after: Option<&[u8]>, max: usize) -> Result<Purged, StorageError> {
        let mut done = Purged::default();
        let mut expired = Vec::new();
        self.scan(0..=u64::MAX, after, |_, kv, _| {
            done.scanned += 1;
            if kv.tombstone && kv.version < cutoff {
                expired.push(kv.clone());
            }
            done.next = Some(kv.key);
            (done.scanned as usize) < max
        })?;
        if (done.scanned as usize) < max {
            done.next = None;
        }
        for kv in expired {
            let _guard = self.lock_stripe(&kv.key);
            // only if no write replaced the tombstone since the scan
            if matches!(self.meta(&kv.key)?, Some((v, true, _)) if v == kv.version) {
                let mut batch = self.db.batch();
                batch.remove(&self.versions, versions_key(&kv.key)?);
                batch.remove(&self.data, engine_key(&kv.key)?);
                batch.commit()?;
                self.rows.remove(&kv.key);
                done.purged += 1;
            }
        }
        Ok(done)
    }

    /// About how many values the engine holds (its estimate; expired values not yet dropped
    /// included): the metrics endpoint's disk figures (`INFO keyspace` counts the cluster's keys).
    pub fn approximate_keys(&self) -> usize {
        self.data.approximate_len()
    }

    /// What the engine keeps on disk, for the metrics endpoint (`None`: the engine could not
    /// size its journal).
    pub fn disk(&self) -> DiskUsage {
        DiskUsage {
            bytes: self.db.disk_space().ok(),
            journal_bytes: self.db.journal_disk_space().ok(),
            journals: self.db.journal_count(),
            tables: [("data", self.data.table_count()), ("versions", self.versions.table_count())],
            keys: self.approximate_keys(),
            compactions: self.db.compactions_completed(),
        }
    }

    /// A keyspace of its own for another part of the node (hints), in the same journal.
    pub(crate) fn keyspace(&self, name: &str) -> Result<Keyspace, StorageError> {
        Ok(self.db.keyspace(name, KeyspaceCreateOptions::default)?)
    }

    /// Insert (`Some`) or remove (`None`) `key` in `keyspace`, durable per the configured policy
    /// before returning (the same group commit as data writes).
    pub(crate) fn put_in(&self, keyspace: &Keyspace, key: &[u8], value: Option<&[u8]>) -> Result<(), StorageError> {
        let mut batch = self.batch();
        match value {
            Some(v) => batch.insert(keyspace, key, v),
            None => batch.remove(keyspace, key),
        }
        batch.commit()?;
        self.wait_durable()
    }

    /// Whether the engine still takes writes: a flush of its journal buffer, which fails for
    /// good once an I/O error poisoned it (`disk.rs`).
    pub fn check_engine(&self) -> Result<(), String> {
        self.db.persist(PersistMode::Buffer).map_err(|e| e.to_string())
    }

    /// The disk's state as the node's watcher found it.
    pub fn disk_state(&self) -> &crate::disk::DiskState {
        &self.disk
    }

    /// Sync everything (on clean shutdown).
    pub fn flush(&self) -> Result<(), StorageError> {
        self.db.persist(PersistMode::SyncAll)?;
        Ok(())
    }
}

/// Move a `meta` keyspace keyed by bare keys (before tokens led the key) into `versions`, then
/// delete it; a crash halfway leaves `meta` in place and the copy is redone.
fn migrate_meta(db: &Database, versions: &Keyspace) -> Result<(), StorageError> {
    if !db.keyspace_exists("meta") {
        return Ok(());
    }
    let meta = db.keyspace("meta", KeyspaceCreateOptions::default)?;
    let mut batch = db.batch();
    for item in meta.iter() {
        let (key, m) = item.into_inner()?;
        batch.insert(versions, versions_key(&key)?, m.to_vec());
    }
    batch.commit()?;
    db.persist(PersistMode::SyncAll)?;
    db.delete_keyspace(meta)?;
    tracing::info!("storage: the meta keyspace moved to the token-ordered versions keyspace");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row_cache::MAX_ROW_BYTES;

    #[test]
    fn counter_records_merge_and_newer_plain_values_end_them() {
        use crate::counter::{Counter, Shard};
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path(), Durability::Buffer).unwrap().with_row_cache(1 << 20);
        let shard = |node, clock| {
            let mut c = Counter::new(100, 10, 0);
            c.shards.insert(node, Shard { clock, sum: clock as i64 });
            c
        };
        assert!(s.put(b"c", 100, Some(b"10")).unwrap());
        assert!(s.put(b"c", 5000, Some(&shard(1, 3).encode())).unwrap());
        assert!(s.put(b"c", 4000, Some(&shard(2, 2).encode())).unwrap(), "an older version of another shard merges");
        let merged = s.get(b"c").unwrap();
        assert_eq!(merged.version, crate::counter::bump(5000), "the merge is newer than both");
        assert_eq!(Counter::decode(merged.value.as_ref().unwrap()).unwrap().total(), 15);
        assert!(!s.put(b"c", 4000, Some(&shard(2, 2).encode())).unwrap(), "a copy already merged changes nothing");
        assert!(!s.put(b"c", 90, Some(b"1")).unwrap(), "a plain value older than the base loses");
        assert!(s.put(b"c", 150, Some(b"7")).unwrap(), "one newer than the base ends the counter");
        assert_eq!(s.get(b"c").unwrap(), Versioned { version: 150, value: Some(b"7".to_vec()) });
        assert!(!s.put(b"c", 9000, Some(&shard(1, 4).encode())).unwrap(), "an increment on the old base is gone");
        let mut bad = shard(1, 1).encode();
        bad.pop();
        assert!(matches!(s.put(b"c", 9000, Some(&bad)), Err(StorageError::Counter(_))));
    }

    #[test]
    fn versions_win_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = Storage::open(dir.path(), Durability::Sync).unwrap();
            assert_eq!(s.get(b"k").unwrap(), Versioned::default());
            assert!(s.put(b"k", 5, Some(b"five")).unwrap());
            assert!(!s.put(b"k", 4, Some(b"four")).unwrap(), "older version must lose");
            assert_eq!(s.get(b"k").unwrap(), Versioned { version: 5, value: Some(b"five".to_vec()) });
            assert_eq!(s.size_of(b"k").unwrap(), Some((4, 5)));
            let big = vec![7u8; 1 << 20];
            assert!(s.put(b"big", 1, Some(&big)).unwrap());
            assert!(s.put(b"k", 9, None).unwrap());
            assert_eq!(s.get(b"k").unwrap(), Versioned { version: 9, value: None });
            assert!(!s.put(b"k", 8, Some(b"late")).unwrap(), "a tombstone keeps its version");
        }
        let s = Storage::open(dir.path(), Durability::Sync).unwrap();
        assert_eq!(s.get(b"k").unwrap().version, 9);
        assert_eq!(s.get(b"big").unwrap().value.map(|v| v.len()), Some(1 << 20));
        assert_eq!(s.size_of(b"k").unwrap(), None);
        assert_eq!(s.large_keys(4).unwrap(), vec![crate::key_hash(b"big")]);
        assert!(s.put(b"new", 1, Some(b"0123456789")).unwrap());
        assert!(s.put(b"big", 2, Some(b"ok")).unwrap());
        assert_eq!(s.large_keys(4).unwrap(), vec![crate::key_hash(b"new")], "deleted/shrunk keys drop out");
        assert!(s.large_keys(1 << 20).unwrap().is_empty());
    }

    /// The row cache changes no answer: random writes, deletes, expiring values, stale versions
    /// and tombstone purges applied to a store with a small row cache (so rows are evicted too)
    /// and to one without give the same reads, sizes and outcomes at every step.
    #[test]
    fn the_row_cache_answers_exactly_as_the_engine() {
        use rand::{Rng, SeedableRng};
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let plain = Storage::open(a.path(), Durability::Buffer).unwrap();
        let cached = Storage::open(b.path(), Durability::Buffer).unwrap().with_row_cache(16 << 10);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let (ms, now) = (crate::expiry::now_ms(), crate::hlc::first_version_at(now_us()));
        let hour_ago = crate::hlc::first_version_at(now_us() - 3_600_000_000);
        for s in [&plain, &cached] {
            s.set_gc_grace(std::time::Duration::from_secs(60));
        }
        for step in 0..4_000u64 {
            let key = format!("k{}", rng.random_range(0..40)).into_bytes();
            let version = if rng.random_bool(0.1) { hour_ago + step } else { now + rng.random_range(0..8_000) };
            let value = match rng.random_range(0..6) {
                0 => None,
                1 => Some(crate::expiry::encode(b"e", Some(ms - 1))),
                2 => Some(vec![3; MAX_ROW_BYTES_TEST]),
                _ => Some(vec![rng.random(); rng.random_range(0..600)]),
            };
            match rng.random_range(0..10) {
                0..=4 => {
                    let (x, y) =
                        (plain.put(&key, version, value.as_deref()), cached.put(&key, version, value.as_deref()));
                    assert_eq!(x.unwrap(), y.unwrap(), "step {step}: write outcome");
                }
                5 => {
                    let cutoff = plain.gc_cutoff();
                    let (x, y) =
                        (plain.purge_tombstones(cutoff, None, 100), cached.purge_tombstones(cutoff, None, 100));
                    assert_eq!(x.unwrap(), y.unwrap(), "step {step}: purge");
                }
                _ => {}
            }
            assert_eq!(plain.get(&key).unwrap(), cached.get(&key).unwrap(), "step {step}: read");
            assert_eq!(plain.size_of(&key).unwrap(), cached.size_of(&key).unwrap(), "step {step}: size");
        }
        let stats = cached.row_cache();
        assert!(stats.hits > 1_000 && stats.misses > 100, "both paths were taken: {stats:?}");
        assert!(stats.bytes <= 16 << 10);
    }

    /// Above the row cache's limit, so large rows take the engine path.
    const MAX_ROW_BYTES_TEST: usize = MAX_ROW_BYTES + 1;

    /// Writers racing readers on a few keys: every read returns a version at least as new as
    /// the newest write acknowledged before it started, and at the end the cache agrees with
    /// the engine reopened from disk.
    #[test]
    fn racing_reads_never_go_back_behind_acknowledged_writes() {
        let dir = tempfile::tempdir().unwrap();
        let s = Arc::new(Storage::open(dir.path(), Durability::Buffer).unwrap().with_row_cache(1 << 20));
        let acked: Arc<Vec<AtomicU64>> = Arc::new((0..4).map(|_| AtomicU64::new(0)).collect());
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let (s, acked) = (s.clone(), acked.clone());
                std::thread::spawn(move || {
                    for i in 1..=3_000u64 {
                        let (k, version) = ((i % 4) as usize, i * 2 + w);
                        let value = (i % 7 != 0).then(|| version.to_le_bytes().to_vec());
                        s.put(format!("k{k}").as_bytes(), version, value.as_deref()).unwrap();
                        acked[k].fetch_max(version, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        let reader = {
            let (s, acked) = (s.clone(), acked.clone());
            std::thread::spawn(move || {
                for i in 0..20_000usize {
                    let k = i % 4;
                    let floor = acked[k].load(Ordering::SeqCst);
                    let got = s.get(format!("k{k}").as_bytes()).unwrap();
                    assert!(got.version >= floor, "read {} behind an acknowledged {floor}", got.version);
                }
            })
        };
        for t in writers.into_iter().chain([reader]) {
            t.join().unwrap();
        }
        let cached: Vec<_> = (0..4).map(|k| s.get(format!("k{k}").as_bytes()).unwrap()).collect();
        drop(s);
        let reopened = Storage::open(dir.path(), Durability::Buffer).unwrap();
        let fresh: Vec<_> = (0..4).map(|k| reopened.get(format!("k{k}").as_bytes()).unwrap()).collect();
        assert_eq!(cached, fresh);
    }

    #[test]
    fn disk_usage_counts_the_journal_and_every_table() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path(), Durability::Sync).unwrap();
        for i in 0..64u64 {
            assert!(s.put(&i.to_be_bytes(), 1, Some(&[7u8; 4096])).unwrap());
        }
        let journal = s.disk().journal_bytes.unwrap();
        assert!(journal >= 64 * 4096, "the journal (preallocated) holds the writes: {journal}");
        s.data.rotate_memtable_and_wait().unwrap();
        let used = s.disk();
        assert_eq!(used.tables, [("data", 1), ("versions", 0)], "the flushed memtable is one table");
        let (total, journal) = (used.bytes.unwrap(), used.journal_bytes.unwrap());
        assert!(total > journal, "the table (compressed) on top of the journal: {total} vs {journal}");
        assert!(used.journals >= 1);
        assert_eq!(s.disk().keys, 64);
    }

    #[test]
    fn scans_follow_token_order_and_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path(), Durability::Buffer).unwrap();
        let keys: Vec<Vec<u8>> = (0..50).map(|i| format!("key{i}").into_bytes()).collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(s.put(k, 1 + i as u64, (i % 5 != 0).then_some(b"v")).unwrap());
        }
        let scan = |tokens: RangeInclusive<u64>, after: Option<&[u8]>| {
            let mut out = Vec::new();
            s.scan(tokens, after, |t, kv, _| {
                out.push((t, kv));
                true
            })
            .unwrap();
            out
        };
        let all = scan(0..=u64::MAX, None);
        assert_eq!(all.len(), 50);
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "token order");
        assert!(all.iter().all(|(t, kv)| *t == crate::token(&kv.key)));
        assert_eq!(all.iter().filter(|(_, kv)| kv.tombstone).count(), 10);
        let (lo, hi) = (all[10].0, all[19].0);
        assert_eq!(scan(lo..=hi, None).len(), 10);
        assert_eq!(scan(lo..=hi, Some(&all[14].1.key)).len(), 5, "after a key");
        assert!(scan(lo..=hi, Some(&all[30].1.key)).is_empty(), "after the range's end");
        assert_eq!(scan(lo..=hi, Some(&all[2].1.key)).len(), 10, "a cursor before the range is ignored");
        assert!(scan(hi..=lo, None).is_empty());
    }

    #[test]
    fn tombstones_past_their_grace_are_dropped_once() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path(), Durability::Buffer).unwrap();
        let now = crate::hlc::first_version_at(now_us());
        let hour_ago = crate::hlc::first_version_at(now_us() - 3_600_000_000);
        assert!(s.put(b"gone", hour_ago, Some(b"v")).unwrap());
        assert!(s.put(b"gone", hour_ago + 1, None).unwrap());
        assert!(s.put(b"kept", now, None).unwrap());
        assert!(s.put(b"live", hour_ago, Some(b"v")).unwrap());
        assert_eq!(s.gc_cutoff(), 0, "no grace set: tombstones are kept");
        s.set_gc_grace(std::time::Duration::from_secs(60));
        let cutoff = s.gc_cutoff();
        assert!(hour_ago < cutoff && cutoff < now);
        let first = s.purge_tombstones(cutoff, None, 1).unwrap();
        assert_eq!((first.scanned, first.next.is_some()), (1, true), "one key a page");
        let rest = s.purge_tombstones(cutoff, first.next.as_deref(), 100).unwrap();
        assert_eq!((first.scanned + rest.scanned, first.purged + rest.purged, rest.next), (3, 1, None));
        assert_eq!(s.get(b"gone").unwrap(), Versioned::default(), "the old tombstone is gone");
        assert_eq!(s.get(b"kept").unwrap(), Versioned { version: now, value: None });
        assert_eq!(s.get(b"live").unwrap().value, Some(b"v".to_vec()));
        // a tombstone already past its grace is not stored again, but still deletes older values
        assert!(!s.put(b"gone", hour_ago + 1, None).unwrap());
        assert_eq!(s.get(b"gone").unwrap(), Versioned::default());
        assert!(s.put(b"live", hour_ago + 2, None).unwrap());
        assert_eq!(s.get(b"live").unwrap(), Versioned::default());
        assert_eq!(s.purge_tombstones(cutoff, None, 100).unwrap().purged, 0);
    }

    #[test]
    fn expired_values_read_as_absent_and_are_purged_after_the_grace() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path(), Durability::Buffer).unwrap();
        let (now, ms) = (crate::hlc::first_version_at(now_us()), crate::expiry::now_ms());
        let hour_ago = crate::hlc::first_version_at(now_us() - 3_600_000_000);
        let later = crate::expiry::encode(b"later", Some(ms + 60_000));
        assert!(s.put(b"later", now, Some(&later)).unwrap());
        assert_eq!(s.get(b"later").unwrap().value, Some(later.clone()), "the envelope is kept for copies");
        assert!(s.put(b"gone", now, Some(&crate::expiry::encode(b"v", Some(ms - 1)))).unwrap());
        assert_eq!(s.get(b"gone").unwrap(), Versioned { version: now, value: None });
        assert_eq!(s.size_of(b"gone").unwrap(), None);
        assert!(s.put(b"old", hour_ago, Some(&crate::expiry::encode(b"v", Some(ms - 1)))).unwrap());
        s.set_gc_grace(std::time::Duration::from_secs(60));
        let done = s.purge_tombstones(s.gc_cutoff(), None, 100).unwrap();
        assert_eq!(done.purged, 1, "only the one past its grace");
        assert_eq!(s.get(b"old").unwrap(), Versioned::default());
        assert_eq!(s.get(b"gone").unwrap().version, now, "kept as a tombstone until its grace");
        assert!(!s.put(b"old", hour_ago, Some(&crate::expiry::encode(b"v", Some(ms - 1)))).unwrap());
        drop(s);
        let s = Storage::open(dir.path(), Durability::Buffer).unwrap();
        assert_eq!(s.get(b"later").unwrap().value, Some(later), "expiry survives a reopen");
    }

    #[test]
    fn a_meta_keyspace_of_bare_keys_moves_to_versions() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Database::builder(dir.path()).open().unwrap();
            let meta = db.keyspace("meta", KeyspaceCreateOptions::default).unwrap();
            let mut rec = 7u64.to_le_bytes().to_vec();
            rec.push(META_VALUE);
            rec.extend_from_slice(&3u64.to_le_bytes());
            meta.insert(b"old", rec).unwrap();
            db.persist(PersistMode::SyncAll).unwrap();
        }
        let s = Storage::open(dir.path(), Durability::Sync).unwrap();
        assert_eq!(s.size_of(b"old").unwrap(), Some((3, 7)));
        assert!(!s.db.keyspace_exists("meta"), "the old keyspace is deleted");
        assert!(!s.put(b"old", 6, Some(b"older")).unwrap(), "its version still wins");
    }

    #[test]
    fn keys_the_engine_would_panic_on_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path(), Durability::Buffer).unwrap();
        let long = vec![b'k'; ENGINE_MAX_KEY as usize + 1];
        assert!(matches!(s.put(&long, 1, Some(b"v")), Err(StorageError::KeyTooLong(65_528))));
        assert!(matches!(s.get(&long), Err(StorageError::KeyTooLong(_))));
        assert!(matches!(s.size_of(&long), Err(StorageError::KeyTooLong(_))));
        let longest = vec![b'k'; ENGINE_MAX_KEY as usize];
        assert!(s.put(&longest, 1, Some(b"v")).unwrap());
        assert_eq!(s.get(&longest).unwrap().value, Some(b"v".to_vec()));
        assert!(matches!(s.put(b"", 1, Some(b"v")), Err(StorageError::EmptyKey)));
        assert!(matches!(s.get(b""), Err(StorageError::EmptyKey)));
        assert!(matches!(s.size_of(b""), Err(StorageError::EmptyKey)));
    }
}
