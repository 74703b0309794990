//! Write versions from a hybrid logical clock (Kulkarni et al., 2014), one per node.
//!
//! A version is `time << 8 | node id`: `time` is in microseconds since the Unix epoch and never
//! runs backwards, never falls behind a version the node has seen, and steps by 1 µs (the
//! logical counter, folded into the time) when the wall clock has not moved. So:
//! - a node whose clock runs behind still writes above what it has read (a read-then-write
//!   from one client is ordered), and two versions are never equal (the node id breaks ties);
//! - a version far ahead of this node's wall clock (a peer whose clock runs fast, or a forged
//!   or corrupt frame such as version 2^64 − 1, which would make a key unwritable) is refused
//!   rather than stored: [`Hlc::admit`] accepts versions at most `max_offset` ahead.
//!
//! Last-writer-wins by these versions is the store's conflict rule; a write that loses to a
//! newer version is acknowledged (Cassandra's rule: it was overwritten, not dropped), and with
//! versions bounded by the clock offset that newer version is a real, later write.
//!
//! Skewed clocks (Cassandra trusts NTP and silently lets a fast node's writes win, a slow node's
//! lose; this node measures instead): every heartbeat's answer carries the peer's wall clock, and
//! the pinging node keeps each peer's latest offset (measured against the round trip's midpoint;
//! a sample whose round trip exceeds `max_offset` is too coarse and is dropped). The median
//! offset over the cluster (this node counting as 0) is what the cluster's clock says:
//! - when it is further than `max_offset` from this node's clock (either middle value, with an
//!   even count: two nodes cannot tell which of them is wrong, so both stop), the node is
//!   **skewed**: it stops coordinating writes ([`Hlc::skew`]), since its versions would either
//!   win over later writes (ahead) or lose to earlier ones (behind), and says so in its log, its
//!   metrics and INFO (it still serves reads, so its health stays as its workers say);
//! - admission ([`Hlc::admit`]) measures "ahead" against the corrected clock (its wall clock plus
//!   the median offset), so a node whose clock runs behind still takes its peers' copies
//!   instead of refusing each of them as from the future.
//!
//! - versions are issued on that corrected clock too ([`Hlc::cluster_us`]), so a node whose
//!   clock is off by less than `max_offset` orders its writes with its peers' by real time, up
//!   to the offset's measurement error, instead of by its own clock's error.
//!
//! Every internode frame also carries the sender's HLC time (`internode/seal.rs`), and the
//! receiver moves past it (when admissible), as HLC's message rule asks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Bits of a version below its time: the writer's node id.
const NODE_BITS: u32 = 8;

/// Microseconds since the Unix epoch when `version` was issued (its physical time).
pub fn micros_of(version: u64) -> u64 {
    version >> NODE_BITS
}

/// The first version a clock can issue at `micros` since the Unix epoch: every version issued
/// earlier is below it (tombstone grace cutoffs).
pub fn first_version_at(micros: u64) -> u64 {
    micros.min(u64::MAX >> NODE_BITS) << NODE_BITS
}

/// A version more than the allowed clock offset ahead of this node's clock.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "version {version} is {ahead_ms} ms ahead of this node's clock (more than the {max_ms} ms max_clock_offset_ms)"
)]
pub struct FromTheFuture {
    /// The refused version.
    pub version: u64,
    /// How far ahead of the local wall clock its time is, in ms.
    pub ahead_ms: u64,
    /// The allowed offset, in ms.
    pub max_ms: u64,
}

/// This node's clock is too far from its peers' to issue write versions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this node's clock is {} ms {} its peers' (median; more than the {max_ms} ms max_clock_offset_ms): it does not coordinate writes until its clock is fixed; write through another node",
    offset_ms.unsigned_abs(),
    if *offset_ms > 0 { "ahead of" } else { "behind" }
)]
pub struct Skewed {
    /// This node's clock minus the cluster's (median), in ms: positive when ahead.
    pub offset_ms: i64,
    /// The allowed offset, in ms.
    pub max_ms: u64,
}

