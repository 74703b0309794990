//! The replica side of Héron's size oracle: the large-key Bloom index, its rebuild thread, and
//! the deltas and generation a reply's facts carry.

use super::Replica;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tailor_core::facts::Feedback;
use tailor_core::model::NodeId;
use tailor_core::oracle::bloom::LargeKeyIndex;
use tailor_core::time::Nanos;

/// Largest generation gap a replica closes when a peer is ahead; a bigger one is treated as a
/// one-step rebuild (such a gap means a corrupt or foreign peer, not a missed rebuild).
const MAX_CATCH_UP: u32 = 1024;

/// The replica side of Héron's size oracle.
///
/// Choices:
/// - Rebuilds run in a background thread ([`Replica::start_bloom_rebuilds`]) and take the live
///   large keys from a scan of the storage engine's small metadata keyspace (no value is read),
///   so keys whose value was deleted or shrunk drop out and no extra memory tracks them. The
///   scan runs without any lock; large writes applied during it are logged and added to the new
///   filter; the Bloom lock is held only for the inserts (about 10 hash-and-set steps per key).
///   Requests never wait for it; only the filling of a reply's Bloom fields may.
/// - Generations stay aligned across the cluster: a replica that sees a peer at a newer
///   generation (in any feedback its coordinator receives) rebuilds up to it at once, and
///   restarts its own interval. A restarted node (back at generation 0) thereby rejoins the
///   current generation within a heartbeat, and a rebuild anywhere triggers one everywhere, so
///   coordinators switch generations quickly. At start the filter (generation 0) is seeded from
///   the same storage scan.
/// - Bits handed to a reply are gone from the cursor even if the reply is lost (a timeout); they
///   come back at the next rebuild. Failed requests carry no facts, so they take no bits.
pub(super) struct BloomState {
    pub(super) index: LargeKeyIndex,
    /// Large keys written while a rebuild scans storage (`Some` during the scan).
    pub(super) during_scan: Option<Vec<u64>>,
    /// Newest generation seen at a peer; above ours means catch up now.
    pub(super) target: u32,
    /// When the last rebuild finished (replica clock).
    pub(super) last_rebuild: Nanos,
}

