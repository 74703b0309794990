//! The worker threads and their supervision: each runs the jobs the core starts, under
//! `catch_unwind`, reports them finished and sends the replies; a panic is logged, counted and
//! answered, a dead loop replaced; the health verdict peers route by.

use super::execute::Executed;
use super::{Done, Job, Replica};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tailor_core::model::JobMeta;
use tailor_core::time::Nanos;

/// How long panicking workers keep a replica unhealthy without a job succeeding since: after
/// it, the replica says healthy again so peers send it work and find out.
pub const UNHEALTHY_FOR: Duration = Duration::from_secs(10);

/// What the replica's health verdict is made of.
#[derive(Default)]
pub(super) struct Health {
    /// Worker threads running their loop.
    pub(super) alive: AtomicUsize,
    /// Jobs that panicked since the last one that did not.
    pub(super) panics_since_success: AtomicUsize,
    /// When the last panic happened (replica clock).
    pub(super) last_panic: AtomicU64,
}

impl Replica {
    /// Whether this replica can run requests: its disk has not failed (`disk.rs`), some worker
    /// thread is alive, and its
    /// last jobs (as many as it has workers) did not all panic within [`UNHEALTHY_FOR`].
    /// Heartbeat answers carry it, so peers route around a replica that cannot serve.
    pub fn healthy(&self) -> bool {
        if self.storage.disk_state().failed() {
            return false;
        }
        let h = &self.health;
        let alive = h.alive.load(Ordering::Relaxed);
        if alive == 0 {
            return false;
        }
        // the usual case, asked on every local read: no panic since the last success, and the
        // core keeps at least one worker, so no clock read and no lock are needed
        let panics = h.panics_since_success.load(Ordering::Relaxed);
        if panics == 0 {
            return true;
        }
        let since = self.now().saturating_sub(h.last_panic.load(Ordering::Relaxed));
        let recent = since < UNHEALTHY_FOR.as_nanos() as Nanos;
        !(recent && panics >= self.workers().min(alive))
    }

    /// A worker thread: runs the worker loop, and a fresh one whenever a panic ends it, until
    /// shutdown.
    pub(super) fn supervise(self: Arc<Self>) {
        loop {
            match catch_unwind(AssertUnwindSafe(|| self.worker())) {
                Ok(()) => break,
                Err(panic) => self.panicked(&panic_text(&*panic), true),
            }
        }
        let was = self.health.alive.fetch_sub(1, Ordering::Relaxed);
        debug_assert!(was > 0, "a worker thread ended that was not counted alive");
    }

    pub(super) fn worker(&self) {
        while let Some((meta, job)) = self.next_job() {
            // this loop asks for the next job itself, whatever waits
            let _ = self.run(meta, job);
        }
    }

    /// Execute a job the core started, report it finished and send its reply (after the
    /// committer's sync for a `sync` write). Returns whether jobs wait for the slot it freed: a
    /// caller that is not a worker loop (an inline run) must wake a worker for them.
    #[must_use]
    pub(super) fn run(&self, meta: JobMeta, job: Job) -> bool {
        let Job { work, size, key_hash, receiver, reply } = job;
        let run = catch_unwind(AssertUnwindSafe(|| self.execute(work, key_hash, size)));
        let Executed { outcome, service, end, committed } = match run {
            Ok(done) => {
                self.health.panics_since_success.store(0, Ordering::Relaxed);
                done
            }
            Err(panic) => {
                let text = panic_text(&*panic);
                self.panicked(&text, false);
                let outcome = Err(format!("the replica's worker panicked: {text}"));
                Executed { outcome, service: 1, end: self.now(), committed: false }
            }
        };
        let (mut feedback, waiting) = {
            let mut s = self.lock();
            (s.finish(end, meta.id, service), s.core().waiting() > 0)
        };
        if outcome.is_ok() {
            self.fill_bloom(receiver, &mut feedback);
        }
        if committed {
            // the ack leaves after the committer's sync; the worker serves the next job
            // meanwhile, so the sync wait is not service time
            self.storage.when_durable(move |synced| {
                let outcome = synced.and(outcome);
                let _ = reply.send(Done { outcome, feedback });
            });
        } else {
            let _ = reply.send(Done { outcome, feedback });
        }
        waiting
    }

    /// Log, count and remember a worker panic: in a job (answered with an error, the worker
    /// carries on) or in the worker's loop (`restarted`: a fresh loop replaces it).
    pub(super) fn panicked(&self, text: &str, restarted: bool) {
        let name = std::thread::current().name().unwrap_or("worker").to_string();
        if restarted {
            tracing::error!(worker = %name, "worker loop panicked; a fresh loop replaces it: {text}");
        } else {
            tracing::error!(worker = %name, "job panicked; answered with an error, the worker carries on: {text}");
        }
        self.metrics.worker_panics.fetch_add(1, Ordering::Relaxed);
        self.health.panics_since_success.fetch_add(1, Ordering::Relaxed);
        self.health.last_panic.store(self.now().max(1), Ordering::Relaxed);
    }
}

/// The message a panic carried.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(s), _) => s.to_string(),
        (_, Some(s)) => s.clone(),
        _ => "a panic without a message".into(),
    }
}
