//! What the host's CPUs did during a run, from `/proc/stat` (Linux; elsewhere nothing is
//! measured). Steal time is the share a virtual machine's hypervisor gave to other guests: a
//! live run on a VM whose CPUs were stolen measures the neighbours, not the strategy.

/// Cumulative CPU time counters of all CPUs, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    busy: u64,
    steal: u64,
    total: u64,
}

/// The host's CPU use between two samples, in percent of all CPU time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HostCpu {
    /// Time the hypervisor ran other guests while this one wanted to run.
    pub steal_pct: f64,
    /// Time spent running (user, nice, system, interrupts).
    pub busy_pct: f64,
}

/// The counters now, if this system exposes them.
pub fn sample() -> Option<CpuTimes> {
    parse(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// Parse the aggregate `cpu` line: user nice system idle iowait irq softirq steal ...
fn parse(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).take(8).map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let [user, nice, system, idle, iowait, irq, softirq, steal] = v[..] else { return None };
    let busy = user + nice + system + irq + softirq;
    Some(CpuTimes { busy, steal, total: busy + idle + iowait + steal })
}

/// The use between `before` and `after` (`None` if no time passed).
pub fn between(before: CpuTimes, after: CpuTimes) -> Option<HostCpu> {
    let total = after.total.checked_sub(before.total).filter(|&t| t > 0)? as f64;
    let pct = |a: u64, b: u64| 100.0 * a.saturating_sub(b) as f64 / total;
    Some(HostCpu { steal_pct: pct(after.steal, before.steal), busy_pct: pct(after.busy, before.busy) })
}

/// What a [`Monitor`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    /// Use over the whole monitored time.
    pub overall: Option<HostCpu>,
    /// Steal share of the worst whole second: steal comes in bursts, and one stolen second
    /// is a visible tail in a run whose p99 is tens of milliseconds.
    pub worst_second_steal_pct: f64,
}

/// Samples the host's CPU counters each second on its own thread until [`Monitor::stop`].
pub struct Monitor {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<Summary>>,
}

impl Monitor {
    /// Start sampling now.
    pub fn start() -> Monitor {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("tailor-host-cpu".into())
            .spawn(move || {
                let first = sample();
                let (mut last, mut worst) = (first, 0.0f64);
                while !flag.load(Ordering::Relaxed) {
                    // a second in short naps, so stopping takes at most one nap
                    let second = std::time::Instant::now() + std::time::Duration::from_secs(1);
                    while std::time::Instant::now() < second && !flag.load(Ordering::Relaxed) {
                        std::thread::sleep(std::time::Duration::from_millis(50));
                    }
                    let now = sample();
                    let whole = std::time::Instant::now() >= second;
                    if let (true, Some(use_)) = (whole, last.zip(now).and_then(|(a, b)| between(a, b))) {
                        worst = worst.max(use_.steal_pct);
                    }
                    last = now;
                }
                Summary { overall: first.zip(last).and_then(|(a, b)| between(a, b)), worst_second_steal_pct: worst }
            })
            .ok();
        Monitor { stop, thread }
    }

    /// Stop sampling; what was seen (nothing if the thread could not start).
    pub fn stop(mut self) -> Summary {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_and_busy_shares_between_two_samples() {
        let a = parse("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n").unwrap();
        let b = parse("cpu  150 0 70 850 10 5 5 120 0 0\n").unwrap();
        let use_ = between(a, b).unwrap();
        // 210 ticks passed: 80 stolen, 80 busy
        assert!((use_.steal_pct - 100.0 * 80.0 / 210.0).abs() < 1e-9, "{use_:?}");
        assert!((use_.busy_pct - 100.0 * 80.0 / 210.0).abs() < 1e-9, "{use_:?}");
        assert_eq!(between(a, a), None);
        assert_eq!(parse("intr 5\n"), None);
        assert_eq!(parse("cpu 1 2 x\n"), None);
    }

    #[test]
    fn a_monitor_stops_promptly_and_reports_the_run() {
        let m = Monitor::start();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let s = m.stop();
        if sample().is_some() {
            let overall = s.overall.expect("measured on a system with /proc/stat");
            assert!((0.0..=100.0).contains(&overall.steal_pct) && (0.0..=100.0).contains(&overall.busy_pct));
            assert!((0.0..=100.0).contains(&s.worst_second_steal_pct));
        }
    }
}
