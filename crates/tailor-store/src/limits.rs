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
//!
//! One client (one source address, however many connections it opens) could still fill the
//! clients' budget alone and leave the others none. So a client connection's lease also counts
//! against its address's [`Share`] of [`Shares`] (`max_buffered_bytes_per_client`), except for
//! each connection's first idle buffer (those are bounded by `max_clients` already, and a
//! client's many idle connections must not need a share): a connection whose share is spent
//! waits, reading nothing more from its socket, until its client's other connections give bytes
//! back, at most until its slow-sender deadline, and is then answered and closed as when the
//! budget is spent. Other clients' connections go on leasing from the budget.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Bytes every connection's input buffers may hold together.
#[derive(Debug)]
pub struct Budget {
    max: u64,
    used: AtomicU64,
}

/// A lease could not grow: the budget, or its client's share of it, is spent.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum Exhausted {
    /// The node's budget (of all clients, or of all peers).
    #[error("the node's input buffers are full ({max} bytes, max_buffered_bytes)")]
    Node {
        /// The budget's size.
        max: u64,
    },
    /// One client's share.
    #[error(
        "this client's input buffers are full ({max} bytes over its connections from {addr}, \
         max_buffered_bytes_per_client)"
    )]
    Client {
        /// The share's size.
        max: u64,
        /// The client's source address (an IPv6 one's /64).
        addr: IpAddr,
    },
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
        Lease { budget: self.clone(), share: None, free: 0, held: 0 }
    }

    /// An empty lease on this budget whose bytes beyond the first `free` also count against
    /// `share` (a client connection's input buffer, `free` its idle size).
    pub fn lease_shared(self: &Arc<Self>, share: Arc<Share>, free: u64) -> Lease {
        Lease { budget: self.clone(), share: Some(share), free, held: 0 }
    }

    fn take(&self, n: u64) -> Result<(), Exhausted> {
        take(&self.used, self.max, n).map_err(|max| Exhausted::Node { max })
    }

    fn give_back(&self, n: u64) {
        give_back(&self.used, n);
    }
}

/// Add `n` to `used` if the sum stays within `max`; `Err(max)` otherwise.
fn take(used: &AtomicU64, max: u64, n: u64) -> Result<(), u64> {
    let grow = |u: u64| u.checked_add(n).filter(|&u| u <= max);
    used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, grow).map(drop).map_err(|_| max)
}

fn give_back(used: &AtomicU64, n: u64) {
    let before = used.fetch_sub(n, Ordering::Relaxed);
    assert!(before >= n, "a lease gave back {n} bytes of {before} leased");
}

/// The clients' shares of the budget, one per source address that has a connection open
/// (`max_buffered_bytes_per_client`); an address's entry goes when its last connection and lease
/// do, so the table holds at most `max_clients` entries.
#[derive(Debug)]
pub struct Shares {
    max: u64,
    table: Mutex<HashMap<IpAddr, Weak<Share>>>,
    waits: AtomicU64,
}

/// What one client's connections hold together beyond their idle buffers.
#[derive(Debug)]
pub struct Share {
    addr: IpAddr,
    used: AtomicU64,
    /// Woken when bytes are given back.
    room: Notify,
    shares: Arc<Shares>,
}

impl Shares {
    /// Shares of `max` bytes each (0: no bound of their own, the budget alone bounds a client).
    pub fn new(max: u64) -> Arc<Shares> {
        let max = if max == 0 { u64::MAX } else { max };
        Arc::new(Shares { max, table: Mutex::new(HashMap::new()), waits: AtomicU64::new(0) })
    }

    /// The share of the client at `addr`, held while its connection is.
    pub fn of(self: &Arc<Self>, addr: IpAddr) -> Arc<Share> {
        let addr = client_of(addr);
        let mut table = self.table.lock();
        if let Some(share) = table.get(&addr).and_then(Weak::upgrade) {
            return share;
        }
        let share = Arc::new(Share { addr, used: AtomicU64::new(0), room: Notify::new(), shares: self.clone() });
        table.insert(addr, Arc::downgrade(&share));
        share
    }

    /// Times a connection had to wait for its client's share (`tailor_client_budget_waits_total`).
    pub fn waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }

    /// The bytes the client holding the most holds, and how many clients have an entry.
    pub fn largest(&self) -> (u64, usize) {
        // upgraded under the lock, dropped after it: a last reference dropped here removes its
        // entry, which takes the lock
        let live: Vec<Arc<Share>> = self.table.lock().values().filter_map(Weak::upgrade).collect();
        (live.iter().map(|s| s.used()).max().unwrap_or(0), live.len())
    }
}

