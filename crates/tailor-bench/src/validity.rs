//! Whether a live run's figures can be trusted: the one place the rule lives.
//!
//! A live run measures the cluster only while the load generator keeps its open-loop schedule.
//! On a busy host it falls behind (requests leave late), requests time out or fail, or fewer
//! requests complete than were offered; its percentiles then describe the host, not the
//! strategy. Such a run is *invalid*: it is still written, but marked, with one sentence per
//! broken rule, so a table or a report can never pass it off as a result.
//!
//! The rule, on the figures measured after the warm-up:
//! - p99 send lag (intended send time → handed to a connection) above [`MAX_SEND_LAG_MS`], or
//!   above [`MAX_SEND_LAG_SHARE_OF_P99`] of the run's own p99 read latency. Either limit breaks
//!   it: the absolute one catches a generator that is plainly late, the relative one a lag that
//!   is a visible part of the latency being reported even when it is small in absolute terms.
//!   The lag includes waiting for a free connection, which also breaks the open loop; when more
//!   than 1 % of the requests found every connection of their coordinator busy (so the p99 lag
//!   is such a wait), the reason says so: more `--connections`, not a quieter host.
//! - any timeout, or any other error ([`MAX_TIMEOUTS`], [`MAX_ERRORS`]);
//! - achieved rate below [`MIN_ACHIEVED_SHARE`] of the offered rate, both over the measured
//!   window (see [`crate::record::Recorder::fill`]);
//! - nothing offered after the warm-up: there is nothing to judge;
//! - the VM's hypervisor stole more than [`MAX_HOST_STEAL_PCT`] of the CPU time over the run,
//!   or more than [`MAX_HOST_STEAL_SECOND_PCT`] in its worst second ([`crate::host`]): the
//!   figures then describe the neighbours.
//! - a node's threads waited, runnable, more than [`MAX_NODE_CPU_DELAY_MS`] on average for a CPU
//!   each time they were scheduled ([`crate::node_cpu`]): the nodes could not run when they had
//!   work (other processes of the same machine held the CPUs), so the tail is the host's run
//!   queue. Measured on a node that can tell (Tailor's nodes, Cassandra nodes the bench
//!   launched); the host's busy share is recorded beside it.

use tailor_core::results::RunResult;

/// Largest p99 send lag, ms, of a valid run: a few service times of the live presets, far above
/// the sender thread's sleep precision (tens of µs) on an idle host.
pub const MAX_SEND_LAG_MS: f64 = 5.0;

/// Largest p99 send lag of a valid run as a share of its p99 read latency: beyond it the lag is
/// a visible part of the tail being reported.
pub const MAX_SEND_LAG_SHARE_OF_P99: f64 = 0.10;

/// Smallest achieved / offered rate of a valid run. Both rates count the measured window's own
/// requests, so only in-flight requests at the window's end (a latency over a window of
/// seconds, well under 1 %) separate them in a healthy run; 5 % leaves room for that and for
/// short runs.
pub const MIN_ACHIEVED_SHARE: f64 = 0.95;

/// Timeouts a valid run may have after the warm-up: a timed-out request has no latency, so any
/// timeout hides part of the tail.
pub const MAX_TIMEOUTS: u64 = 0;

/// Errors (other than timeouts) a valid run may have after the warm-up: a failed request has no
/// latency either.
pub const MAX_ERRORS: u64 = 0;

/// Largest share of CPU time, percent, a hypervisor may steal over a valid run: a few percent
/// is the background of a shared VM; beyond it the nodes and the generator lose whole slices.
pub const MAX_HOST_STEAL_PCT: f64 = 5.0;

/// Largest steal share, percent, of a valid run's worst second: steal comes in bursts, and a
/// burst is a tail of its own in a run whose p99 is tens of milliseconds.
pub const MAX_HOST_STEAL_SECOND_PCT: f64 = 25.0;

/// Largest mean run-queue wait, ms, of a valid run's worst node each time one of its threads was
/// scheduled in. Measured on this project's 2-core VM with the demo's 3 nodes at 30 % load:
/// 0.023–0.031 ms on a quiet host, 0.05–0.06 ms beside one CPU hog (one core left free, p99
/// unchanged), 0.19–0.23 ms beside two (p99 4× the quiet run's). A tenth of a millisecond sits
/// between: about three times the quiet figure, and half of what two hogs cause.
pub const MAX_NODE_CPU_DELAY_MS: f64 = 0.1;

