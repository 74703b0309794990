//! RESP client connections: the accept loop with its connection cap, and one connection's
//! bounded input buffer, pipelining and timeouts. Parsing is [`crate::resp`]'s job, executing
//! a command [`crate::commands`]'s.
//!
//! Plain-text and TLS clients share this code once the TLS handshake is done ([`crate::tls`]),
//! and so every limit below.
//!
//! Limits, each from the node's config:
//! - `max_clients`, over both listeners together: a plain connection over the cap gets
//!   `-ERR max number of clients reached` and is closed (as Redis does), a TLS one is closed.
//! - `tls_handshake_timeout_ms`: a TLS client must finish its handshake within it.
//! - The buffer holds at most one partial command: complete ones are executed before reading
//!   more, and the parser refuses an argument above `max_value_bytes` or a command above
//!   `max_command_bytes` from its declared length, before buffering it (its bytes are then
//!   skipped as they arrive). The buffer grows with the bytes that arrived, never to a declared
//!   length, and its capacity is leased from the node's `max_buffered_bytes` budget; beyond its
//!   idle 16 KiB, also from its client's share (`max_buffered_bytes_per_client`, the bytes all
//!   connections from one source address hold at once; [`crate::limits::Shares`]). A connection
//!   whose client's share is spent stops reading until the client's other connections give
//!   bytes back, or until its slow-sender deadline, when it gets an error and is closed; one
//!   that finds the budget spent gets the error at once.
//! - `slow_sender_timeout_ms`: a command that started arriving must be complete within it, or
//!   the client gets an error and is disconnected (slowloris); `idle_timeout_ms` (0 = off)
//!   closes a connection that sends nothing, as Redis's `timeout`. A client that takes none of
//!   its replies for `slow_sender_timeout_ms` is disconnected too.
//! - Pipelined plain GETs and SETs of distinct keys run concurrently, at most [`MAX_BATCH`]
//!   at once, with their replies in order (a pipeline's latency is then one round trip to the
//!   replicas, not one per command). Commands run in a flush scope ([`crate::flush_scope`]):
//!   the writes one poll makes share one engine commit and one journal flush or sync.
//! - Replies: pipelined commands run until 64 KiB of replies wait, which are then written before
//!   more run, so a connection holds at most that plus one reply; an MGET reply's bytes are
//!   leased from the `max_buffered_bytes` budget until written.

use crate::commands::{self, Batchable};
use crate::flush_scope::poll_scoped;
use crate::limits::{accept_capped, Exhausted, Lease, COMMAND_SLACK};
use crate::node::Node;
use crate::resp::{parse_bulk_header, parse_command, Limits, Parsed, Protocol, Reply, TooLarge};
use crate::session::Session;
use crate::tls;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

/// Free space a connection's buffer has before each read.
const MIN_SPARE: usize = 4 * 1024;
/// A connection's first buffer, and what a buffer shrinks back to once a large command is done.
const IDLE_BUFFER: usize = 16 * 1024;
/// Reply bytes a connection keeps allocated between commands.
const IDLE_OUT: usize = 64 * 1024;
/// Replies buffered before the connection stops executing commands and writes them.
const OUT_HIGH_WATER: usize = 64 * 1024;

/// Most pipelined commands of one connection run concurrently: bounds the replies a batch
/// buffers (32 × a GET's value) and the futures one connection keeps.
const MAX_BATCH: usize = 32;

/// What a connection does once the commands that were ready ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    /// Write the replies, then read more.
    Read,
    /// Write the replies, then run the commands still buffered.
    Write,
    /// Write the replies, then close.
    Close,
}

/// Accept clients on the plain-text listener and the TLS one (either may be off) until the task
/// is dropped, at most `max_clients` at once over both.
pub async fn serve(node: Arc<Node>, plain: Option<TcpListener>, tls: Option<(TcpListener, TlsAcceptor)>) {
    let slots = Arc::new(Semaphore::new(node.cfg.max_clients));
    let refused = &node.metrics.connections_refused;
    let plain = async {
        let Some(listener) = plain else { return };
        let serve = |sock: TcpStream, slot| {
            let addr = sock.peer_addr().ok();
            drop(tokio::spawn(run(node.clone(), sock, slot, addr)))
        };
        let turn_away = |sock, _| drop(tokio::spawn(refuse(sock, "max number of clients reached".into())));
        accept_capped(listener, slots.clone(), refused, serve, turn_away).await
    };
    let tls = async {
        let Some((listener, acceptor)) = tls else { return };
        let serve = |sock, slot| drop(tokio::spawn(run_tls(node.clone(), acceptor.clone(), sock, slot)));
        // closed at once: the error could only be sent after a handshake, which costs the node
        // CPU for a client it will not serve
        accept_capped(listener, slots.clone(), refused, serve, |sock, _| drop(sock)).await
    };
    tokio::join!(plain, tls);
}

