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
}
