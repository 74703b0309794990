//! One engine commit and one journal flush (or sync) for every write a thread makes in one go:
//! a client or peer connection polls inside a scope ([`poll_scoped`]), where a write is staged
//! in one engine batch per database ([`crate::staged`]) and its acknowledgement waits for the
//! scope's end; there each batch commits once and its acknowledgements go out after one flush
//! (`persist(Buffer)`, `buffer` durability) or are handed to the group committer in one call
//! (`sync`).
//!
//! Why: the writes of a pipeline run one after another on the connection's thread (inline, see
//! `replica.rs`), and each committed and moved the journal to the OS on its own, under fjall's
//! journal lock (perf of SET -P16: 11 % of the node's CPU in that flush, 9 % more queued on the
//! lock).
//!
//! The coordinator's exchanges that wait on those acknowledgements are kept in the scope
//! ([`start`]) and polled again right after its end, so they settle on this thread, as an
//! inline write did before: no task and no wake-up. Only those still pending (a peer's copy, a
//! sync) become tasks.
//!
//! The promise is unchanged: an acknowledgement leaves only after a flush or sync that began
//! after its write's commit. The scope ends in a drop guard, so a panic in between still
//! commits, flushes and answers every deferred write; a failed commit or flush fails them.

use crate::staged::Staged;

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

pub use crate::staged::{flush, Ack, Flushed};

/// An exchange that waited at its first poll.
pub type Parked = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Most times [`poll_scoped`] polls a future again in one call after a scope released
/// acknowledgements; each round only follows progress, this bounds a call's work.
const MAX_ROUNDS: usize = 4;

#[derive(Default)]
struct Scope {
    /// Databases written in the scope.
    written: Vec<Written>,
    parked: Vec<Parked>,
}

/// One database written in a scope.
struct Written {
    /// The database's owner (unique while it lives).
    id: usize,
    staged: Staged,
    /// Why an early commit of staged writes failed: their acknowledgements carry it.
    failed: Option<String>,
    /// What the scope's end releases.
    acks: Vec<Ack>,
}

impl Written {
    /// Commit the staged writes, keeping the first failure for the acknowledgements.
    fn commit(&mut self) {
        if let Err(e) = self.staged.commit() {
            self.failed.get_or_insert(e);
        }
    }
}

impl Scope {
    fn written(&mut self, id: usize) -> Option<&mut Written> {
        self.written.iter_mut().find(|w| w.id == id)
    }
}

thread_local! {
    static SCOPE: RefCell<Option<Scope>> = const { RefCell::new(None) };
}

/// Whether this thread is inside a scope (a write is then staged in it).
pub fn active() -> bool {
    SCOPE.with(|s| s.borrow().is_some())
}

/// Leave `ack` to the end of the scope that staged writes for database `id`; gives it back
/// when this thread's scope staged none (or no scope is open).
pub fn defer(id: usize, ack: Ack) -> Result<(), Ack> {
    SCOPE.with(|s| match s.borrow_mut().as_mut().and_then(|scope| scope.written(id)) {
        Some(written) => {
            written.acks.push(ack);
            Ok(())
        }
        None => Err(ack),
    })
}

/// Run `f` on the writes this scope staged for database `id` (made by `make` at the first);
/// `None` when no scope is open. `f` must not reach the scope again.
pub fn staged<R>(id: usize, make: impl FnOnce() -> Staged, f: impl FnOnce(&mut Staged) -> R) -> Option<R> {
    SCOPE.with(|s| {
        let mut s = s.borrow_mut();
        let scope = s.as_mut()?;
        if scope.written(id).is_none() {
            scope.written.push(Written { id, staged: make(), failed: None, acks: Vec::new() });
        }
        Some(f(&mut scope.written(id).expect("just made").staged))
    })
}

/// Commit every write this thread's scope staged and release their stripes: before the thread
/// waits for a stripe, and when a batch is full. Their acknowledgements still wait for the
/// scope's flush.
pub fn commit_staged() {
    SCOPE.with(|s| {
        if let Some(scope) = s.borrow_mut().as_mut() {
            scope.written.iter_mut().for_each(Written::commit);
        }
    })
}