/// Serve a TLS client once its handshake is done; a failed or late handshake is counted in
/// `tailor_tls_handshake_failures_total` and closed (its slot is held meanwhile, so the
/// handshake timeout bounds how long a silent client keeps one).
async fn run_tls(node: Arc<Node>, acceptor: TlsAcceptor, sock: TcpStream, slot: OwnedSemaphorePermit) {
    let addr = sock.peer_addr().ok();
    let within = Duration::from_millis(node.cfg.tls_handshake_timeout_ms);
    match tls::handshake(&acceptor, sock, within).await {
        Ok(stream) => run(node, stream, slot, addr).await,
        Err(e) => {
            node.metrics.tls_handshake_failures.fetch_add(1, Ordering::Relaxed);
            tracing::debug!("TLS handshake failed: {e}");
        }
    }
}

/// Tell a client why it is not served, then close (bounded: a client that does not read
/// cannot keep the task).
async fn refuse(mut sock: TcpStream, why: String) {
    let mut out = Vec::new();
    Reply::err(why).encode(Protocol::Resp2, &mut out);
    let _ = tokio::time::timeout(Duration::from_secs(1), sock.write_all(&out)).await;
    let _ = sock.shutdown().await;
}

/// Bytes of an oversized argument (and the elements after it) still to throw away.
struct Discard {
    skip: u64,
    rest: usize,
    refusal: String,
}

/// One client connection, over plain TCP or TLS.
struct Conn<S> {
    node: Arc<Node>,
    sock: S,
    limits: Limits,
    /// Received bytes; `buf[start..]` are not consumed yet (at most one partial command).
    buf: Vec<u8>,
    start: usize,
    /// Replies not yet written.
    out: Vec<u8>,
    /// The budget share of large replies in `out` (MGET), given back once they are written.
    out_leases: Vec<Lease>,
    discard: Option<Discard>,
    /// The budget share `buf`'s capacity holds.
    lease: Lease,
    /// When the command now partly received began arriving.
    partial_since: Option<Instant>,
    idle: Option<Duration>,
    slow: Duration,
    /// Who the client authenticated as.
    session: Session,
    _slot: OwnedSemaphorePermit,
}

