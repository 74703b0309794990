//! Panics as log events, in the process's log format (`--log-format`).
//!
//! Why not the default hook: it writes plain text past the log format, and with
//! `RUST_BACKTRACE` set it resolves the backtrace's symbols on the panicking thread. A node
//! runs some jobs inline on its runtime threads; under load, resolving one job panic's
//! backtrace took over half a second there, which stalled every connection that thread served
//! and timed out a QUORUM write's copies bound for healthy peers. Here the panicking thread logs
//! one event (message, location, thread) and only captures the backtrace's frames; a
//! background thread resolves and logs them.

use std::backtrace::{Backtrace, BacktraceStatus};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::OnceLock;

/// Backtraces waiting for the resolver; past this many, a panic is logged without its own.
const QUEUED_BACKTRACES: usize = 16;

/// Replace the default panic hook (after the log subscriber is installed).
pub fn install() {
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current().name().unwrap_or("unnamed").to_string();
        let location = info.location().map(|l| l.to_string()).unwrap_or_default();
        let message = info.payload_as_str().unwrap_or("a panic without a message");
        tracing::error!(thread, location, "panicked: {message}");
        let backtrace = Backtrace::capture();
        if backtrace.status() == BacktraceStatus::Captured && resolver().try_send((thread, backtrace)).is_err() {
            tracing::warn!("backtrace not logged: {QUEUED_BACKTRACES} are already waiting to be resolved");
        }
    }));
}

/// The queue of the thread that resolves and logs captured backtraces (started on first use).
fn resolver() -> &'static SyncSender<(String, Backtrace)> {
    static QUEUE: OnceLock<SyncSender<(String, Backtrace)>> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let (tx, rx) = sync_channel::<(String, Backtrace)>(QUEUED_BACKTRACES);
        let spawned = std::thread::Builder::new().name("backtraces".into()).spawn(move || {
            for (thread, backtrace) in rx {
                tracing::error!(thread, "backtrace of the panic above:\n{backtrace}");
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("no thread to resolve backtraces ({e}): panics are logged without them");
        }
        tx
    })
}
