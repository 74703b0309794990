//! The emulated device that the jobs in service share (`shared_capacity` > 0): a worker thread
//! whose job needs `work` ns of emulated device time waits until the core's
//! [`Sharing`] state machine — the simulator's, to the line — says it has received all of it,
//! so a 512 KB read slows every small read in service beside it. Each worker sleeps until its
//! own projected end and is woken to recompute whenever a job starts or leaves.

use std::sync::{Condvar, Mutex};
use std::time::Duration;
use tailor_core::replica::sharing::Sharing;
use tailor_core::time::Nanos;

/// One node's shared device.
pub struct Device {
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    sharing: Sharing<u64>,
    next_id: u64,
}

impl Default for Device {
    fn default() -> Self {
        Device { state: Mutex::new(State { sharing: Sharing::new(1), next_id: 0 }), changed: Condvar::new() }
    }
}

impl Device {
    /// Run `work` ns of device time on a device of `capacity` units whose clock is `now`,
    /// returning once it is done; blocks the calling worker thread.
    pub fn run(&self, capacity: usize, now: impl Fn() -> Nanos, work: Nanos) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        // one clock read for the start: the capacity change, the start and the first wait are
        // one instant
        let mut at = now();
        s.sharing.set_capacity(at, capacity);
        let id = s.next_id;
        s.next_id = s.next_id.wrapping_add(1);
        s.sharing.start(at, id, work);
        self.changed.notify_all();
        loop {
            let left = s.sharing.remaining(at, &id).expect("a job stays in service until it leaves");
            if left == 0 {
                break;
            }
            let (guard, _) =
                self.changed.wait_timeout(s, Duration::from_nanos(left)).unwrap_or_else(|p| p.into_inner());
            s = guard;
            at = now();
        }
        s.sharing.remove(at, &id);
        drop(s);
        self.changed.notify_all();
    }

    /// Jobs on the device now.
    #[cfg(test)]
    pub fn in_service(&self) -> usize {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).sharing.in_service()
    }
}

#[cfg(test)]
mod tests {
    use super::Device;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// Two 40 ms jobs started together on one unit both end after at least 80 ms (each ran at
    /// half speed); on two units after at least 40 ms. Only lower bounds: a busy host makes any
    /// wait longer, never shorter (the arithmetic is the core's, tested there).
    #[test]
    fn jobs_beside_each_other_share_the_units() {
        for (capacity, least_ms) in [(1, 79), (2, 39)] {
            let device = Arc::new(Device::default());
            let t0 = Instant::now();
            let now = move || t0.elapsed().as_nanos() as u64;
            let run = |d: Arc<Device>| std::thread::spawn(move || d.run(capacity, now, 40_000_000));
            let (a, b) = (run(device.clone()), run(device.clone()));
            a.join().unwrap();
            b.join().unwrap();
            let took = t0.elapsed();
            assert!(took >= Duration::from_millis(least_ms), "capacity {capacity}: {took:?}");
            assert!(took < Duration::from_secs(10), "capacity {capacity}: hung for {took:?}");
            assert_eq!(device.in_service(), 0);
        }
    }
}