/// The measured figures the rule looks at.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Figures {
    /// p99 of the send lag of measured requests, ms.
    pub send_lag_p99_ms: f64,
    /// Share of the measured requests that found every connection of their coordinator busy.
    pub starved_share: f64,
    /// p99 read latency, ms.
    pub read_p99_ms: f64,
    /// Measured requests that ended in an error other than a timeout.
    pub errors: u64,
    /// Measured requests that timed out.
    pub timeouts: u64,
    /// Completions per second in the measured window.
    pub achieved_rps: f64,
    /// Intended requests per second in the measured window.
    pub offered_rps: f64,
    /// CPU time stolen by the hypervisor during the run, percent (0 when not measured).
    pub host_steal_pct: f64,
    /// CPU time stolen in the run's worst second, percent (0 when not measured).
    pub host_steal_worst_second_pct: f64,
    /// The worst node's mean run-queue wait per scheduling, ms (0 when not measured).
    pub node_cpu_delay_ms: f64,
    /// The worst node's share of runnable time spent waiting, percent (0 when not measured).
    pub node_cpu_wait_pct: f64,
    /// The host's busy share over the run, percent (0 when not measured).
    pub host_busy_pct: f64,
}

impl Figures {
    /// The figures of a live run as [`crate::record::Recorder::fill`] writes them; a file from
    /// before the window rates existed falls back to its throughput and offered rate.
    pub fn of(r: &RunResult) -> Figures {
        let extra = |k: &str| r.extra.get(k).copied();
        Figures {
            send_lag_p99_ms: extra("send_lag_p99_ms").unwrap_or(0.0),
            starved_share: extra("starved_requests").unwrap_or(0.0) / (r.requests + r.errors).max(1) as f64,
            read_p99_ms: r.read_latency_ms.p99,
            errors: r.errors_besides_timeouts(),
            timeouts: r.timeouts(),
            achieved_rps: extra("window_achieved_rps").unwrap_or(r.throughput_rps),
            offered_rps: extra("window_offered_rps").unwrap_or(r.offered_rps),
            host_steal_pct: extra("host_steal_pct").unwrap_or(0.0),
            host_steal_worst_second_pct: extra("host_steal_worst_second_pct").unwrap_or(0.0),
            node_cpu_delay_ms: extra("node_cpu_delay_ms").unwrap_or(0.0),
            node_cpu_wait_pct: extra("node_cpu_wait_pct").unwrap_or(0.0),
            host_busy_pct: extra("host_busy_pct").unwrap_or(0.0),
        }
    }
}

/// The rule's answer: valid when no reason was found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// One human sentence with the figures per broken rule.
    pub reasons: Vec<String>,
}

impl Verdict {
    /// Whether the run can be trusted.
    pub fn is_valid(&self) -> bool {
        self.reasons.is_empty()
    }
}

/// Judge a run's figures (see the module docs for the rule).
pub fn judge(f: &Figures) -> Verdict {
    let reasons = [
        lag_reason(f),
        count_reason(f.timeouts, MAX_TIMEOUTS, "timeout"),
        count_reason(f.errors, MAX_ERRORS, "error"),
        rate_reason(f),
        steal_reason(f),
        node_cpu_reason(f),
    ]
    .into_iter()
    .flatten()
    .collect();
    Verdict { reasons }
}

/// Judge `r` and record the verdict in it (`valid`, `invalid_reasons`).
pub fn apply(r: &mut RunResult) {
    let verdict = judge(&Figures::of(r));
    r.valid = Some(verdict.is_valid());
    r.invalid_reasons = verdict.reasons;
}

fn steal_reason(f: &Figures) -> Option<String> {
    let mut parts = Vec::new();
    if f.host_steal_pct > MAX_HOST_STEAL_PCT {
        parts.push(format!("{:.0} % of the CPU time over the run (> {MAX_HOST_STEAL_PCT} %)", f.host_steal_pct));
    }
    if f.host_steal_worst_second_pct > MAX_HOST_STEAL_SECOND_PCT {
        let worst = f.host_steal_worst_second_pct;
        parts.push(format!("{worst:.0} % in its worst second (> {MAX_HOST_STEAL_SECOND_PCT} %)"));
    }
    (!parts.is_empty()).then(|| format!("the VM's hypervisor took {}", parts.join(" and ")))
}

fn node_cpu_reason(f: &Figures) -> Option<String> {
    (f.node_cpu_delay_ms > MAX_NODE_CPU_DELAY_MS).then(|| {
        format!(
            "nodes starved of CPU: the worst node's threads waited {:.2} ms for a CPU each time they ran (> {MAX_NODE_CPU_DELAY_MS} ms), {:.0} % of their runnable time, with the host {:.0} % busy",
            f.node_cpu_delay_ms, f.node_cpu_wait_pct, f.host_busy_pct
        )
    })
}