async fn run<S: AsyncRead + AsyncWrite + Unpin>(
    node: Arc<Node>,
    sock: S,
    slot: OwnedSemaphorePermit,
    addr: Option<std::net::SocketAddr>,
) {
    let cfg = &node.cfg;
    let mut c = Conn {
        limits: Limits::new(cfg.max_value_bytes, cfg.max_command_bytes),
        buf: Vec::new(),
        start: 0,
        out: Vec::new(),
        out_leases: Vec::new(),
        discard: None,
        lease: match addr {
            Some(a) => node.budget.lease_shared(node.client_shares.of(a.ip()), IDLE_BUFFER as u64),
            None => node.budget.lease(),
        },
        partial_since: None,
        idle: (cfg.idle_timeout_ms > 0).then(|| Duration::from_millis(cfg.idle_timeout_ms)),
        slow: Duration::from_millis(cfg.slow_sender_timeout_ms),
        session: Session::connected(&node.clients, addr),
        _slot: slot,
        node,
        sock,
    };
    loop {
        let next = c.execute_ready().await;
        if !c.flush().await || next == Next::Close {
            break;
        }
        if next == Next::Write {
            continue;
        }
        c.compact();
        if !c.fill().await {
            break;
        }
    }
    let _ = c.flush().await;
    let _ = c.sock.shutdown().await;
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    /// Execute the complete commands in the buffer, encoding the replies (pipelining), until
    /// none is left or the replies reach [`OUT_HIGH_WATER`] (a client that pipelines reads of
    /// large values must take its replies before more are executed).
    async fn execute_ready(&mut self) -> Next {
        loop {
            if self.discard.is_some() {
                match self.discard_more() {
                    Ok(true) => continue,
                    Ok(false) => return Next::Read,
                    Err(e) => return self.protocol_error(e),
                }
            }
            if self.out.len() >= OUT_HIGH_WATER {
                return Next::Write;
            }
            match parse_command(&self.buf[self.start..], &self.limits) {
                Ok(Parsed::Incomplete) => return Next::Read,
                Ok(Parsed::Skip { used }) => self.start += used,
                Ok(Parsed::Command { args, used }) => {
                    self.start += used;
                    self.partial_since = None;
                    // queued after MULTI, they must go through the session one by one
                    if Batchable::of(&args).is_some() && !self.session.in_transaction() {
                        self.execute_batch(args).await;
                        continue;
                    }
                    let done = poll_scoped(commands::execute(&self.node, &mut self.session, args)).await;
                    done.reply.encode(self.session.protocol(), &mut self.out);
                    self.out_leases.extend(done.lease);
                    if done.close {
                        return Next::Close;
                    }
                }
                Ok(Parsed::TooLarge(t)) => self.start_discard(t),
                Err(e) => return self.protocol_error(e),
            }
        }
    }

    /// Run `first` and the batchable commands right behind it in the buffer concurrently
    /// ([`Batchable`]), encoding their replies in order; stops at the first command that is not
    /// batchable or touches a key a batched write touches (left in the buffer for the caller).
    async fn execute_batch(&mut self, first: Vec<Vec<u8>>) {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            let Ok(Parsed::Command { args, used }) = parse_command(&self.buf[self.start..], &self.limits) else {
                break;
            };
            let Some(this) = Batchable::of(&args) else { break };
            let conflict = batch.iter().any(|b| {
                let other = Batchable::of(b).expect("only batchable commands are batched");
                other.key == this.key && (other.write || this.write)
            });
            if conflict {
                break;
            }
            self.start += used;
            batch.push(args);
        }
        // batchable commands only read the session, so each runs with a copy of it
        if let Some(last) = batch.last() {
            self.session.touch(&String::from_utf8_lossy(&last[0]).to_ascii_lowercase());
        }
        let mut sessions: Vec<Session> = batch.iter().map(|_| self.session.snapshot()).collect();
        let node = &self.node;
        let runs = sessions.iter_mut().zip(batch).map(|(session, args)| commands::execute(node, session, args));
        // one engine commit and one flush or sync for the batch's writes ([`crate::flush_scope`])
        for done in poll_scoped(futures_util::future::join_all(runs)).await {
            done.reply.encode(self.session.protocol(), &mut self.out);
            self.out_leases.extend(done.lease);
        }
    }

    /// Refuse a command over a size limit: skip its remaining bytes as they arrive.
    fn start_discard(&mut self, t: TooLarge) {
        self.node.metrics.limit_refusals.fetch_add(1, Ordering::Relaxed);
        self.start += t.used;
        let refusal = t.refusal(&self.limits);
        self.discard = Some(Discard { skip: t.skip, rest: t.rest, refusal });
    }

    /// Throw away what arrived of a refused command; Ok(true) once it is all gone (the refusal
    /// is then encoded), Ok(false) when more must arrive.
    fn discard_more(&mut self) -> Result<bool, crate::resp::ProtocolError> {
        let Some(d) = self.discard.as_mut() else { return Ok(true) };
        loop {
            let take = d.skip.min((self.buf.len() - self.start) as u64);
            self.start += take as usize;
            d.skip -= take;
            if d.skip > 0 {
                return Ok(false);
            }
            if d.rest == 0 {
                break;
            }
            let Some((len, used)) = parse_bulk_header(&self.buf[self.start..], &self.limits)? else {
                return Ok(false);
            };
            self.start += used;
            d.skip = len + 2;
            d.rest -= 1;
        }
        let d = self.discard.take().expect("a discard in progress");
        Reply::err(d.refusal).encode(self.session.protocol(), &mut self.out);
        self.partial_since = None;
        Ok(true)
    }

    /// Reply to input that is not RESP; the connection closes after it.
    fn protocol_error(&mut self, e: crate::resp::ProtocolError) -> Next {
        self.node.metrics.protocol_errors.fetch_add(1, Ordering::Relaxed);
        Reply::err(e).encode(self.session.protocol(), &mut self.out);
        Next::Close
    }

    /// Write the pending replies; false if the client is gone, or took none of them for
    /// `slow_sender_timeout_ms` (a client that stops reading its replies is closed).
    async fn flush(&mut self) -> bool {
        if self.out.is_empty() {
            return true;
        }
        let mut written = 0;
        let mut ok = true;
        while ok && written < self.out.len() {
            match tokio::time::timeout(self.slow, self.sock.write(&self.out[written..])).await {
                Ok(Ok(n)) if n > 0 => written += n,
                Ok(_) => ok = false,
                Err(_) => {
                    self.node.metrics.connections_timed_out.fetch_add(1, Ordering::Relaxed);
                    ok = false;
                }
            }
        }
        // flush: TLS may hold the last record back until asked
        ok = ok && matches!(tokio::time::timeout(self.slow, self.sock.flush()).await, Ok(Ok(())));
        self.out.clear();
        self.out.shrink_to(IDLE_OUT);
        self.out_leases.clear();
        ok
    }

    /// Drop consumed bytes; give a large buffer's memory back once no command is partly in it.
    fn compact(&mut self) {
        self.buf.drain(..self.start);
        self.start = 0;
        let pending = !self.buf.is_empty() || self.discard.is_some();
        if pending {
            self.partial_since.get_or_insert_with(Instant::now);
        } else {
            self.partial_since = None;
        }
        if self.buf.capacity() > IDLE_BUFFER && self.buf.len() <= IDLE_BUFFER / 2 {
            self.buf.shrink_to(IDLE_BUFFER);
            let held = self.lease.held().min(self.buf.capacity() as u64);
            self.lease.resize(held).expect("shrinking a lease cannot fail");
        }
        // what the parser lets stay: one partial command and one header line being read
        let bound = self.limits.max_command + self.limits.max_line as u64 + 4;
        assert!(self.buf.len() as u64 <= bound, "a connection buffered {} bytes, above {bound}", self.buf.len());
    }

    /// Read more bytes within the idle or slow-sender deadline; false when the connection ends.
    async fn fill(&mut self) -> bool {
        if let Err(e) = self.make_room().await {
            self.node.metrics.limit_refusals.fetch_add(1, Ordering::Relaxed);
            let waited = match e {
                Exhausted::Client { .. } => format!(" for {} ms (slow_sender_timeout_ms)", self.slow.as_millis()),
                Exhausted::Node { .. } => String::new(),
            };
            Reply::err(format!("{e}{waited}; closing the connection")).encode(self.session.protocol(), &mut self.out);
            return false;
        }
        let deadline = self.deadline();
        let read = self.sock.read_buf(&mut self.buf);
        let got = match deadline {
            Some(at) => match tokio::time::timeout_at(at, read).await {
                Ok(r) => r,
                Err(_) => return self.timed_out(),
            },
            None => read.await,
        };
        matches!(got, Ok(n) if n > 0)
    }

    fn deadline(&self) -> Option<Instant> {
        match self.partial_since {
            Some(t) => Some(t + self.slow),
            None => self.idle.map(|d| Instant::now() + d),
        }
    }

    /// The deadline passed: a slow sender gets an error, an idle client is closed silently.
    fn timed_out(&mut self) -> bool {
        self.node.metrics.connections_timed_out.fetch_add(1, Ordering::Relaxed);
        if self.partial_since.is_some() {
            let ms = self.slow.as_millis();
            Reply::err(format!("command not received within {ms} ms (slow_sender_timeout_ms); closing the connection"))
                .encode(self.session.protocol(), &mut self.out);
        }
        false
    }

    /// Ensure [`MIN_SPARE`] free bytes, growing the buffer (doubling, leased, never beyond one
    /// command and [`COMMAND_SLACK`]) when needed; waits while the client's share is spent, at
    /// most until the command's slow-sender deadline.
    async fn make_room(&mut self) -> Result<(), Exhausted> {
        let (len, cap) = (self.buf.len(), self.buf.capacity());
        if cap - len >= MIN_SPARE {
            return Ok(());
        }
        let most = (self.limits.max_command + COMMAND_SLACK) as usize;
        let want = (cap * 2).min(most).max(len + MIN_SPARE).max(IDLE_BUFFER);
        let until = self.partial_since.unwrap_or_else(Instant::now) + self.slow;
        self.lease.resize_or_wait(want as u64, until).await?;
        self.buf.reserve_exact(want - len);
        Ok(())
    }
}
