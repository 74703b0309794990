//! Linux `/proc` readers that more than one Tailor crate needs. Every reading is `None` where
//! there is no `/proc` (or the process is gone), so callers leave the figure out rather than
//! report zeros.
//!
//! Why a crate of its own: the store reports its own counters and the bench reads processes it
//! launched (Cassandra), and the two must read the same fields the same way; the only crate both
//! depend on is `tailor-core`, whose cores are sans-IO and must not touch the file system.

/// The scheduler counters of process `pid` (a number, or `self`) summed over its threads
/// (`/proc/<pid>/task/*/schedstat`): nanoseconds on a CPU, nanoseconds runnable but waiting for
/// one, and times scheduled in. Threads that exited are not counted; a thread that exits while
/// it is read is skipped.
pub fn schedstat(pid: &str) -> Option<[u64; 3]> {
    let mut sum = [0u64; 3];
    let mut any = false;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else { continue };
        if let Some(counters) = parse_schedstat(&text) {
            sum = [0, 1, 2].map(|i| sum[i] + counters[i]);
            any = true;
        }
    }
    any.then_some(sum)
}

/// One thread's `schedstat` line: exactly three counters.
fn parse_schedstat(text: &str) -> Option<[u64; 3]> {
    let fields: Vec<u64> = text.split_whitespace().map(str::parse).collect::<Result<_, _>>().ok()?;
    fields.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_has_exactly_three_counters() {
        assert_eq!(parse_schedstat("12 34 5\n"), Some([12, 34, 5]));
        assert_eq!(parse_schedstat("12 34\n"), None);
        assert_eq!(parse_schedstat("12 x 5\n"), None);
    }

    #[test]
    fn this_process_is_readable_by_self_and_by_number_on_linux() {
        if !std::path::Path::new("/proc/self/task").exists() {
            return;
        }
        for pid in ["self".to_string(), std::process::id().to_string()] {
            let [run, _, slices] = schedstat(&pid).expect("own counters");
            assert!(run > 0 && slices > 0, "{pid}: the test threads ran");
        }
        assert_eq!(schedstat("0"), None, "no process 0 in /proc");
    }
}