/// One node's hybrid logical clock.
#[derive(Debug)]
pub struct Hlc {
    node: u64,
    max_offset: Duration,
    /// Time part of the newest version issued or seen, in µs.
    last: AtomicU64,
    wall: fn() -> u64,
    /// Each peer's latest measured offset: its wall clock minus this node's, in µs.
    offsets: Mutex<HashMap<u32, i64>>,
    /// What admission adds to this node's wall clock: the cluster's median offset (the middle
    /// value nearer 0 with an even count), in µs.
    correction_us: AtomicI64,
    /// This node's clock minus the cluster's, in µs (the middle value further from 0).
    offset_us: AtomicI64,
    /// Whether `offset_us` is beyond `max_offset`.
    skewed: AtomicBool,
    /// Whether write versions wait for a first offset sample (a node with peers: see
    /// [`Hlc::awaiting_comparison`]).
    expects_peers: bool,
    /// Whether some offset was sampled.
    measured: AtomicBool,
}

/// Microseconds since the Unix epoch on the system clock.
fn system_micros() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

impl Hlc {
    /// The clock of node `node` (its low 8 bits go in every version), refusing versions more than
    /// `max_offset` ahead.
    pub fn new(node: u32, max_offset: Duration) -> Self {
        Self::with_wall(node, max_offset, system_micros)
    }

    /// The same on a given wall clock (tests skew it).
    pub fn with_wall(node: u32, max_offset: Duration, wall: fn() -> u64) -> Self {
        Hlc {
            node: node as u64 & 0xff,
            max_offset,
            last: AtomicU64::new(0),
            wall,
            offsets: Mutex::default(),
            correction_us: AtomicI64::new(0),
            offset_us: AtomicI64::new(0),
            skewed: AtomicBool::new(false),
            expects_peers: false,
            measured: AtomicBool::new(false),
        }
    }

    /// The same clock for a node with peers: until it compared its clock with one, it cannot
    /// tell whether its versions are sane ([`Hlc::awaiting_comparison`]).
    pub fn expecting_peers(mut self) -> Self {
        self.expects_peers = true;
        self
    }

    /// Whether this node has peers and has not yet measured its clock against any: a node
    /// started with a skewed clock would otherwise apply its first writes to its own replica
    /// with versions its peers refuse, and spread them once real time caught up.
    pub fn awaiting_comparison(&self) -> bool {
        self.expects_peers && !self.measured.load(Ordering::Relaxed)
    }

    /// This node's wall clock, in µs since the Unix epoch.
    pub fn wall_us(&self) -> u64 {
        (self.wall)()
    }

    /// The cluster's time as this node measures it, in µs since the Unix epoch: its wall clock
    /// plus the median offset of its peers' (the correction). Versions are issued on it, so a
    /// node whose clock runs ahead within `max_offset` no longer issues versions that beat
    /// later writes through its peers, nor one behind versions that lose to earlier ones: what
    /// remains is the offset's measurement error (half a heartbeat's round trip).
    pub fn cluster_us(&self) -> u64 {
        self.wall_us().saturating_add_signed(self.correction_us.load(Ordering::Relaxed))
    }

    /// The clock's time now, in µs, without issuing a version (carried in pings and pongs).
    pub fn peek_us(&self) -> u64 {
        self.last.load(Ordering::Relaxed).max(self.cluster_us())
    }

    /// Move past a peer's HLC time `micros` carried in a ping or pong (when admissible).
    pub fn observe_micros(&self, micros: u64) {
        self.observe(first_version_at(micros));
    }

