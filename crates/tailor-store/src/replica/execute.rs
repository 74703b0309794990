//! Running one job against the storage engine with the emulation knobs (stalls, the emulated
//! service time, on a device the jobs in service share when `shared_capacity` is set): its
//! outcome, service time and end, counted in the metrics.

use super::{Outcome, Replica, Work};
use crate::storage::Applied;
use std::sync::atomic::Ordering;
use tailor_core::time::Nanos;

/// How often a hanging worker looks whether the gray failure is over.
const HANG_POLL: std::time::Duration = std::time::Duration::from_millis(1);

/// What running a job gave: its outcome, its service time and when it ended (the replica's
/// clock), and whether its reply waits for the committer's sync.
pub(super) struct Executed {
    pub(super) outcome: Result<Outcome, String>,
    pub(super) service: Nanos,
    pub(super) end: Nanos,
    pub(super) committed: bool,
}

impl Replica {
    /// Execute one job against storage with the emulation knobs; its outcome, service time and
    /// end, and whether the reply must wait for the committer's sync ([`Applied::Committed`]).
    pub(super) fn execute(&self, work: Work, key_hash: u64, size: u64) -> Executed {
        let inject = |n: u64| n.checked_sub(1);
        if self.inject_panics.fetch_update(Ordering::Relaxed, Ordering::Relaxed, inject).is_ok() {
            panic!("injected worker panic (TAILOR.SET debug_panic_next)");
        }
        if let Some(d) = self.emulation.stall_remaining(|| self.now()) {
            std::thread::sleep(d);
        }
        while self.emulation.hanging() {
            std::thread::sleep(HANG_POLL);
        }
        let start = self.now();
        let is_write = matches!(work, Work::Write { .. });
        let mut committed = false;
        let outcome = match work {
            Work::Read { key } => self.storage.get(&key).map(|v| {
                self.sizes.put(key_hash, v.value.as_ref().map_or(0, |v| v.len() as u64));
                Outcome::Read(v)
            }),
            Work::Write { key, version, value } => {
                self.storage.apply(&key, version, value.as_deref().map(Vec::as_slice)).map(|a| {
                    committed = a == Applied::Committed;
                    Outcome::Written(a != Applied::Stale)
                })
            }
        };
        if is_write && matches!(outcome, Ok(Outcome::Written(true))) {
            self.sizes.put(key_hash, size);
            // before the reply's facts are filled, so the ack carries this key's new bits
            self.record_write(key_hash, size);
        }
        let mut end = self.now();
        let extra = self.emulation.extra_delay(start, end.saturating_sub(start), size);
        if !extra.is_zero() {
            match self.emulation.shared_capacity() {
                0 => std::thread::sleep(extra),
                units => self.device.run(units, || self.now(), extra.as_nanos() as Nanos),
            }
            end = self.now();
        }
        let service = end.saturating_sub(start).max(1);
        match &outcome {
            Ok(Outcome::Read(_)) => self.metrics.reads_served.fetch_add(1, Ordering::Relaxed),
            Ok(Outcome::Written(_)) => self.metrics.writes_served.fetch_add(1, Ordering::Relaxed),
            Err(_) => 0,
        };
        self.metrics.service(service);
        Executed { outcome: outcome.map_err(|e| e.to_string()), service, end, committed }
    }
}
