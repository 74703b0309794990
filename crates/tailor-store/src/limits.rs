//! Node-wide limits shared by the client and internode connections: the budget of bytes held
//! in partly received input, the key length every entry point checks, and the pace of
//! background scans (repair, tombstone collection).
//!
//! Why a node-wide budget and not only a per-connection one: a connection may legitimately
//! buffer one whole command (a 16 MiB value), so many connections each stalled half-way through
//! a large value would together hold gigabytes. Every connection leases what its input buffer
//! holds from one [`Budget`] (`max_buffered_bytes`); a connection that cannot grow its lease
//! gets an error and is closed, and the others keep being served. Client and internode
//! connections lease from two budgets of that size: clients that fill theirs (stalled half-way
//! through large values, say) cannot keep a heartbeat or a replica write from being read, which
//! would make the node look dead to its peers.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes every connection's input buffers may hold together.
#[derive(Debug)]
pub struct Budget {
    max: u64,
    used: AtomicU64,
}

/// A lease could not grow: the budget is spent.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[error("the node's input buffers are full ({max} bytes, max_buffered_bytes)")]
pub struct Exhausted {
    /// The budget's size.
    pub max: u64,
}

impl Budget {
    /// A budget of `max` bytes.
    pub fn new(max: u64) -> Arc<Budget> {
        Arc::new(Budget { max, used: AtomicU64::new(0) })
    }

    /// A budget that never runs out (input the node asked for itself, e.g. peers' replies,
    /// whose size the frame limit already bounds).
    pub fn unlimited() -> Arc<Budget> {
        Budget::new(u64::MAX)
    }

    /// Bytes leased now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// An empty lease on this budget.
    pub fn lease(self: &Arc<Self>) -> Lease {
        Lease { budget: self.clone(), held: 0 }
    }

    fn take(&self, n: u64) -> Result<(), Exhausted> {
        let grow = |used: u64| used.checked_add(n).filter(|&u| u <= self.max);
        match self.used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, grow) {
            Ok(_) => Ok(()),
            Err(_) => Err(Exhausted { max: self.max }),
        }
    }

    fn give_back(&self, n: u64) {
        let before = self.used.fetch_sub(n, Ordering::Relaxed);
        assert!(before >= n, "a lease gave back {n} bytes of {before} leased");
    }
}

/// Bytes one connection holds from a [`Budget`]; given back when dropped.
#[derive(Debug)]
pub struct Lease {
    budget: Arc<Budget>,
    held: u64,
}

impl Lease {
    /// Bytes held.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Hold exactly `n` bytes: grows from the budget (all or nothing) or gives bytes back.
    pub fn resize(&mut self, n: u64) -> Result<(), Exhausted> {
        if n > self.held {
            self.budget.take(n - self.held)?;
        } else {
            self.budget.give_back(self.held - n);
        }
        self.held = n;
        Ok(())
    }

    /// Hold `other`'s bytes too (one lease for the replies of a whole `EXEC`); both must lease
    /// from the same budget.
    pub fn absorb(&mut self, mut other: Lease) {
        assert!(Arc::ptr_eq(&self.budget, &other.budget), "leases of two budgets");
        self.held += std::mem::take(&mut other.held);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.budget.give_back(self.held);
    }
}

/// Longest client key the storage engine takes: fjall stores key lengths in 16 bits (and panics
/// above), and the token-ordered `versions` keyspace puts the key's 8-byte token before it.
pub const ENGINE_MAX_KEY: u64 = u16::MAX as u64 - 8;

/// Paces background work (repair, tombstone collection) to at most `per_s` units a second on
/// average since it started (0: no limit).
pub struct Pace {
    started: tokio::time::Instant,
    per_s: u64,
    done: u64,
}

impl Pace {
    /// A pace of `per_s` units a second from now.
    pub fn new(per_s: u64) -> Pace {
        Pace { started: tokio::time::Instant::now(), per_s, done: 0 }
    }

    /// Count `n` more units done, then wait until the average is back within the limit.
    pub async fn take(&mut self, n: u64) {
        self.done += n;
        if self.per_s > 0 {
            let due = self.started + Duration::from_secs_f64(self.done as f64 / self.per_s as f64);
            tokio::time::sleep_until(due).await;
        }
    }
}

/// What a client is told when it names the empty key.
pub const EMPTY_KEY: &str =
    "empty key: keys must be at least 1 byte here (the storage engine cannot hold a 0-byte key)";

/// Refuse the empty key (Redis takes it; fjall asserts keys are not empty, so a replica would
/// panic on it) and a key longer than `max` bytes (`max_key_bytes`), before it reaches any queue
/// or the engine, with a reply text naming the rule.
pub fn check_key(key: &[u8], max: u64) -> Result<(), String> {
    let len = key.len() as u64;
    if len == 0 {
        return Err(EMPTY_KEY.into());
    }
    if len > max {
        return Err(format!("key is {len} bytes, above the {max}-byte limit (max_key_bytes)"));
    }
    Ok(())
}

/// Accept connections until the task is dropped, while `slots` has one free (several listeners
/// may share them: one cap over all): each goes to `serve` with a slot its task holds until it
/// ends; one over the cap is counted in `refused` and goes to `refuse`.
pub async fn accept_capped(
    listener: TcpListener,
    slots: Arc<Semaphore>,
    refused: &AtomicU64,
    mut serve: impl FnMut(TcpStream, OwnedSemaphorePermit),
    mut refuse: impl FnMut(TcpStream, SocketAddr),
) {
    loop {
        match listener.accept().await {
            Ok((sock, from)) => {
                let _ = sock.set_nodelay(true);
                match slots.clone().try_acquire_owned() {
                    Ok(slot) => serve(sock, slot),
                    Err(_) => {
                        refused.fetch_add(1, Ordering::Relaxed);
                        refuse(sock, from);
                    }
                }
            }
            Err(e) => {
                // typically out of file descriptors: wait for connections to end
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_share_one_budget_and_give_back_on_drop() {
        let b = Budget::new(100);
        let mut x = b.lease();
        let mut y = b.lease();
        x.resize(60).unwrap();
        assert_eq!(y.resize(50), Err(Exhausted { max: 100 }));
        assert_eq!(y.held(), 0, "a refused growth leaves the lease as it was");
        y.resize(40).unwrap();
        assert_eq!(b.used(), 100);
        x.resize(10).unwrap();
        assert_eq!(b.used(), 50);
        drop(y);
        assert_eq!(b.used(), 10);
        drop(x);
        assert_eq!(b.used(), 0);
        let (mut a, mut c) = (b.lease(), b.lease());
        a.resize(30).unwrap();
        c.resize(20).unwrap();
        a.absorb(c);
        assert_eq!((a.held(), b.used()), (50, 50));
        drop(a);
        assert_eq!(b.used(), 0, "an absorbed lease is given back once");
        let mut u = Budget::unlimited().lease();
        u.resize(u64::MAX).unwrap();
    }

    #[test]
    fn keys_above_the_limit_are_named() {
        assert!(check_key(&[0; 10], 10).is_ok());
        let e = check_key(&[0; 66_000], 65_527).unwrap_err();
        assert_eq!(e, "key is 66000 bytes, above the 65527-byte limit (max_key_bytes)");
        assert_eq!(check_key(b"", 10).unwrap_err(), EMPTY_KEY);
    }
}
