//! Whether the nodes under test could run when they had work: the scheduler's run-queue delay
//! of each node process over a run (Linux's schedstat: time on a CPU, time runnable but waiting
//! for one, times scheduled in).
//!
//! Hypervisor steal ([`crate::host`]) misses the commonest way a live run goes wrong on a shared
//! machine: other processes of the same guest (a build, a second experiment, a CPU hog) keep the
//! CPUs busy, every node thread that wakes for a request queues behind them, and the measured
//! tail is the host's run queue. The send lag misses it too when the generator itself is not
//! starved. A node's own counters see it directly, and a node that is idle or deliberately
//! stopped (`SIGSTOP` slow-node emulation) is not runnable, so it adds no wait.
//!
//! Two sources, one figure: Tailor's nodes report their counters in `INFO cpu` (so remote nodes
//! are measured too); processes the bench launched itself (Cassandra) are read from
//! `/proc/<pid>/task/*/schedstat` directly.

/// A process's scheduler counters, summed over its threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Schedstat {
    /// Nanoseconds on a CPU.
    pub run_ns: u64,
    /// Nanoseconds runnable, waiting for a CPU.
    pub wait_ns: u64,
    /// Times a thread was scheduled in.
    pub slices: u64,
}

/// How much a node waited for a CPU between two readings.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Starvation {
    /// Share of the node's runnable time spent waiting for a CPU, percent.
    pub wait_pct: f64,
    /// Mean wait each time a thread was scheduled in, ms: what a request waking a thread pays.
    pub delay_ms: f64,
    /// Waiting time summed over the node's threads, ms per second of the run.
    pub wait_ms_per_s: f64,
}

impl Schedstat {
    /// The counters of process `pid` now, if this system exposes them (the store reports its
    /// own through the same reader, [`tailor_procfs::schedstat`]).
    pub fn of_pid(pid: u32) -> Option<Schedstat> {
        let [run_ns, wait_ns, slices] = tailor_procfs::schedstat(&pid.to_string())?;
        Some(Schedstat { run_ns, wait_ns, slices })
    }

    /// The counters in a Tailor node's `INFO cpu` answer (`sched_run_us`, `sched_wait_us`,
    /// `sched_timeslices`); `None` when the node does not report them.
    pub fn from_info(info: &str) -> Option<Schedstat> {
        let field =
            |name: &str| info.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse::<u64>().ok());
        let s = Schedstat {
            run_ns: field("sched_run_us")? * 1000,
            wait_ns: field("sched_wait_us")? * 1000,
            slices: field("sched_timeslices")?,
        };
        // a node on a system without schedstat reports zeros: nothing was measured
        (s.slices > 0).then_some(s)
    }

    /// The wait between `self` (before) and `after`; `None` if the node did not run (or its
    /// counters went back: a restarted process).
    pub fn until(self, after: Schedstat, elapsed: std::time::Duration) -> Option<Starvation> {
        let run = after.run_ns.checked_sub(self.run_ns)?;
        let wait = after.wait_ns.checked_sub(self.wait_ns)?;
        let slices = after.slices.checked_sub(self.slices)?;
        (run + wait > 0 && slices > 0).then(|| Starvation {
            wait_pct: 100.0 * wait as f64 / (run + wait) as f64,
            delay_ms: wait as f64 / slices as f64 / 1e6,
            wait_ms_per_s: wait as f64 / 1e6 / elapsed.as_secs_f64().max(1e-9),
        })
    }
}

/// The worst node's starvation over a run, from per-node readings before and after (nodes
/// missing either reading are skipped); `None` when no node was measured.
pub fn worst(
    before: &[Option<Schedstat>],
    after: &[Option<Schedstat>],
    elapsed: std::time::Duration,
) -> Option<Starvation> {
    before.iter().zip(after).filter_map(|(b, a)| b.zip(*a).and_then(|(b, a)| b.until(a, elapsed))).reduce(|x, y| {
        Starvation {
            wait_pct: x.wait_pct.max(y.wait_pct),
            delay_ms: x.delay_ms.max(y.delay_ms),
            wait_ms_per_s: x.wait_ms_per_s.max(y.wait_ms_per_s),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_fields_parse_and_zeros_mean_unmeasured() {
        let info = "# CPU\r\nused_cpu_sys:0.5\r\nsched_run_us:2000\r\nsched_wait_us:500\r\nsched_timeslices:10\r\n";
        assert_eq!(Schedstat::from_info(info), Some(Schedstat { run_ns: 2_000_000, wait_ns: 500_000, slices: 10 }));
        assert_eq!(Schedstat::from_info("sched_run_us:0\nsched_wait_us:0\nsched_timeslices:0\n"), None);
        assert_eq!(Schedstat::from_info("# Server\r\nredis_version:7\r\n"), None);
        // a prefix of another field's name is not that field
        assert_eq!(Schedstat::from_info("sched_run_us_x:1\nsched_wait_us:1\nsched_timeslices:1\n"), None);
    }

    #[test]
    fn starvation_between_readings_and_the_worst_node() {
        let a = Schedstat { run_ns: 1_000_000, wait_ns: 0, slices: 10 };
        let b = Schedstat { run_ns: 4_000_000, wait_ns: 1_000_000, slices: 20 };
        let half = std::time::Duration::from_millis(500);
        let s = a.until(b, half).unwrap();
        // 3 ms ran, 1 ms waited over 10 slices in half a second
        assert!((s.wait_pct - 25.0).abs() < 1e-9 && (s.delay_ms - 0.1).abs() < 1e-12, "{s:?}");
        assert!((s.wait_ms_per_s - 2.0).abs() < 1e-9, "{s:?}");
        assert_eq!(b.until(a, half), None, "a restarted node's counters went back");
        assert_eq!(a.until(a, half), None, "a node that did not run");
        let quiet = Schedstat { run_ns: 2_000_000, wait_ns: 10_000, slices: 11 };
        let w = worst(&[Some(a), Some(a), None], &[Some(quiet), Some(b), Some(b)], half).unwrap();
        assert_eq!(w, s, "the starved node decides; an unmeasured one is skipped");
        assert_eq!(worst(&[None], &[Some(a)], half), None);
    }

    #[test]
    fn this_process_is_readable_on_linux() {
        if std::path::Path::new("/proc/self/schedstat").exists() {
            let s = Schedstat::of_pid(std::process::id()).expect("own counters");
            assert!(s.run_ns > 0 && s.slices > 0, "{s:?}");
        }
    }
}