/// Run an exchange here as far as it goes without waiting. One that must wait is kept in this
/// thread's scope, to be polled again after the scope's flush (it may wait for that flush), or,
/// with no scope open, becomes a task, whose first poll registers its real waker.
pub fn start(mut exchange: Parked) {
    let mut cx = Context::from_waker(Waker::noop());
    if exchange.as_mut().poll(&mut cx).is_ready() {
        return;
    }
    let unparked = SCOPE.with(|s| match s.borrow_mut().as_mut() {
        Some(scope) => {
            scope.parked.push(exchange);
            None
        }
        None => Some(exchange),
    });
    if let Some(exchange) = unparked {
        tokio::spawn(exchange);
    }
}

/// Run `f` in a scope; true if the scope released acknowledgements at its end. Inside a scope
/// already, `f` just runs (the outer scope covers it).
pub(crate) fn run<R>(f: impl FnOnce() -> R) -> (R, bool) {
    if active() {
        return (f(), false);
    }
    SCOPE.with(|s| *s.borrow_mut() = Some(Scope::default()));
    let end = End { released: false };
    let out = f();
    let released = end.finish();
    (out, released)
}

/// Poll `fut` to completion, each poll inside a scope; a poll that released acknowledgements
/// is followed by another at once (up to [`MAX_ROUNDS`]), which finds the writes answered
/// without waiting for a wake-up.
pub async fn poll_scoped<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        for _ in 1..MAX_ROUNDS {
            match run(|| fut.as_mut().poll(cx)) {
                (Poll::Pending, true) => continue,
                (done, _) => return done,
            }
        }
        run(|| fut.as_mut().poll(cx)).0
    })
    .await
}

/// Ends the scope when dropped, on a panic too.
struct End {
    released: bool,
}

impl End {
    fn finish(mut self) -> bool {
        self.end();
        self.released
    }

    /// Commit every database's staged writes and have them acknowledged once durable (flushed
    /// here for `buffer`, synced by the committer for `sync`), then poll the parked exchanges
    /// (no scope is open by then: what they do commits on its own, and one that waits again
    /// becomes a task).
    fn end(&mut self) {
        let Some(scope) = SCOPE.with(|s| s.borrow_mut().take()) else { return };
        for mut written in scope.written {
            written.commit();
            let acks = std::mem::take(&mut written.acks);
            self.released |= written.staged.acknowledge(acks, written.failed.take());
        }
        scope.parked.into_iter().for_each(start);
    }
}

impl Drop for End {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row_cache::RowCache;
    use fjall::Database;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Open the scope's entry for database `id` (as a staged write would), then defer `ack`.
    fn stage_and_defer(id: usize, db: &Database, ack: Ack) -> Result<(), Ack> {
        let make = || Staged::new(db, Arc::new(RowCache::new(0)), None);
        staged(id, make, |_| ());
        defer(id, ack)
    }

    #[test]
    fn acknowledgements_wait_for_the_scope_and_nested_scopes_join_the_outer_one() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder(dir.path()).manual_journal_persist(true).open().unwrap();
        let acked = Arc::new(AtomicUsize::new(0));
        let ack = |acked: &Arc<AtomicUsize>| -> Ack {
            let acked = acked.clone();
            Box::new(move |r: Flushed| {
                r.unwrap();
                acked.fetch_add(1, Ordering::SeqCst);
            })
        };
        assert!(stage_and_defer(1, &db, ack(&acked)).is_err(), "no scope: the caller flushes");
        let ((), released) = run(|| {
            assert!(defer(1, ack(&acked)).is_err(), "nothing staged for the database: the caller flushes");
            assert!(stage_and_defer(1, &db, ack(&acked)).is_ok());
            let ((), inner) = run(|| assert!(stage_and_defer(1, &db, ack(&acked)).is_ok()));
            assert!(!inner, "a nested scope releases nothing itself");
            assert_eq!(acked.load(Ordering::SeqCst), 0, "nothing answered before the scope's flush");
        });
        assert!(released);
        assert_eq!(acked.load(Ordering::SeqCst), 2);
        assert!(!active());
    }

    #[test]
    fn a_panic_in_the_scope_still_flushes_and_answers() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder(dir.path()).manual_journal_persist(true).open().unwrap();
        let acked = Arc::new(AtomicUsize::new(0));
        let a = acked.clone();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run(|| {
                let ack = Box::new(move |r: Flushed| {
                    a.fetch_add(r.is_ok() as usize, Ordering::SeqCst);
                });
                assert!(stage_and_defer(7, &db, ack).is_ok());
                panic!("in the scope");
            })
        }));
        assert!(unwound.is_err());
        assert_eq!(acked.load(Ordering::SeqCst), 1);
        assert!(!active(), "the scope is closed");
    }
}
