//! The replica's side of the internode protocol: the accept loop with its connection cap, and
//! one peer connection reading frames (bounded, allocated as they arrive, timed), handing
//! requests to the replica and writing the replies. Framing is [`crate::internode`]'s job.
//!
//! Limits, each from the node's config: `max_peer_connections` (over it a connection is closed
//! at once, counted and logged); a frame's declared length above the frame limit (the largest
//! value plus room for key and facts) closes the connection before anything is allocated; a
//! frame's body grows as its bytes arrive, leased from the node's `max_buffered_bytes` budget;
//! a frame that started arriving must be complete within `slow_sender_timeout_ms`, and a
//! connection silent for `idle_timeout_ms` (0 = off; peers heartbeat every `heartbeat_ms`) is
//! closed. A request whose key is above `max_key_bytes` or whose value is above
//! `max_value_bytes` gets a `Failed` reply and never reaches the replica.

use crate::flush_scope::poll_scoped;
use crate::internode::{finish_frame, wait_frame, DecodeError, Failure, Message};
use crate::limits::{accept_capped, check_key, Lease};
use crate::node::Node;
use crate::replica::{Outcome, Work};
use crate::transport::Transport;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tailor_core::model::Tags;
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, OwnedSemaphorePermit};

/// Accept peers until the task is dropped, at most `max_peer_connections` at once. A
/// connection is polled in a flush scope ([`crate::flush_scope`]): the writes of the frames one
/// poll reads share one engine batch and one journal flush or sync, as a client's pipeline does.
pub async fn serve(node: Arc<Node>, listener: TcpListener, max_frame: u64) {
    let serve = |sock, slot| drop(tokio::spawn(poll_scoped(run(node.clone(), sock, max_frame, slot))));
    let refuse = |_, from| tracing::warn!(%from, "internode connection refused: max_peer_connections reached");
    accept_capped(listener, node.peer_slots.clone(), &node.metrics.connections_refused, serve, refuse).await
}

/// Why a peer connection stopped reading.
enum Stop {
    /// The peer closed it.
    Eof,
    /// Bad or oversized input.
    Bad(DecodeError),
    /// A message a replica does not take (a reply), with its id.
    Unexpected(u64),
    /// Nothing arrived within the idle timeout, or a frame did not complete in time.
    TimedOut(&'static str),
}

async fn run(node: Arc<Node>, sock: TcpStream, max_frame: u64, _slot: OwnedSemaphorePermit) {
    let (mut rd, wr) = sock.into_split();
    let (tx, rx) = mpsc::channel::<Vec<u8>>(1024);
    // the coordinator on the other end, once its hello arrived (its Bloom delta cursor)
    let mut receiver: Option<u32> = None;
    let writer = tokio::spawn(crate::internode::writer::write_frames(rx, wr));
    let mut lease = node.peer_budget.lease();
    let link = Link { tx: tx.clone(), queued: Arc::default() };
    let stop = loop {
        let msg = match next_message(&node, &mut rd, max_frame, &mut lease).await {
            Ok(m) => m,
            Err(stop) => break stop,
        };
        match msg {
            Message::Hello { from, .. } if (from as usize) < node.cfg.members.len() => {
                tracing::info!(peer = from, "connection from peer accepted");
                receiver = Some(from);
            }
            Message::Ping { id, clock } => {
                node.hlc.observe_micros(clock);
                let feedback = node.replica.feedback_for(receiver);
                let healthy = node.replica.healthy();
                let (clock, wall) = (node.hlc.peek_us(), node.hlc.wall_us());
                // what this node holds for the pinging one, and whether it is itself recovering
                let hints = node.hints.as_ref().zip(receiver).map_or(0, |(h, to)| h.waiting_for(to));
                let recovering = node.network.recovery.level(|n| node.network.is_up(n));
                let pong = Message::Pong { id, feedback, healthy, clock, wall, hints, recovering };
                let _ = tx.send(node.seal.encode(&pong)).await;
            }
            Message::Read { id, key, tags, age } => request(&node, &link, id, Work::Read { key }, tags, age, receiver),
            Message::Write { id, key, version, value, tags, age } => {
                let work = Work::Write { key, version, value: value.map(Arc::new) };
                request(&node, &link, id, work, tags, age, receiver)
            }
            Message::Cancel { id } => cancel(&node, &link, id),
            Message::Probe { id } => {
                // answered here, at once: a probe never waits behind the requests it measures
                let p = node.replica.probe();
                let _ = tx.send(node.seal.encode(&Message::ProbeReply { id, rif: p.rif, latency: p.latency })).await;
            }
            m @ (Message::TreeRequest { .. } | Message::KeysRequest { .. }) => {
                crate::anti_entropy::serve(&node, &tx, m)
            }
            Message::Incr { id, key, by, level } => crate::commands::serve_incr(&node, &tx, id, key, by, level),
            other => break Stop::Unexpected(other.id()),
        }
    };
    match stop {
        Stop::Eof => tracing::info!(peer = ?receiver, "connection from peer closed"),
        Stop::Bad(e) => {
            node.metrics.protocol_errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("dropping internode connection: {e}");
        }
        Stop::Unexpected(id) => {
            node.metrics.protocol_errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("dropping internode connection: unexpected reply (id {id}) sent to a replica");
        }
        Stop::TimedOut(what) => {
            node.metrics.connections_timed_out.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("dropping internode connection: {what}");
        }
    }
    drop((tx, link));
    // let replies already queued go out; the writer ends when the last sender (a pending job) drops
    let _ = writer.await;
}

/// The next frame, decoded: waits at most the idle timeout for its first byte, then at most the
/// slow-sender timeout for the rest. The frame's lease is given back once it is decoded.
async fn next_message(node: &Node, rd: &mut OwnedReadHalf, max: u64, lease: &mut Lease) -> Result<Message, Stop> {
    let cfg = &node.cfg;
    let first = match cfg.idle_timeout_ms {
        0 => wait_frame(rd).await,
        ms => tokio::time::timeout(Duration::from_millis(ms), wait_frame(rd))
            .await
            .map_err(|_| Stop::TimedOut("idle past idle_timeout_ms"))?,
    };
    let first = first.map_err(Stop::Bad)?.ok_or(Stop::Eof)?;
    let slow = Duration::from_millis(cfg.slow_sender_timeout_ms);
    let body = tokio::time::timeout(slow, finish_frame(rd, first, max, lease))
        .await
        .map_err(|_| Stop::TimedOut("frame not received within slow_sender_timeout_ms"))?
        .map_err(Stop::Bad)?;
    let msg = node.seal.decode(&body).map_err(|e| {
        if e == DecodeError::Forged {
            node.metrics.forged_frames.fetch_add(1, Ordering::Relaxed);
        }
        Stop::Bad(e)
    });
    drop(body);
    lease.resize(0).expect("shrinking a lease cannot fail");
    msg
}

/// Why a request is refused before reaching the replica, if it is.
fn refusal(node: &Node, work: &Work) -> Option<(String, Failure)> {
    let (key, value) = match work {
        Work::Read { key } => (key, None),
        Work::Write { key, value, .. } => (key, value.as_ref()),
    };
    if let Err(e) = check_key(key, node.cfg.max_key_bytes) {
        return Some((e, Failure::ForGood));
    }
    if let Some(Err(e)) =
        value.filter(|v| crate::counter::is_counter(v)).map(|v| crate::counter::check(v, node.cfg.members.len()))
    {
        return Some((e.to_string(), Failure::ForGood));
    }
    let len = value.map_or(0, |v| v.len() as u64);
    let max = node.cfg.max_value_bytes;
    if len > max {
        let e = format!("value of {len} bytes exceeds the maximum of {max} bytes (max_value_bytes)");
        return Some((e, Failure::ForGood));
    }
    match work {
        // a version from the future would win every later write (see hlc.rs)
        Work::Write { version, .. } => node.hlc.admit(*version).err().map(|e| {
            // a replica whose own clock is in doubt says "not now": the copy is hinted, and
            // replayed once its clock is corrected (hlc.rs)
            let failure = if node.hlc.trusted() { Failure::FromTheFuture } else { Failure::Now };
            (e.to_string(), failure)
        }),
        Work::Read { .. } => None,
    }
}

/// Where a connection's replies go, and its reads still at the replica: by request id, the
/// replica's job id (what a [`Message::Cancel`] names).
struct Link {
    tx: mpsc::Sender<Vec<u8>>,
    queued: Arc<Mutex<HashMap<u64, u64>>>,
}

fn lock(queued: &Mutex<HashMap<u64, u64>>) -> std::sync::MutexGuard<'_, HashMap<u64, u64>> {
    queued.lock().unwrap_or_else(|p| p.into_inner())
}