fn lag_reason(f: &Figures) -> Option<String> {
    let relative = MAX_SEND_LAG_SHARE_OF_P99 * f.read_p99_ms;
    let mut limits = Vec::new();
    if f.send_lag_p99_ms > MAX_SEND_LAG_MS {
        limits.push(format!("{MAX_SEND_LAG_MS} ms"));
    }
    // a run without a read latency (writes only) has no tail for the lag to distort
    if f.read_p99_ms > 0.0 && f.send_lag_p99_ms > relative {
        limits.push(format!(
            "{:.0} % of the p99 read latency, {}",
            MAX_SEND_LAG_SHARE_OF_P99 * 100.0,
            duration_text(relative)
        ));
    }
    // more than the 1 % beyond the p99 waited for a connection: too few of them, not the host
    let why = if f.starved_share > 0.01 {
        format!(
            ": {:.1} % of the requests found every connection busy and waited for one; rerun with more --connections",
            f.starved_share * 100.0
        )
    } else {
        String::new()
    };
    (!limits.is_empty()).then(|| {
        format!(
            "load generator {} behind schedule (send lag p99 {:.1} ms > {}){why}",
            duration_text(f.send_lag_p99_ms),
            f.send_lag_p99_ms,
            limits.join(" and > ")
        )
    })
}

fn count_reason(n: u64, max: u64, what: &str) -> Option<String> {
    (n > max).then(|| format!("{n} {what}{} after the warm-up", if n == 1 { "" } else { "s" }))
}

fn rate_reason(f: &Figures) -> Option<String> {
    if f.offered_rps <= 0.0 {
        return Some("no request was offered after the warm-up".into());
    }
    let share = f.achieved_rps / f.offered_rps;
    (share < MIN_ACHIEVED_SHARE).then(|| {
        format!(
            "achieved {:.0} req/s of {:.0} offered ({:.0} % < {:.0} %)",
            f.achieved_rps,
            f.offered_rps,
            share * 100.0,
            MIN_ACHIEVED_SHARE * 100.0
        )
    })
}

