//! This process's resource use, read from Linux's `/proc` (every reading is `None` where there
//! is no `/proc`, so the metrics endpoint leaves those families out rather than report zeros).

/// Resident set size in bytes (`/proc/self/statm`'s second field, in pages).
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * sysconf(libc::_SC_PAGESIZE)?)
}

/// The fields of `/proc/<pid>/stat` after the command name, from the state on (the name is in
/// parentheses and may hold spaces, so fields are counted after it); `pid` is a number or `self`.
pub fn stat_fields(pid: &str) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// User plus system CPU time in seconds.
pub fn cpu_seconds() -> Option<f64> {
    cpu_user_system_seconds().map(|(user, system)| user + system)
}

/// User and system CPU time in seconds (`/proc/self/stat`'s `utime` and `stime`, in ticks).
pub fn cpu_user_system_seconds() -> Option<(f64, f64)> {
    let fields = stat_fields("self")?;
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    let hz = sysconf(libc::_SC_CLK_TCK)? as f64;
    // utime and stime are fields 14 and 15 of the line, 12th and 13th after the name
    Some((ticks(11)? as f64 / hz, ticks(12)? as f64 / hz))
}

/// Seconds since this process started (`/proc/self/stat`'s `starttime`, in ticks since boot,
/// against `/proc/uptime`): INFO's `uptime_in_seconds` counts from the start, not from the first
/// INFO.
pub fn uptime_seconds() -> Option<f64> {
    let boot = std::fs::read_to_string("/proc/uptime").ok()?;
    let since_boot: f64 = boot.split_whitespace().next()?.parse().ok()?;
    // starttime is field 22 of the line, the 20th after the name
    let started: u64 = stat_fields("self")?.get(19)?.parse().ok()?;
    Some((since_boot - started as f64 / sysconf(libc::_SC_CLK_TCK)? as f64).max(0.0))
}

/// This process's scheduler counters summed over its threads: nanoseconds on a CPU, nanoseconds
/// runnable but waiting for one, and times scheduled in ([`tailor_procfs::schedstat`], which the
/// bench reads other processes with). A load generator reads them through INFO before and after a
/// run: a node that waited for a CPU while it had work measured the host, not the strategy.
pub fn schedstat() -> Option<[u64; 3]> {
    tailor_procfs::schedstat("self")
}

/// File descriptors open now (client and peer sockets, storage files).
pub fn open_fds() -> Option<u64> {
    Some(std::fs::read_dir("/proc/self/fd").ok()?.count() as u64)
}

/// A positive `sysconf` value.
fn sysconf(name: libc::c_int) -> Option<u64> {
    // SAFETY: sysconf only reads a configuration value.
    let v = unsafe { libc::sysconf(name) };
    (v > 0).then_some(v as u64)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn readings_are_plausible_on_linux() {
        let before = rss_bytes().expect("statm");
        assert!(before > 1 << 20 && before < 64 << 30, "{before}");
        // 64 MiB written are resident until dropped, whatever other tests free meanwhile
        let held = vec![1u8; 64 << 20];
        let after = rss_bytes().unwrap();
        assert!(after >= 64 << 20, "{before} -> {after}");
        std::hint::black_box(&held);
        assert!(cpu_seconds().expect("stat") > 0.0, "the test process ran");
        assert!(open_fds().expect("fd dir") >= 1);
        let [run, _, slices] = schedstat().expect("schedstat");
        assert!(run > 0 && slices > 0, "the test threads ran");
    }
}