/// The coordinator cancelled read `id`: if it still waits at the replica it is dropped, and
/// answered at once as failed (the coordinator forgot it; its exchange ends now rather than
/// at its timeout). A read already running finishes and answers as usual.
fn cancel(node: &Node, link: &Link, id: u64) {
    let mut queued = lock(&link.queued);
    let Some(&job) = queued.get(&id) else { return };
    if !node.replica.cancel(job) {
        return;
    }
    queued.remove(&id);
    drop(queued);
    let frame = node.seal.encode(&Message::Failed { id, reason: "cancelled".into(), failure: Failure::Now });
    let tx = link.tx.clone();
    tokio::spawn(async move { tx.send(frame).await });
}

/// Hand a request to the replica; its reply (or refusal) goes out through `link`.
fn request(node: &Node, link: &Link, id: u64, work: Work, tags: Tags, age: u64, receiver: Option<u32>) {
    let tx = &link.tx;
    if let Some((reason, failure)) = refusal(node, &work) {
        node.metrics.limit_refusals.fetch_add(1, Ordering::Relaxed);
        let (tx, frame) = (tx.clone(), node.seal.encode(&Message::Failed { id, reason, failure }));
        tokio::spawn(async move { tx.send(frame).await });
        return;
    }
    let read = matches!(work, Work::Read { .. });
    let (job, done) = node.replica.submit_tracked(work, tags, age, receiver);
    let queued = (read && job != 0).then(|| link.queued.clone());
    if let Some(q) = &queued {
        lock(q).insert(id, job);
    }
    let (tx, seal) = (tx.clone(), node.seal.clone());
    tokio::spawn(async move {
        let done = done.await;
        if queued.is_some_and(|q| lock(&q).remove(&id).is_none()) {
            // cancelled while it waited, and answered then
            return;
        }
        let reply = match done {
            Ok(d) => match d.outcome {
                Ok(Outcome::Read(v)) => {
                    Message::ReadReply { id, version: v.version, value: v.value, feedback: d.feedback }
                }
                Ok(Outcome::Written(applied)) => Message::WriteAck { id, applied, feedback: d.feedback },
                Err(reason) => Message::Failed { id, reason, failure: Failure::Now },
            },
            Err(_) => Message::Failed { id, reason: "replica stopped".into(), failure: Failure::Now },
        };
        let _ = tx.send(seal.encode(&reply)).await;
    });
}
