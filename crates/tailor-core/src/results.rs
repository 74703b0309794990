//! The one results shape every engine produces and the report consumes.

use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the results format.
pub const RESULTS_FORMAT: u32 = 1;

/// All runs of one experiment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Format version ([`RESULTS_FORMAT`]).
    pub format: u32,
    /// Tailor version that produced it.
    pub tailor_version: String,
    /// Experiment name (preset or spec file stem).
    pub experiment: String,
    /// "sim" or "live".
    pub engine: String,
    /// The effective spec, as TOML text, for reproducibility.
    pub spec: String,
    /// One entry per selector × local policy × swept value × seed.
    pub runs: Vec<RunResult>,
}

/// One run: one strategy pair on one parameter point and seed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Replica selector name.
    pub selector: String,
    /// Local policy name.
    pub local: String,
    /// Swept parameters of this run (dotted path → value as text).
    pub params: BTreeMap<String, String>,
    /// Seed.
    pub seed: u64,
    /// Requests measured (after warm-up).
    pub requests: u64,
    /// Read latency in milliseconds.
    pub read_latency_ms: Summary,
    /// Write latency in milliseconds (absent when the run had no writes).
    pub write_latency_ms: Option<Summary>,
    /// Read stretch (latency / processing time).
    pub stretch: Summary,
    /// Completed requests per second (measured window).
    pub throughput_rps: f64,
    /// Offered requests per second.
    pub offered_rps: f64,
    /// Reads for small values that waited in a queue behind a large one.
    pub small_behind_large: u64,
    /// Requests that ended in error or timeout (live runs).
    pub errors: u64,
    /// Read latency CDF as (ms, fraction) points.
    pub latency_cdf: Vec<(f64, f64)>,
    /// Stretch CDF as (stretch, fraction) points.
    pub stretch_cdf: Vec<(f64, f64)>,
    /// Requests served per server per window (`window_ms`), one row per server.
    pub per_server_load: Vec<Vec<u32>>,
    /// Window of `per_server_load`, in milliseconds.
    pub window_ms: f64,
    /// Max weighted flow of the run and its ratio to the lower bound, when computed.
    pub bound: Option<BoundRatio>,
    /// Engine-specific extra figures (e.g. cache hit ratio).
    pub extra: BTreeMap<String, f64>,
    /// Live runs: whether the load generator kept its schedule cleanly enough for the figures to
    /// be trusted (tailor-bench's `validity` rule). Absent for simulator runs, which are valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid: Option<bool>,
    /// Live runs: why the run is invalid, one sentence with the figures per broken rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid_reasons: Vec<String>,
    /// Runs with injected faults: how fast reads moved off each faulty server and how the tail
    /// recovered. Absent without faults, so older results keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<Failover>,
    /// Simulator runs: time-averaged queue figures per server over the measured window, so
    /// Little's law can be checked. Absent for live runs (and older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queueing: Option<Queueing>,
    /// Runs with multi-gets (`workload.multiget`): the whole requests' latency beside the
    /// per-key reads above. Absent otherwise, so older results keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiget: Option<MultigetResult>,
    /// Runs that cancel hedged reads' losing copies (`cluster.hedge_cancel`): how many and the
    /// work saved. Absent otherwise, so older results keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedge_cancel: Option<HedgeCancel>,
}

/// What cancelling hedged reads' losing copies did in a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HedgeCancel {
    /// Losing copies the coordinators asked to cancel.
    pub requested: u64,
    /// Of those, copies still queued at their replica and dropped there (the others ran).
    pub cancelled: u64,
    /// The dropped copies' estimated processing time, in ms: replica work saved.
    pub work_saved_ms: f64,
}

impl RunResult {
    /// False only for a live run judged invalid; simulator runs and older files count as valid.
    pub fn is_valid(&self) -> bool {
        self.valid != Some(false)
    }

    /// Measured requests that timed out (a live run's `extra.timeouts`; 0 in the simulator).
    pub fn timeouts(&self) -> u64 {
        self.extra.get("timeouts").copied().unwrap_or(0.0) as u64
    }

    /// Measured requests that ended in an error other than a timeout.
    pub fn errors_besides_timeouts(&self) -> u64 {
        self.errors.saturating_sub(self.timeouts())
    }
}

/// Multi-get figures of a run: a multi-get's latency runs from its release to its last key's
/// answer; its straggler gap is that last key's latency minus the median of its keys'.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MultigetResult {
    /// Keys per multi-get: the fewest of the run's multi-gets when their count varies.
    pub keys: u32,
    /// The most keys of the run's multi-gets when their count varies (`workload.multiget.keys_max`);
    /// 0 when every multi-get read `keys`.
    #[serde(default, skip_serializing_if = "crate::is_default")]
    pub keys_max: u32,
    /// Multi-gets measured (released after the warm-up and fully answered).
    pub requests: u64,
    /// Multi-gets with a key that failed (refused or timed out everywhere): not in the latency.
    pub failed: u64,
    /// Multi-get latency in milliseconds.
    pub latency_ms: Summary,
    /// Straggler gap in milliseconds.
    pub straggler_gap_ms: Summary,
}