impl Share {
    /// Bytes this client's connections hold beyond their idle buffers.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    fn take(&self, n: u64) -> Result<(), Exhausted> {
        take(&self.used, self.shares.max, n).map_err(|max| Exhausted::Client { max, addr: self.addr })
    }

    fn give_back(&self, n: u64) {
        if n > 0 {
            give_back(&self.used, n);
            self.room.notify_waiters();
        }
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut table = self.shares.table.lock();
        // a new connection from the address may have put a live share in its place already
        if table.get(&self.addr).is_some_and(|w| w.strong_count() == 0) {
            table.remove(&self.addr);
        }
    }
}

/// The client an address belongs to: an IPv4 address (an IPv4-mapped IPv6 one too), or an
/// IPv6 address's /64 (one host is usually given a whole /64, so it is one client).
fn client_of(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !(u64::MAX as u128)).into()),
        },
        v4 => v4,
    }
}

/// Bytes one connection holds from a [`Budget`] (and, beyond its first `free` bytes, from its
/// client's [`Share`]); given back when dropped.
#[derive(Debug)]
pub struct Lease {
    budget: Arc<Budget>,
    share: Option<Arc<Share>>,
    free: u64,
    held: u64,
}

impl Lease {
    /// Bytes held.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Hold exactly `n` bytes: grows from the share and the budget (all or nothing) or gives
    /// bytes back.
    pub fn resize(&mut self, n: u64) -> Result<(), Exhausted> {
        let (was, will) = (self.held.saturating_sub(self.free), n.saturating_sub(self.free));
        if n > self.held {
            if let Some(s) = &self.share {
                s.take(will - was)?;
            }
            if let Err(e) = self.budget.take(n - self.held) {
                self.share.iter().for_each(|s| s.give_back(will - was));
                return Err(e);
            }
        } else {
            self.budget.give_back(self.held - n);
            self.share.iter().for_each(|s| s.give_back(was - will));
        }
        self.held = n;
        Ok(())
    }

    /// [`Lease::resize`], waiting while the client's share is spent for its other connections
    /// to give bytes back, at most until `until` (then the share's error); the budget's error
    /// comes at once. A wait is counted in [`Shares::waits`].
    pub async fn resize_or_wait(&mut self, n: u64, until: tokio::time::Instant) -> Result<(), Exhausted> {
        let Some(share) = self.share.clone() else { return self.resize(n) };
        let mut counted = false;
        loop {
            // registered before trying, so bytes given back in between wake it
            let room = share.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.resize(n) {
                Err(e @ Exhausted::Client { .. }) => {
                    if !counted {
                        share.shares.waits.fetch_add(1, Ordering::Relaxed);
                        counted = true;
                    }
                    if tokio::time::timeout_at(until, room).await.is_err() {
                        return Err(e);
                    }
                }
                done => return done,
            }
        }
    }

    /// Hold `other`'s bytes too (one lease for the replies of a whole `EXEC`); both must lease
    /// from the same budget, and neither from a client's share.
    pub fn absorb(&mut self, mut other: Lease) {
        assert!(Arc::ptr_eq(&self.budget, &other.budget), "leases of two budgets");
        assert!(self.share.is_none() && other.share.is_none(), "absorbing a lease with a share");
        self.held += std::mem::take(&mut other.held);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.resize(0).expect("shrinking a lease cannot fail");
    }
}

