//! A slowed node: its JVM stopped (SIGSTOP) for `duty` of every `period` and continued
//! (SIGCONT) for the rest, so it serves at about `1 − duty` of its speed and every request that
//! meets a pause waits up to `duty × period` — a stop/continue duty cycle, the way a node
//! sharing its cores with a compaction or a noisy neighbour behaves. Unlike a cgroup CPU limit it
//! needs no privileges. The JVM is always left running when the slowdown ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A running duty cycle; dropping it (or [`Slowdown::stop`]) continues the process for good.
#[derive(Debug)]
pub struct Slowdown {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Shortest and longest period accepted (a shorter one is all signal overhead; a longer one is
/// an outage, not a slowdown).
pub const PERIOD_RANGE: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(10));

impl Slowdown {
    /// Start stopping `pid` for `duty` (0 < duty < 1) of every `period`.
    pub fn start(pid: i32, duty: f64, period: Duration) -> Result<Slowdown, String> {
        if !(duty > 0.0 && duty < 1.0) {
            return Err(format!("a slowdown duty is within (0, 1), got {duty}"));
        }
        if period < PERIOD_RANGE.0 || period > PERIOD_RANGE.1 {
            return Err(format!(
                "a slowdown period is within {:?}..={:?}, got {period:?}",
                PERIOD_RANGE.0, PERIOD_RANGE.1
            ));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (paused, running) = (period.mul_f64(duty), period.mul_f64(1.0 - duty));
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                signal(pid, libc::SIGSTOP);
                std::thread::sleep(paused);
                signal(pid, libc::SIGCONT);
                std::thread::sleep(running);
            }
        });
        Ok(Slowdown { stop, thread: Some(thread) })
    }

    /// End the duty cycle with the process running.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Slowdown {
    fn drop(&mut self) {
        self.stop();
    }
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) has no memory effects; a pid that has exited only yields ESRCH.
    unsafe {
        libc::kill(pid, sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_duty_or_period_is_refused_and_the_process_is_left_running() {
        assert!(Slowdown::start(1, 1.0, Duration::from_millis(100)).unwrap_err().contains("duty"));
        assert!(Slowdown::start(1, 0.5, Duration::from_millis(1)).unwrap_err().contains("period"));
        let mut child = std::process::Command::new("sleep").arg("5").spawn().expect("spawn sleep");
        let pid = child.id() as i32;
        let mut slow = Slowdown::start(pid, 0.5, Duration::from_millis(20)).expect("valid slowdown");
        std::thread::sleep(Duration::from_millis(100));
        slow.stop();
        let state = tailor_store::process::stat_fields(&pid.to_string()).expect("stat");
        assert_ne!(state.first().map(String::as_str), Some("T"), "stopped for good: {state:?}");
        let _ = child.kill();
        let _ = child.wait();
    }
}
