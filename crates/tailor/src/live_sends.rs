//! Where a live cluster's coordinators send reads, over time: every node's
//! `tailor_selections_total{replica=...}` and `tailor_timeouts_total` counters sampled at a fixed
//! step, as the per-replica copies the failover figures need (the simulator logs each copy; the
//! store counts them).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tailor_core::time::Nanos;
use tailor_store::cluster::http_get;

/// One sampling step: copies sent to each replica and copies timed out at any coordinator since
/// the previous step, stamped at the middle of the step (ns since the run's time 0).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Step {
    /// Middle of the step.
    pub at: Nanos,
    /// Copies sent to each replica during the step.
    pub sent: Vec<u64>,
    /// Copies that timed out at the coordinators during the step.
    pub timeouts: u64,
}

/// A running sampler; [`SendSampler::finish`] stops it.
pub struct SendSampler {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Vec<Step>>,
}

impl SendSampler {
    /// Sample the nodes' metrics endpoints every `step` from `epoch` (the run's time 0).
    pub fn start(metrics: Vec<SocketAddr>, epoch: Instant, step: Duration) -> SendSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let servers = metrics.len();
            // last value of each coordinator's counters: per replica, then timeouts
            let mut last: Vec<Vec<u64>> = vec![vec![0; servers + 1]; servers];
            let mut steps = Vec::new();
            let mut before = epoch;
            while !flag.load(Ordering::Relaxed) {
                let next = before + step;
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
                let mut s = Step { sent: vec![0; servers], ..Step::default() };
                for (c, &addr) in metrics.iter().enumerate() {
                    // a node down answers nothing: its counters are read again once it is back
                    let Ok(text) = http_get(addr, "/metrics") else { continue };
                    let now = counters(&text, servers);
                    for (r, (&n, l)) in now.iter().zip(last[c].iter_mut()).enumerate() {
                        // a restarted node counts from 0 again
                        let d = if n >= *l { n - *l } else { n };
                        *l = n;
                        match s.sent.get_mut(r) {
                            Some(x) => *x += d,
                            None => s.timeouts += d,
                        }
                    }
                }
                let mid = before + (Instant::now() - before) / 2;
                s.at = mid.saturating_duration_since(epoch).as_nanos() as Nanos;
                steps.push(s);
                before = Instant::now().max(next);
            }
            steps
        });
        SendSampler { stop, handle }
    }

    /// Stop sampling; the steps in time order.
    pub fn finish(self) -> Vec<Step> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// A coordinator's counters in Prometheus text: reads sent to each of `servers` replicas, then
/// its replica timeouts.
fn counters(text: &str, servers: usize) -> Vec<u64> {
    let mut out = vec![0; servers + 1];
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("tailor_selections_total{") {
            let Some((labels, value)) = rest.split_once("} ") else { continue };
            let replica =
                labels.split(',').find_map(|l| l.strip_prefix("replica=\"")?.strip_suffix('"')?.parse::<usize>().ok());
            if let (Some(r), Ok(v)) = (replica, value.trim().parse::<f64>()) {
                if r < servers {
                    out[r] = v as u64;
                }
            }
        }
    }
    out[servers] = crate::live::counter(text, "tailor_timeouts_total").unwrap_or(0);
    out
}

#[cfg(test)]
mod tests {
    use super::counters;

    #[test]
    fn reads_sends_per_replica_and_timeouts() {
        let text = "# TYPE tailor_selections_total counter\n\
            tailor_selections_total{node=\"0\",selector=\"c3\",local=\"fcfs\",replica=\"0\"} 5\n\
            tailor_selections_total{node=\"0\",selector=\"c3\",local=\"fcfs\",replica=\"2\"} 7\n\
            tailor_selections_total{node=\"0\",selector=\"c3\",local=\"fcfs\",replica=\"9\"} 1\n\
            tailor_timeouts_total{node=\"0\"} 3\n";
        assert_eq!(counters(text, 3), vec![5, 0, 7, 3], "a replica outside the cluster is ignored");
        assert_eq!(counters("", 2), vec![0, 0, 0]);
    }
}