/// `ms` as "1.9 s" from a second up, else "12.3 ms".
fn duration_text(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clean run: 0.2 ms lag, 20 ms p99, 1000 of 1000 req/s.
    fn clean() -> Figures {
        Figures {
            send_lag_p99_ms: 0.2,
            starved_share: 0.0,
            read_p99_ms: 20.0,
            errors: 0,
            timeouts: 0,
            achieved_rps: 1000.0,
            offered_rps: 1000.0,
            host_steal_pct: 1.0,
            host_steal_worst_second_pct: 3.0,
            node_cpu_delay_ms: 0.03,
            node_cpu_wait_pct: 40.0,
            host_busy_pct: 15.0,
        }
    }

    #[test]
    fn a_clean_run_is_valid() {
        assert_eq!(judge(&clean()), Verdict::default());
        assert!(judge(&clean()).is_valid());
    }

    #[test]
    fn send_lag_limits_are_exclusive_at_the_edge() {
        // p99 100 ms: the 5 ms absolute limit is the tighter one
        let at = Figures { send_lag_p99_ms: 5.0, read_p99_ms: 100.0, ..clean() };
        assert!(judge(&at).is_valid());
        let over = Figures { send_lag_p99_ms: 5.01, ..at };
        let v = judge(&over);
        assert_eq!(v.reasons.len(), 1);
        assert!(v.reasons[0].contains("send lag p99 5.0 ms > 5 ms"), "{v:?}");
        // p99 20 ms: 10 % of it, 2 ms, is the tighter one
        let at = Figures { send_lag_p99_ms: 2.0, ..clean() };
        assert!(judge(&at).is_valid());
        let v = judge(&Figures { send_lag_p99_ms: 2.1, ..clean() });
        assert_eq!(
            v.reasons,
            ["load generator 2.1 ms behind schedule (send lag p99 2.1 ms > 10 % of the p99 read latency, 2.0 ms)"]
        );
    }

    #[test]
    fn a_generator_seconds_behind_names_both_limits() {
        let v = judge(&Figures { send_lag_p99_ms: 1900.0, read_p99_ms: 2000.0, ..clean() });
        assert_eq!(
            v.reasons,
            ["load generator 1.9 s behind schedule (send lag p99 1900.0 ms > 5 ms and > 10 % of the p99 read latency, 200.0 ms)"]
        );
    }

    /// A lag spent queued for a connection is blamed on the connections: a fault scenario that
    /// holds a third of the reads for a second fills 256 connections on a quiet host.
    #[test]
    fn a_lag_spent_waiting_for_connections_says_so() {
        let v = judge(&Figures { send_lag_p99_ms: 200.0, starved_share: 0.25, read_p99_ms: 1000.0, ..clean() });
        assert_eq!(v.reasons.len(), 1);
        assert!(v.reasons[0].contains("25.0 % of the requests found every connection busy"), "{v:?}");
        assert!(v.reasons[0].contains("--connections"), "{v:?}");
        let host = judge(&Figures { send_lag_p99_ms: 200.0, starved_share: 0.005, read_p99_ms: 1000.0, ..clean() });
        assert!(!host.reasons[0].contains("connection"), "{host:?}");
    }

    #[test]
    fn one_timeout_or_error_is_enough() {
        let v = judge(&Figures { timeouts: 1, ..clean() });
        assert_eq!(v.reasons, ["1 timeout after the warm-up"]);
        let v = judge(&Figures { timeouts: 408, errors: 2, ..clean() });
        assert_eq!(v.reasons, ["408 timeouts after the warm-up", "2 errors after the warm-up"]);
    }

    #[test]
    fn a_hypervisor_stealing_the_cpu_invalidates_the_run() {
        assert!(judge(&Figures { host_steal_pct: 5.0, host_steal_worst_second_pct: 25.0, ..clean() }).is_valid());
        let v = judge(&Figures { host_steal_pct: 45.2, host_steal_worst_second_pct: 60.0, ..clean() });
        let both =
            "the VM's hypervisor took 45 % of the CPU time over the run (> 5 %) and 60 % in its worst second (> 25 %)";
        assert_eq!(v.reasons, [both]);
        let v = judge(&Figures { host_steal_worst_second_pct: 30.0, ..clean() });
        assert_eq!(v.reasons, ["the VM's hypervisor took 30 % in its worst second (> 25 %)"]);
    }

    #[test]
    fn nodes_waiting_for_a_cpu_invalidate_the_run() {
        // a node that never waits, and one at the limit, are fine whatever the host's busy share
        assert!(judge(&Figures { node_cpu_delay_ms: 0.0, host_busy_pct: 100.0, ..clean() }).is_valid());
        assert!(judge(&Figures { node_cpu_delay_ms: MAX_NODE_CPU_DELAY_MS, ..clean() }).is_valid());
        let v = judge(&Figures { node_cpu_delay_ms: 0.23, node_cpu_wait_pct: 79.2, host_busy_pct: 99.8, ..clean() });
        assert_eq!(
            v.reasons,
            ["nodes starved of CPU: the worst node's threads waited 0.23 ms for a CPU each time they ran (> 0.1 ms), 79 % of their runnable time, with the host 100 % busy"]
        );
        // the figures come from the run's extra; a run without them (an older file, a target
        // that cannot tell) is judged without this rule
        let mut r = RunResult { offered_rps: 100.0, throughput_rps: 100.0, ..RunResult::default() };
        r.extra.insert("timeouts".into(), 0.0);
        apply(&mut r);
        assert_eq!(r.valid, Some(true), "{:?}", r.invalid_reasons);
        r.extra.insert("node_cpu_delay_ms".into(), 0.5);
        apply(&mut r);
        assert!(r.invalid_reasons[0].starts_with("nodes starved of CPU"), "{:?}", r.invalid_reasons);
    }

    #[test]
    fn achieved_rate_tolerance_is_five_percent() {
        assert!(judge(&Figures { achieved_rps: 950.0, ..clean() }).is_valid());
        let v = judge(&Figures { achieved_rps: 812.0, ..clean() });
        assert_eq!(v.reasons, ["achieved 812 req/s of 1000 offered (81 % < 95 %)"]);
        // a run that measured nothing cannot be judged valid
        let v = judge(&Figures { achieved_rps: 0.0, offered_rps: 0.0, ..clean() });
        assert_eq!(v.reasons, ["no request was offered after the warm-up"]);
    }

    #[test]
    fn apply_reads_the_recorded_figures_and_separates_timeouts_from_errors() {
        let mut r = RunResult { errors: 5, offered_rps: 1000.0, throughput_rps: 990.0, ..RunResult::default() };
        r.read_latency_ms.p99 = 50.0;
        for (k, v) in [
            ("timeouts", 3.0),
            ("send_lag_p99_ms", 1.0),
            ("window_offered_rps", 1000.0),
            ("window_achieved_rps", 700.0),
        ] {
            r.extra.insert(k.into(), v);
        }
        let f = Figures::of(&r);
        assert_eq!((f.errors, f.timeouts, f.achieved_rps), (2, 3, 700.0));
        apply(&mut r);
        assert_eq!(r.valid, Some(false));
        assert_eq!(r.invalid_reasons.len(), 3, "{:?}", r.invalid_reasons);
        assert!(!r.is_valid());
        // without the window rates (an older file) the throughput stands in for them
        r.extra.retain(|k, _| !k.starts_with("window_"));
        r.errors = 0;
        r.extra.insert("timeouts".into(), 0.0);
        apply(&mut r);
        assert_eq!(r.valid, Some(true), "{:?}", r.invalid_reasons);
    }
}