    /// A heartbeat to `peer` left at `sent_us` and its answer, stamped `peer_wall_us` by the
    /// peer's wall clock, came back at `received_us` (both on this node's wall clock).
    pub fn sample(&self, peer: u32, peer_wall_us: u64, sent_us: u64, received_us: u64) {
        let rtt = received_us.saturating_sub(sent_us);
        if rtt > self.max_offset.as_micros() as u64 {
            return; // the midpoint's error could be half the bound: too coarse to judge by
        }
        let midpoint = sent_us + rtt / 2;
        let offset = (peer_wall_us as i128 - midpoint as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        let mut all: Vec<i64> = {
            let mut offsets = self.offsets.lock().unwrap_or_else(|p| p.into_inner());
            offsets.insert(peer, offset);
            offsets.values().copied().collect()
        };
        self.measured.store(true, Ordering::Relaxed);
        all.push(0);
        all.sort_unstable();
        let (lo, hi) = (all[(all.len() - 1) / 2], all[all.len() / 2]);
        let (near, far) = if lo.unsigned_abs() <= hi.unsigned_abs() { (lo, hi) } else { (hi, lo) };
        debug_assert!(near.unsigned_abs() <= far.unsigned_abs());
        self.correction_us.store(near, Ordering::Relaxed);
        self.offset_us.store(-far, Ordering::Relaxed);
        let skewed = far.unsigned_abs() > self.max_offset.as_micros() as u64;
        if self.skewed.swap(skewed, Ordering::Relaxed) != skewed {
            let offset_ms = -far / 1000;
            let max_ms = self.max_offset.as_millis();
            match skewed {
                true => tracing::error!(offset_ms, max_ms, "{}", Skewed { offset_ms, max_ms: max_ms as u64 }),
                false => tracing::warn!(
                    offset_ms,
                    max_ms,
                    "clock back within max_clock_offset_ms of the peers': coordinating writes again"
                ),
            }
        }
    }

    /// Whether this node's clock can judge others' versions: compared with a peer, and not
    /// skewed. A replica that cannot refuses a version from the future as "not now" (its coordinator
    /// keeps a hint) rather than for good, since the slow clock may be its own.
    pub fn trusted(&self) -> bool {
        !self.awaiting_comparison() && !self.skewed.load(Ordering::Relaxed)
    }

    /// This node's clock minus its peers' (median), in ms: positive when ahead.
    pub fn offset_ms(&self) -> i64 {
        self.offset_us.load(Ordering::Relaxed) / 1000
    }

    /// Why this node must not issue write versions now, if it must not.
    pub fn skew(&self) -> Result<(), Skewed> {
        match self.skewed.load(Ordering::Relaxed) {
            false => Ok(()),
            true => Err(Skewed { offset_ms: self.offset_ms(), max_ms: self.max_offset.as_millis() as u64 }),
        }
    }

    /// A new version, above every version this clock issued or saw.
    pub fn now(&self) -> u64 {
        let wall = self.cluster_us();
        let prev = self.last.fetch_max(wall, Ordering::Relaxed);
        let time = if wall > prev { wall } else { self.last.fetch_add(1, Ordering::Relaxed) + 1 };
        (time << NODE_BITS) | self.node
    }

    /// Move past `version`, read from a replica (the next write from here is newer).
    pub fn observe(&self, version: u64) {
        let time = version >> NODE_BITS;
        // already past it (most reads): nothing to move, and no clock to read for the check
        if time <= self.last.load(Ordering::Relaxed) {
            return;
        }
        if self.check(version).is_ok() {
            self.last.fetch_max(time, Ordering::Relaxed);
        }
    }

    /// Accept `version` for a write this node stores, or refuse it as from the future.
    pub fn admit(&self, version: u64) -> Result<(), FromTheFuture> {
        self.check(version)?;
        self.last.fetch_max(version >> NODE_BITS, Ordering::Relaxed);
        Ok(())
    }

    fn check(&self, version: u64) -> Result<(), FromTheFuture> {
        let wall = self.cluster_us();
        let time = version >> NODE_BITS;
        let max_us = self.max_offset.as_micros() as u64;
        if time > wall.saturating_add(max_us) {
            let ahead_ms = (time - wall) / 1000;
            return Err(FromTheFuture { version, ahead_ms, max_ms: max_us / 1000 });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frozen() -> u64 {
        1_000_000_000
    }

    #[test]
    fn versions_increase_on_a_frozen_clock_and_carry_the_node() {
        let c = Hlc::with_wall(3, Duration::from_millis(500), frozen);
        let a = c.now();
        let b = c.now();
        assert!(b > a && a & 0xff == 3 && b >> 8 == (a >> 8) + 1);
    }

    #[test]
    fn physical_time_of_a_version() {
        let c = Hlc::with_wall(7, Duration::from_millis(500), frozen);
        let v = c.now();
        assert_eq!(micros_of(v), frozen());
        assert!(first_version_at(frozen()) <= v && v < first_version_at(frozen() + 1));
        assert_eq!(first_version_at(u64::MAX), u64::MAX >> NODE_BITS << NODE_BITS);
    }

    #[test]
    fn a_clock_behind_writes_above_what_it_read() {
        let c = Hlc::with_wall(1, Duration::from_millis(500), frozen);
        let seen = ((frozen() + 200_000) << 8) | 2;
        c.observe(seen);
        assert!(c.now() > seen, "the next write wins over the value it read");
    }

    #[test]
    fn versions_from_the_future_are_refused_and_not_followed() {
        let c = Hlc::with_wall(1, Duration::from_millis(500), frozen);
        let err = c.admit(u64::MAX).unwrap_err();
        assert_eq!(err.max_ms, 500);
        assert!(err.to_string().contains("max_clock_offset_ms"), "{err}");
        c.observe(u64::MAX);
        assert!(c.now() >> 8 < frozen() + 10, "a bogus version does not drag the clock along");
        assert!(c.admit(((frozen() + 400_000) << 8) | 2).is_ok(), "within the offset");
    }

    /// Offsets measured at this node: peers' wall clock `ahead_ms` ms ahead of `frozen()`, with
    /// a 2 ms round trip.
    fn measured(c: &Hlc, peers: &[(u32, i64)]) {
        for &(peer, ahead_ms) in peers {
            let peer_wall = (frozen() as i64 + ahead_ms * 1000) as u64;
            c.sample(peer, peer_wall, frozen() - 1_000, frozen() + 1_000);
        }
    }

    #[test]
    fn a_node_ahead_of_the_cluster_is_skewed_and_its_own_versions_are_refused() {
        // this node is 30 s ahead: both peers read 30 s behind it
        let c = Hlc::with_wall(0, Duration::from_millis(500), frozen);
        assert!(c.skew().is_ok(), "nothing measured yet");
        measured(&c, &[(1, -30_000), (2, -30_000)]);
        let e = c.skew().unwrap_err();
        assert_eq!((e.offset_ms, e.max_ms), (30_000, 500));
        assert!(e.to_string().contains("30000 ms ahead of its peers'"), "{e}");
        assert!(c.admit(first_version_at(frozen())).is_err(), "its own clock's time is 30 s in the cluster's future");
        measured(&c, &[(1, 0), (2, 0)]);
        assert!(c.skew().is_ok(), "fixed once the offsets are");
    }

    #[test]
    fn a_node_behind_is_skewed_but_takes_its_peers_versions() {
        let c = Hlc::with_wall(0, Duration::from_millis(500), frozen);
        measured(&c, &[(1, 30_000), (2, 30_001)]);
        let e = c.skew().unwrap_err();
        assert_eq!(e.offset_ms, -30_000);
        assert!(e.to_string().contains("behind its peers'"), "{e}");
        let peers_now = first_version_at(frozen() + 30_000_000) | 1;
        assert!(c.admit(peers_now).is_ok(), "a peer's fresh version is not from the future");
        assert!(c.admit(first_version_at(frozen() + 40_000_000)).is_err(), "10 s past the cluster's clock is");
    }

    /// A node 0.2 s ahead (within the bound: not skewed) issues versions on the cluster's
    /// clock, so a write through a peer 0.1 s after one through it still wins (the Jepsen soak's
    /// one stale QUORUM read: before, its versions were 0.2 s in the future, and a peer's write
    /// in the next 0.2 s lost to its earlier one).
    #[test]
    fn a_node_ahead_within_the_bound_issues_versions_on_the_clusters_clock() {
        let ahead = Hlc::with_wall(0, Duration::from_millis(500), frozen);
        measured(&ahead, &[(1, -200), (2, -200)]);
        assert!(ahead.skew().is_ok());
        let v = ahead.now();
        assert_eq!(micros_of(v), frozen() - 200_000, "the cluster's time, not its own");
        assert_eq!(ahead.peek_us(), frozen() - 200_000, "what its frames carry");
        let peer = Hlc::with_wall(1, Duration::from_millis(500), || frozen() - 200_000 + 100_000);
        assert!(peer.now() > v, "a write 0.1 s later through a peer wins");
    }

    #[test]
    fn one_skewed_peer_leaves_the_others_alone_and_two_nodes_cannot_tell() {
        let c = Hlc::with_wall(0, Duration::from_millis(500), frozen);
        measured(&c, &[(1, 30_000), (2, 3)]);
        assert!(c.skew().is_ok(), "the median of 0, 3 ms and 30 s is 3 ms");
        assert!(c.admit(first_version_at(frozen() + 31_000_000)).is_err(), "the fast peer's versions stay refused");
        let two = Hlc::with_wall(0, Duration::from_millis(500), frozen);
        measured(&two, &[(1, 30_000)]);
        assert!(two.skew().is_err(), "either of two nodes may be the wrong one: both stop");
        let coarse = Hlc::with_wall(0, Duration::from_millis(500), frozen);
        coarse.sample(1, frozen() + 30_000_000, frozen() - 400_000, frozen() + 400_000);
        assert!(coarse.skew().is_ok(), "a sample with a round trip above the bound is dropped");
    }
}
