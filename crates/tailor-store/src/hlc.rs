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

use std::sync::atomic::{AtomicU64, Ordering};
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

/// One node's hybrid logical clock.
#[derive(Debug)]
pub struct Hlc {
    node: u64,
    max_offset: Duration,
    /// Time part of the newest version issued or seen, in µs.
    last: AtomicU64,
    wall: fn() -> u64,
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
        Hlc { node: node as u64 & 0xff, max_offset, last: AtomicU64::new(0), wall }
    }

    /// A new version, above every version this clock issued or saw.
    pub fn now(&self) -> u64 {
        let wall = (self.wall)();
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
        let (time, wall) = (version >> NODE_BITS, (self.wall)());
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
}