/// Most a client connection's input buffer holds beyond its largest command: the header line
/// being read (64 KiB, the parser's longest) and the free room kept for a read, rounded up. A
/// client's share must hold `max_command_bytes` and this, or its largest command could never
/// arrive.
pub const COMMAND_SLACK: u64 = 128 << 10;

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
        assert_eq!(y.resize(50), Err(Exhausted::Node { max: 100 }));
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
    fn one_clients_share_is_bounded_and_the_others_still_lease() {
        let budget = Budget::new(1000);
        let shares = Shares::new(300);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        // two connections of client a, each with 50 bytes outside its share (its idle buffer)
        let mut a1 = budget.lease_shared(shares.of(a), 50);
        let mut a2 = budget.lease_shared(shares.of(a), 50);
        a1.resize(250).unwrap();
        a2.resize(150).unwrap();
        assert_eq!((shares.of(a).used(), budget.used()), (300, 400));
        assert_eq!(a2.resize(151), Err(Exhausted::Client { max: 300, addr: a }));
        assert_eq!((a2.held(), shares.of(a).used(), budget.used()), (150, 300, 400), "refused: nothing moved");
        // a's idle connections still get their idle buffers
        let mut a3 = budget.lease_shared(shares.of(a), 50);
        a3.resize(50).unwrap();
        // client b leases while a's share is full
        let mut b1 = budget.lease_shared(shares.of(b), 50);
        b1.resize(350).unwrap();
        assert_eq!((shares.of(b).used(), budget.used()), (300, 800));
        assert_eq!(shares.largest(), (300, 2));
        // the budget still bounds everyone: client c finds it spent within its share, which the
        // refusal leaves as it was
        let c: IpAddr = "10.0.0.3".parse().unwrap();
        let mut c1 = budget.lease_shared(shares.of(c), 50);
        c1.resize(200).unwrap();
        assert_eq!(c1.resize(251), Err(Exhausted::Node { max: 1000 }));
        assert_eq!((shares.of(c).used(), budget.used()), (150, 1000));
        a1.resize(100).unwrap();
        a2.resize(151).unwrap();
        assert_eq!(shares.of(a).used(), 151);
        // an address's entry goes with its last connection and lease, not before
        let a_share = shares.of(a);
        drop((a1, a2, a3, c1));
        assert_eq!(shares.largest(), (300, 2), "a is still referenced");
        assert_eq!(a_share.used(), 0);
        drop(a_share);
        assert_eq!(shares.largest(), (300, 1));
        drop(b1);
        assert_eq!((shares.largest(), budget.used()), ((0, 0), 0));
        // 0: no bound of its own
        let unbounded = Shares::new(0);
        let mut big = budget.lease_shared(unbounded.of(a), 0);
        big.resize(1000).unwrap();
    }

    #[test]
    fn an_ipv6_client_is_its_64_and_a_mapped_ipv4_one_its_address() {
        let shares = Shares::new(100);
        let one = shares.of("2001:db8:1:2::5".parse().unwrap());
        assert!(Arc::ptr_eq(&one, &shares.of("2001:db8:1:2:ffff::9".parse().unwrap())));
        assert!(!Arc::ptr_eq(&one, &shares.of("2001:db8:1:3::5".parse().unwrap())));
        let v4 = shares.of("127.0.0.1".parse().unwrap());
        assert!(Arc::ptr_eq(&v4, &shares.of("::ffff:127.0.0.1".parse().unwrap())));
        assert!(!Arc::ptr_eq(&v4, &shares.of("127.0.0.2".parse().unwrap())));
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_waits_for_its_clients_share_until_its_deadline() {
        use tokio::time::{sleep, Instant};
        let budget = Budget::new(1000);
        let shares = Shares::new(100);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let mut holder = budget.lease_shared(shares.of(a), 0);
        holder.resize(100).unwrap();
        // freed after 1 s: the waiting connection grows then
        let mut waiter = budget.lease_shared(shares.of(a), 0);
        let start = Instant::now();
        let grow = waiter.resize_or_wait(60, start + Duration::from_secs(10));
        let free = async {
            sleep(Duration::from_secs(1)).await;
            holder.resize(30).unwrap();
        };
        let (grown, ()) = tokio::join!(grow, free);
        grown.unwrap();
        assert_eq!((start.elapsed(), shares.of(a).used(), shares.waits()), (Duration::from_secs(1), 90, 1));
        // nobody gives back: refused at the deadline, nothing held more
        let refused = waiter.resize_or_wait(80, start + Duration::from_secs(3)).await;
        assert_eq!(refused, Err(Exhausted::Client { max: 100, addr: a }));
        assert_eq!((start.elapsed(), waiter.held(), shares.waits()), (Duration::from_secs(3), 60, 2));
        // the budget's refusal is not waited for
        let mut other = budget.lease_shared(Shares::new(0).of("10.0.0.2".parse().unwrap()), 0);
        assert_eq!(
            other.resize_or_wait(2000, start + Duration::from_secs(60)).await,
            Err(Exhausted::Node { max: 1000 })
        );
        assert_eq!(start.elapsed(), Duration::from_secs(3));
    }

    #[test]
    fn keys_above_the_limit_are_named() {
        assert!(check_key(&[0; 10], 10).is_ok());
        let e = check_key(&[0; 66_000], 65_527).unwrap_err();
        assert_eq!(e, "key is 66000 bytes, above the 65527-byte limit (max_key_bytes)");
        assert_eq!(check_key(b"", 10).unwrap_err(), EMPTY_KEY);
    }
}