/// The fewest and the most keys of a run's multi-gets, as both engines count them for
/// [`MultigetResult::keys`] and [`MultigetResult::keys_max`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyCounts {
    fewest: u32,
    most: u32,
}

impl Default for KeyCounts {
    fn default() -> Self {
        KeyCounts { fewest: u32::MAX, most: 0 }
    }
}

impl KeyCounts {
    /// A multi-get of `keys` keys.
    pub fn saw(&mut self, keys: u32) {
        (self.fewest, self.most) = (self.fewest.min(keys), self.most.max(keys));
    }

    /// `(keys, keys_max)`: the fewest, and the most when the count varied (else 0).
    pub fn fields(self) -> (u32, u32) {
        (self.fewest.min(self.most), if self.most > self.fewest { self.most } else { 0 })
    }
}

/// A run's distance from the lower bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BoundRatio {
    /// "flow" or "stretch" weighting, as text.
    pub weighting: Weighting,
    /// Requests in the bounded instance.
    pub requests: u64,
    /// The run's max weighted flow on those requests.
    pub max_weighted_flow: f64,
    /// The lower bound on it.
    pub bound: f64,
    /// `max_weighted_flow / bound`.
    pub ratio: f64,
    /// Solver wall time in seconds.
    pub solve_seconds: f64,
}

/// Which weights the bound uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Weighting {
    /// `w = 1`: max flow time.
    #[default]
    Flow,
    /// `w = 1/p`: max stretch.
    Stretch,
}

/// Failover figures of a run with faults (`cluster.faults`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Failover {
    /// Sliding window of the measures, in ms.
    pub window_ms: f64,
    /// One entry per fault, in the spec's order.
    pub faults: Vec<FaultOutcome>,
    /// Reads per window of `window_ms` across the run (first seed of each combination only, to
    /// bound file size), for the timeline plot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<TimelineWindow>,
}

/// How one fault went.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultOutcome {
    /// "slow", "gray", "down" or "slow-coordinator".
    pub kind: String,
    /// The faulty server.
    pub server: u32,
    /// The fault's interval from the start of the run, in ms.
    pub start_ms: f64,
    /// Its end, in ms.
    pub end_ms: f64,
    /// From the fault's start until the server's share of reads sent stays below the threshold
    /// to the fault's end, in ms (`None`: it never did).
    pub shed_ms: Option<f64>,
    /// From the fault's start until the sliding p99 stays within the factor of its pre-fault
    /// value, in ms (`None`: it never did before the next fault or the end of the run).
    pub recover_ms: Option<f64>,
    /// p99 of reads released after the warm-up and before the fault, in ms.
    pub p99_before_ms: f64,
    /// p99 of reads released during the fault, in ms (a failed read counts its time to failing).
    pub p99_during_ms: f64,
    /// The server's share of reads sent during the fault (a slow coordinator's: its share of the
    /// reads clients sent).
    pub share_during: f64,
    /// Copies sent during the fault that timed out at their coordinator.
    pub timeouts: u64,
    /// Reads released during the fault that failed (no replica answered).
    pub failed: u64,
}

/// One window of a run's timeline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineWindow {
    /// Start of the window, in ms.
    pub start_ms: f64,
    /// Reads released in it.
    pub reads: u64,
    /// p99 of those reads, in ms (0 with none).
    pub p99_ms: f64,
    /// Share of the reads sent in it that each server got.
    pub share: Vec<f64>,
}

/// Queue figures of a run, measured from the warm-up's end to the workload's last arrival (the
/// throughput's window), so the drain after the last arrival does not dilute them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Queueing {
    /// Length of the measured window, in ms.
    pub window_ms: f64,
    /// One entry per server, by server id.
    pub servers: Vec<ServerQueueing>,
}

/// One server's queue figures over the measured window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerQueueing {
    /// Time-averaged number of jobs waiting in the local queue.
    pub mean_waiting: f64,
    /// Time-averaged number of jobs waiting or in service.
    pub mean_in_system: f64,
    /// Busy worker-time over workers × window.
    pub utilisation: f64,
    /// Jobs admitted in the window.
    pub arrivals: u64,
    /// Jobs completed in the window.
    pub completions: u64,
    /// Mean time from admission to completion of the jobs admitted in the window, in ms.
    pub mean_sojourn_ms: f64,
}

impl Queueing {
    /// The highest utilisation of any server (0 with none).
    pub fn max_utilisation(&self) -> f64 {
        self.servers.iter().map(|s| s.utilisation).fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::KeyCounts;

    #[test]
    fn key_counts_give_the_fewest_and_the_most_only_when_they_differ() {
        let mut fixed = KeyCounts::default();
        (0..3).for_each(|_| fixed.saw(8));
        assert_eq!(fixed.fields(), (8, 0));
        let mut varying = KeyCounts::default();
        [5, 1, 40, 7].into_iter().for_each(|k| varying.saw(k));
        assert_eq!(varying.fields(), (1, 40));
        assert_eq!(KeyCounts::default().fields(), (0, 0), "none seen");
    }
}
