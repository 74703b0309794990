//! One journal flush for every `buffer` write a thread makes in one go: a client connection
//! polls its commands inside a scope ([`poll_scoped`]), where a `buffer` write commits to
//! fjall's journal buffer only and its acknowledgement waits for the scope's end; there one
//! flush (`persist(Buffer)`) per database moves the journal to the OS for all of them, and only
//! then are the acknowledgements sent.
//!
//! Why: the writes of a pipeline run one after another on the connection's thread (inline, see
//! `replica.rs`), and each moved the journal to the OS on its own, a write syscall under
//! fjall's journal lock per SET (perf of SET -P16: 11 % of the node's CPU in that flush).
//!
//! The coordinator's exchanges that wait on those acknowledgements are parked in the scope
//! ([`park`]) and polled again right after the flush, so they settle on this thread, as an
//! inline write did before: no task and no wake-up. Only those still pending (a peer's copy)
//! become tasks.
//!
//! The promise is unchanged: an acknowledgement leaves only after a flush that began after its
//! write's commit. The scope ends in a drop guard, so a panic in between still flushes and
//! answers every deferred write; a failed flush fails them.

use fjall::{Database, PersistMode};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// What an acknowledgement learns: the journal reached the OS, or why not.
pub type Flushed = Result<(), String>;

/// An acknowledgement waiting for the scope's flush.
pub type Ack = Box<dyn FnOnce(Flushed) + Send>;

/// An exchange that waited at its first poll.
pub type Parked = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Most times [`poll_scoped`] polls a future again in one call after a scope released
/// acknowledgements; each round only follows progress, this bounds a call's work.
const MAX_ROUNDS: usize = 4;

#[derive(Default)]
struct Scope {
    /// Databases written in the scope (by identity), with the acknowledgements each flush
    /// releases.
    flushes: Vec<(usize, Database, Vec<Ack>)>,
    parked: Vec<Parked>,
}

thread_local! {
    static SCOPE: RefCell<Option<Scope>> = const { RefCell::new(None) };
}

/// Whether this thread is inside a scope (a `buffer` write may then leave its flush to it).
pub fn active() -> bool {
    SCOPE.with(|s| s.borrow().is_some())
}

/// Leave `ack` to the scope's flush of `db` (`id`: the database's owner, unique while it
/// lives); gives it back when no scope is open.
pub fn defer(id: usize, db: &Database, ack: Ack) -> Result<(), Ack> {
    SCOPE.with(|s| {
        let mut s = s.borrow_mut();
        let Some(scope) = s.as_mut() else { return Err(ack) };
        match scope.flushes.iter_mut().find(|f| f.0 == id) {
            Some(f) => f.2.push(ack),
            None => scope.flushes.push((id, db.clone(), vec![ack])),
        }
        Ok(())
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

/// Move `db`'s journal to the OS: what a `buffer` write's acknowledgement waits for.
pub fn flush(db: &Database) -> Flushed {
    db.persist(PersistMode::Buffer).map_err(|e| format!("journal flush failed: {e}"))
}

/// Run `f` in a scope; true if the scope released acknowledgements at its end. Inside a scope
/// already, `f` just runs (the outer scope covers it).
fn run<R>(f: impl FnOnce() -> R) -> (R, bool) {
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

    /// Flush every database written in the scope, then answer its writes, then poll the
    /// parked exchanges (no scope is open by then: what they do flushes on its own, and one
    /// that waits again becomes a task).
    fn end(&mut self) {
        let Some(scope) = SCOPE.with(|s| s.borrow_mut().take()) else { return };
        for (_, db, acks) in scope.flushes {
            let flushed = flush(&db);
            if let Err(e) = &flushed {
                tracing::error!("{e}; the writes it covered are answered with the error");
            }
            self.released |= !acks.is_empty();
            for ack in acks {
                ack(flushed.clone());
            }
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
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

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
        assert!(defer(1, &db, ack(&acked)).is_err(), "no scope: the caller flushes");
        let ((), released) = run(|| {
            assert!(defer(1, &db, ack(&acked)).is_ok());
            let ((), inner) = run(|| assert!(defer(1, &db, ack(&acked)).is_ok()));
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
                let _ = defer(
                    7,
                    &db,
                    Box::new(move |r: Flushed| {
                        a.fetch_add(r.is_ok() as usize, Ordering::SeqCst);
                    }),
                );
                panic!("in the scope");
            })
        }));
        assert!(unwound.is_err());
        assert_eq!(acked.load(Ordering::SeqCst), 1);
        assert!(!active(), "the scope is closed");
    }
}