impl Replica {
    pub(super) fn lock_bloom<'a>(&self, b: &'a Mutex<BloomState>) -> std::sync::MutexGuard<'a, BloomState> {
        b.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Put the Bloom delta for `receiver` and the generation into `fb`.
    pub(super) fn fill_bloom(&self, receiver: Option<NodeId>, fb: &mut Feedback) {
        let Some(b) = &self.bloom else { return };
        let mut g = self.lock_bloom(b);
        match receiver {
            Some(r) => g.index.fill_feedback(r, fb),
            None => fb.bloom_generation = g.index.generation(),
        }
    }

    /// An applied write stored `size` bytes under `key_hash`: remember the key if it is large.
    pub(super) fn record_write(&self, key_hash: u64, size: u64) {
        let Some(b) = &self.bloom else { return };
        let mut g = self.lock_bloom(b);
        if g.index.record_write(key_hash, size) {
            if let Some(log) = g.during_scan.as_mut() {
                log.push(key_hash);
            }
        }
    }

    /// The Bloom index's generation, if this replica keeps one.
    pub fn bloom_generation(&self) -> Option<u32> {
        self.bloom.as_ref().map(|_| self.generation.load(Ordering::Relaxed))
    }

    /// Whether this replica's own filter says `key_hash` is large (`None` without an index).
    pub fn bloom_contains(&self, key_hash: u64) -> Option<bool> {
        self.bloom.as_ref().map(|b| self.lock_bloom(b).index.contains(key_hash))
    }

    /// A peer's facts showed its Bloom generation `generation`: catch up if it is ahead.
    pub fn observe_generation(&self, generation: u32) {
        let Some(b) = &self.bloom else { return };
        if generation <= self.generation.load(Ordering::Relaxed) {
            return;
        }
        let mut g = self.lock_bloom(b);
        if generation > g.target {
            g.target = generation;
            self.bloom_cv.notify_all();
        }
    }

    /// Ask the rebuild thread for a rebuild now (generation g+1).
    pub fn request_rebuild(&self) {
        let Some(b) = &self.bloom else { return };
        let mut g = self.lock_bloom(b);
        g.target = g.target.max(g.index.generation().wrapping_add(1));
        self.bloom_cv.notify_all();
    }

    /// Start the background thread that seeds the Bloom index from storage, then rebuilds it
    /// every `every` (none = only on request or to catch up with peers). No-op without an index.
    pub fn start_bloom_rebuilds(self: &Arc<Self>, every: Option<Duration>) {
        if self.bloom.is_none() {
            return;
        }
        let me = self.clone();
        let every = every.map(|d| d.as_nanos() as Nanos);
        let spawned = std::thread::Builder::new().name("tailor-bloom".into()).spawn(move || me.bloom_loop(every));
        if let Err(e) = spawned {
            tracing::warn!("cannot start the Bloom rebuild thread: {e}");
        }
    }

    pub(super) fn bloom_loop(self: Arc<Self>, every: Option<Nanos>) {
        let Some(b) = &self.bloom else { return };
        self.seed_bloom(b);
        loop {
            let mut g = self.lock_bloom(b);
            loop {
                if self.shutdown.load(Ordering::Relaxed) {
                    return;
                }
                let now = self.now();
                let due = every.map(|e| g.last_rebuild.saturating_add(e));
                if g.target > g.index.generation() || due.is_some_and(|d| d <= now) {
                    break;
                }
                let wait = due.map_or(Duration::from_secs(3600), |d| Duration::from_nanos(d - now));
                g = self.bloom_cv.wait_timeout(g, wait).map(|r| r.0).unwrap_or_else(|p| p.into_inner().0);
            }
            drop(g);
            self.rebuild_bloom(b);
        }
    }

    /// Put every large key already in storage into the generation-0 filter (after a restart).
    pub(super) fn seed_bloom(&self, b: &Mutex<BloomState>) {
        let threshold = self.lock_bloom(b).index.threshold();
        match self.storage.large_keys(threshold) {
            Ok(keys) => {
                let mut g = self.lock_bloom(b);
                for k in keys {
                    g.index.record_write(k, u64::MAX);
                }
                g.last_rebuild = self.now();
            }
            Err(e) => tracing::warn!("Bloom seeding skipped: {e}"),
        }
    }

    /// Rebuild the filter from a storage scan, to the target generation or g+1.
    pub(super) fn rebuild_bloom(&self, b: &Mutex<BloomState>) {
        let threshold = {
            let mut g = self.lock_bloom(b);
            g.during_scan = Some(Vec::new());
            g.index.threshold()
        };
        let scanned = self.storage.large_keys(threshold);
        let mut g = self.lock_bloom(b);
        let extra = g.during_scan.take().unwrap_or_default();
        let now = self.now();
        let keys = match scanned {
            Ok(k) => k,
            Err(e) => {
                tracing::warn!("Bloom rebuild skipped: {e}");
                g.last_rebuild = now;
                g.target = g.index.generation();
                return;
            }
        };
        let gen = g.index.generation();
        let mut steps = g.target.saturating_sub(gen).max(1);
        if steps > MAX_CATCH_UP {
            tracing::warn!(gen, target = g.target, "Bloom generation gap too large; rebuilding one step");
            g.target = gen;
            steps = 1;
        }
        // skipped generations are empty: coordinators only keep the newest complete one
        for _ in 1..steps {
            g.index.rebuild(std::iter::empty());
        }
        g.index.rebuild(keys.into_iter().chain(extra));
        g.last_rebuild = now;
        self.generation.store(g.index.generation(), Ordering::Relaxed);
        tracing::debug!(generation = g.index.generation(), "Bloom filter rebuilt");
    }
}
