//! The first error a Python strategy raised during a simulation. A strategy runs inside the
//! engine's callbacks, which cannot return errors; so the first exception is kept here, every
//! Python strategy stops being called (the engine gets a harmless stand-in answer and the run
//! ends quickly), and `simulate` raises it when the run is over.

use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

static FIRST: Mutex<Option<PyErr>> = Mutex::new(None);
static STOPPED: AtomicBool = AtomicBool::new(false);
/// In a program that embeds Python (a store node), nobody collects the error after a run: it
/// goes to stderr, the node's log, when it happens.
static TO_STDERR: AtomicBool = AtomicBool::new(false);

/// Print errors as they happen (a program that embeds Python).
pub fn report_to_stderr() {
    TO_STDERR.store(true, Ordering::Relaxed);
}

/// Whether Python strategies must no longer be called (an error, or the user interrupted).
pub fn stopped() -> bool {
    STOPPED.load(Ordering::Relaxed)
}

/// Stop calling Python strategies (Ctrl-C in the waiting loop).
pub fn stop() {
    STOPPED.store(true, Ordering::Relaxed);
}

/// Keep `err`, raised by `strategy` in `method`, if it is the first; stop Python strategies.
pub fn record(py: Python<'_>, strategy: &str, method: &str, err: PyErr) {
    let message = format!("{strategy}: {method} raised {}", err.value(py));
    if TO_STDERR.load(Ordering::Relaxed) {
        eprintln!("error: Python strategy {message}; every Python strategy now gives a stand-in answer");
    }
    let wrapped = crate::TailorError::new_err(message);
    wrapped.set_cause(py, Some(err));
    let mut first = FIRST.lock().unwrap_or_else(|e| e.into_inner());
    if first.is_none() {
        *first = Some(wrapped);
    }
    stop();
}

/// Forget any earlier error before a new simulation.
pub fn reset() {
    *FIRST.lock().unwrap_or_else(|e| e.into_inner()) = None;
    STOPPED.store(false, Ordering::Relaxed);
}

/// The first error of the simulation that just ended, if any.
pub fn take() -> Option<PyErr> {
    FIRST.lock().unwrap_or_else(|e| e.into_inner()).take()
}
