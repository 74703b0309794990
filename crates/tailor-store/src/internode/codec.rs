//! Hand-written binary encoding of [`Message`]: `u32` big-endian length of what follows, a
//! version byte, a kind byte, then the fields in little-endian order. Byte strings are `u32`
//! length + bytes. Decoding never trusts a length beyond the frame it is in.

use super::message::{Failure, Message, MAX_PROBE_LATENCY, MAX_PROBE_RIF};
use crate::limits::Lease;
use crate::merkle::{Hash, HASH_BYTES, MAX_DEPTH};
use crate::storage::KeyVersion;
use tailor_core::facts::Feedback;
use tailor_core::model::Tags;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Protocol version carried by every frame.
pub const VERSION: u8 = 10;

/// Bytes reserved for a frame's body before any of it arrived; the body then grows (doubling)
/// with the bytes that came, so a frame that declares 17 MB and stalls costs at most this.
pub const FIRST_RESERVE: usize = 64 * 1024;

const READ: u8 = 1;
const WRITE: u8 = 2;
const PING: u8 = 3;
const READ_REPLY: u8 = 4;
const WRITE_ACK: u8 = 5;
const PONG: u8 = 6;
const FAILED: u8 = 7;
const HELLO: u8 = 8;
const TREE_REQUEST: u8 = 9;
const TREE_REPLY: u8 = 10;
const KEYS_REQUEST: u8 = 11;
const KEYS_REPLY: u8 = 12;
const INCR: u8 = 13;
const INCR_REPLY: u8 = 14;
const CANCEL: u8 = 15;
const PROBE: u8 = 16;
const PROBE_REPLY: u8 = 17;

/// Most keys one [`Message::KeysReply`] may list.
pub const MAX_LISTED: usize = 4096;

/// A frame that cannot be decoded.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DecodeError {
    /// The frame ended inside a field.
    #[error("internode frame truncated at byte {0}")]
    Truncated(usize),
    /// Unknown protocol version.
    #[error("internode frame has version {0}, expected {VERSION}")]
    Version(u8),
    /// Unknown message kind.
    #[error("internode frame has unknown kind {0}")]
    Kind(u8),
    /// Bytes left after the message.
    #[error("internode frame has {0} trailing bytes")]
    Trailing(usize),
    /// A string field is not UTF-8.
    #[error("internode frame has a non-UTF-8 string")]
    Utf8,
    /// A failure reply's kind byte is none the protocol knows.
    #[error("unknown failure kind in an internode reply")]
    Failure,
    /// The declared frame length is above the limit.
    #[error("internode frame of {len} bytes exceeds the limit of {max}")]
    TooLong {
        /// Declared length.
        len: u64,
        /// Limit.
        max: u64,
    },
    /// The connection failed.
    #[error("internode connection: {0}")]
    Io(String),
    /// The node's input budget cannot hold the frame.
    #[error("internode frame refused: {0}")]
    Budget(String),
    /// A count in the frame is above its limit.
    #[error("internode frame lists {n} {what}, above the limit of {max}")]
    TooMany {
        /// What is counted.
        what: &'static str,
        /// The count.
        n: u64,
        /// The limit.
        max: u64,
    },
    /// The frame's tag does not verify with the cluster secret (or it has none).
    #[error("internode frame is not signed with this cluster's secret (cluster_secret)")]
    Forged,
}

struct W(Vec<u8>);

impl W {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn opt(&mut self, b: &Option<Vec<u8>>) {
        match b {
            Some(b) => {
                self.u8(1);
                self.bytes(b);
            }
            None => self.u8(0),
        }
    }
    fn tags(&mut self, t: &Tags) {
        self.u8(t.priority);
        self.u8(t.size_class);
        self.u16(t.flow);
        self.u16(t.bottleneck_us);
    }
    fn feedback(&mut self, f: &Feedback) {
        self.u32(f.from);
        self.u64(f.timestamp);
        self.u32(f.queue_len);
        self.u64(f.service_time);
        self.u64(f.completed);
        self.u8(f.busy as u8);
        self.u64(f.dq as u64);
        self.u64(f.pending_work);
        self.u32(f.bloom_generation);
        self.u64(f.utilization.to_bits());
        self.u32(f.bloom_bits.len() as u32);
        for b in &f.bloom_bits {
            self.u32(*b);
        }
    }
}

struct R<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> R<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() - self.pos < n {
            return Err(DecodeError::Truncated(self.pos));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        let mut a = [0u8; 2];
        a.copy_from_slice(self.take(2)?);
        Ok(u16::from_le_bytes(a))
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn bytes(&mut self) -> Result<Vec<u8>, DecodeError> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    fn opt(&mut self) -> Result<Option<Vec<u8>>, DecodeError> {
        Ok(match self.u8()? {
            0 => None,
            _ => Some(self.bytes()?),
        })
    }
    fn tags(&mut self) -> Result<Tags, DecodeError> {
        Ok(Tags { priority: self.u8()?, size_class: self.u8()?, flow: self.u16()?, bottleneck_us: self.u16()? })
    }
    fn feedback(&mut self) -> Result<Feedback, DecodeError> {
        let mut f = Feedback {
            from: self.u32()?,
            timestamp: self.u64()?,
            queue_len: self.u32()?,
            service_time: self.u64()?,
            completed: self.u64()?,
            busy: self.u8()? != 0,
            dq: self.u64()? as i64,
            pending_work: self.u64()?,
            bloom_generation: self.u32()?,
            utilization: f64::from_bits(self.u64()?),
            bloom_bits: Vec::new(),
        };
        let n = self.count("Bloom bits", u32::MAX as usize, 4)?;
        f.bloom_bits = (0..n).map(|_| self.u32()).collect::<Result<_, _>>()?;
        Ok(f)
    }
    /// A count of items of at least `least` bytes each, at most `max`, checked against what
    /// the frame can still hold before anything is allocated for them.
    fn count(&mut self, what: &'static str, max: usize, least: usize) -> Result<usize, DecodeError> {
        let n = self.u32()? as usize;
        if n > max {
            return Err(DecodeError::TooMany { what, n: n as u64, max: max as u64 });
        }
        if n > (self.buf.len() - self.pos) / least {
            return Err(DecodeError::Truncated(self.pos));
        }
        Ok(n)
    }
    /// A number a peer sends, refused above `max` (named `what` in the error).
    fn bounded(&mut self, what: &'static str, n: u64, max: u64) -> Result<u64, DecodeError> {
        if n > max {
            return Err(DecodeError::TooMany { what, n, max });
        }
        Ok(n)
    }
    fn probe_reply(&mut self) -> Result<Message, DecodeError> {
        let id = self.u64()?;
        let rif = self.u32()?;
        let rif = self.bounded("requests in flight (probe reply)", rif as u64, MAX_PROBE_RIF as u64)? as u32;
        let latency = self.u64()?;
        let latency = self.bounded("ns of latency (probe reply)", latency, MAX_PROBE_LATENCY)?;
        Ok(Message::ProbeReply { id, rif, latency })
    }
    fn leaves(&mut self) -> Result<Vec<Hash>, DecodeError> {
        let n = self.count("tree leaves", 1 << MAX_DEPTH, HASH_BYTES)?;
        (0..n).map(|_| Ok(self.take(HASH_BYTES)?.try_into().expect("took HASH_BYTES"))).collect()
    }
    fn entries(&mut self) -> Result<Vec<KeyVersion>, DecodeError> {
        let n = self.count("keys", MAX_LISTED, 13)?;
        (0..n)
            .map(|_| Ok(KeyVersion { key: self.bytes()?, version: self.u64()?, tombstone: self.u8()? != 0 }))
            .collect()
    }
}

/// Encode `msg` as a whole frame (length prefix included).
pub fn encode(msg: &Message) -> Vec<u8> {
    let mut w = W(vec![0, 0, 0, 0, VERSION]);
    match msg {
        Message::Read { id, key, tags, age } => {
            w.u8(READ);
            w.u64(*id);
            w.bytes(key);
            w.tags(tags);
            w.u64(*age);
        }
        Message::Write { id, key, version, value, tags, age } => {
            w.u8(WRITE);
            w.u64(*id);
            w.bytes(key);
            w.u64(*version);
            w.opt(value);
            w.tags(tags);
            w.u64(*age);
        }
        Message::Hello { id, from } => {
            w.u8(HELLO);
            w.u64(*id);
            w.u32(*from);
        }
        Message::Ping { id, clock } => {
            w.u8(PING);
            w.u64(*id);
            w.u64(*clock);
        }
        Message::ReadReply { id, version, value, feedback } => {
            w.u8(READ_REPLY);
            w.u64(*id);
            w.u64(*version);
            w.opt(value);
            w.feedback(feedback);
        }
        Message::WriteAck { id, applied, feedback } => {
            w.u8(WRITE_ACK);
            w.u64(*id);
            w.u8(*applied as u8);
            w.feedback(feedback);
        }
        Message::Pong { id, feedback, healthy, clock, wall, hints, recovering } => {
            w.u8(PONG);
            w.u64(*id);
            w.feedback(feedback);
            w.u8(*healthy as u8);
            w.u64(*clock);
            w.u64(*wall);
            w.u64(*hints);
            w.u8(*recovering);
        }
        Message::TreeRequest { id, first, last, depth, cutoff } => {
            w.u8(TREE_REQUEST);
            w.u64(*id);
            w.u64(*first);
            w.u64(*last);
            w.u8(*depth);
            w.u64(*cutoff);
        }
        Message::TreeReply { id, leaves } => {
            w.u8(TREE_REPLY);
            w.u64(*id);
            w.u32(leaves.len() as u32);
            leaves.iter().for_each(|l| w.0.extend_from_slice(l));
        }
        Message::KeysRequest { id, first, last, after } => {
            w.u8(KEYS_REQUEST);
            w.u64(*id);
            w.u64(*first);
            w.u64(*last);
            w.opt(after);
        }
        Message::KeysReply { id, entries, more } => {
            w.u8(KEYS_REPLY);
            w.u64(*id);
            w.u32(entries.len() as u32);
            for e in entries {
                w.bytes(&e.key);
                w.u64(e.version);
                w.u8(e.tombstone as u8);
            }
            w.u8(*more as u8);
        }
        Message::Incr { id, key, by, level } => {
            w.u8(INCR);
            w.u64(*id);
            w.bytes(key);
            w.u64(*by as u64);
            w.u8(*level);
        }
        Message::IncrReply { id, total } => {
            w.u8(INCR_REPLY);
            w.u64(*id);
            w.u64(*total as u64);
        }
        Message::Cancel { id } => {
            w.u8(CANCEL);
            w.u64(*id);
        }
        Message::Probe { id } => {
            w.u8(PROBE);
            w.u64(*id);
        }
        Message::ProbeReply { id, rif, latency } => {
            w.u8(PROBE_REPLY);
            w.u64(*id);
            w.u32(*rif);
            w.u64(*latency);
        }
        Message::Failed { id, reason, failure } => {
            w.u8(FAILED);
            w.u64(*id);
            w.bytes(reason.as_bytes());
            w.u8(failure.code());
        }
    }
    let len = (w.0.len() - 4) as u32;
    w.0[..4].copy_from_slice(&len.to_be_bytes());
    // a debug build decodes every frame it encodes (issue 31, item 8): a field added to a
    // message or to the facts without its entry here fails the first test that sends it
    debug_assert_eq!(decode(&w.0[4..]).as_ref(), Ok(msg), "an internode frame decodes to the message it encodes");
    w.0
}

/// Decode a frame body (after the length prefix).
pub fn decode(body: &[u8]) -> Result<Message, DecodeError> {
    let mut r = R { buf: body, pos: 0 };
    let version = r.u8()?;
    if version != VERSION {
        return Err(DecodeError::Version(version));
    }
    let kind = r.u8()?;
    let msg = match kind {
        READ => Message::Read { id: r.u64()?, key: r.bytes()?, tags: r.tags()?, age: r.u64()? },
        WRITE => Message::Write {
            id: r.u64()?,
            key: r.bytes()?,
            version: r.u64()?,
            value: r.opt()?,
            tags: r.tags()?,
            age: r.u64()?,
        },
        PING => Message::Ping { id: r.u64()?, clock: r.u64()? },
        HELLO => Message::Hello { id: r.u64()?, from: r.u32()? },
        READ_REPLY => Message::ReadReply { id: r.u64()?, version: r.u64()?, value: r.opt()?, feedback: r.feedback()? },
        WRITE_ACK => Message::WriteAck { id: r.u64()?, applied: r.u8()? != 0, feedback: r.feedback()? },
        PONG => Message::Pong {
            id: r.u64()?,
            feedback: r.feedback()?,
            healthy: r.u8()? != 0,
            clock: r.u64()?,
            wall: r.u64()?,
            hints: r.u64()?,
            recovering: r.u8()?,
        },
        TREE_REQUEST => {
            Message::TreeRequest { id: r.u64()?, first: r.u64()?, last: r.u64()?, depth: r.u8()?, cutoff: r.u64()? }
        }
        TREE_REPLY => Message::TreeReply { id: r.u64()?, leaves: r.leaves()? },
        KEYS_REQUEST => Message::KeysRequest { id: r.u64()?, first: r.u64()?, last: r.u64()?, after: r.opt()? },
        KEYS_REPLY => Message::KeysReply { id: r.u64()?, entries: r.entries()?, more: r.u8()? != 0 },
        INCR => Message::Incr { id: r.u64()?, key: r.bytes()?, by: r.u64()? as i64, level: r.u8()? },
        INCR_REPLY => Message::IncrReply { id: r.u64()?, total: r.u64()? as i64 },
        CANCEL => Message::Cancel { id: r.u64()? },
        PROBE => Message::Probe { id: r.u64()? },
        PROBE_REPLY => r.probe_reply()?,
        FAILED => {
            let id = r.u64()?;
            let reason = String::from_utf8(r.bytes()?).map_err(|_| DecodeError::Utf8)?;
            let failure = Failure::from_code(r.u8()?).ok_or(DecodeError::Failure)?;
            Message::Failed { id, reason, failure }
        }
        k => return Err(DecodeError::Kind(k)),
    };
    if r.pos != body.len() {
        return Err(DecodeError::Trailing(body.len() - r.pos));
    }
    Ok(msg)
}

/// Read one frame body from `src`, refusing declared lengths above `max`; `Ok(None)` on a clean
/// EOF. The body's memory is leased from `lease` as it grows.
pub async fn read_frame<S: AsyncRead + Unpin>(
    src: &mut S,
    max: u64,
    lease: &mut Lease,
) -> Result<Option<Vec<u8>>, DecodeError> {
    match wait_frame(src).await? {
        Some(first) => finish_frame(src, first, max, lease).await.map(Some),
        None => Ok(None),
    }
}

/// Wait for the first byte of the next frame (split out so a server can time the wait for a
/// frame apart from the frame's arrival); `Ok(None)` on a clean EOF.
pub async fn wait_frame<S: AsyncRead + Unpin>(src: &mut S) -> Result<Option<u8>, DecodeError> {
    let mut first = [0u8; 1];
    match src.read(&mut first).await {
        Ok(0) => Ok(None),
        Ok(_) => Ok(Some(first[0])),
        Err(e) => Err(DecodeError::Io(e.to_string())),
    }
}

/// Read the rest of a frame whose first length byte is `first`: the length is checked against
/// `max` before anything is allocated, and the body grows with the bytes that arrive.
pub async fn finish_frame<S: AsyncRead + Unpin>(
    src: &mut S,
    first: u8,
    max: u64,
    lease: &mut Lease,
) -> Result<Vec<u8>, DecodeError> {
    let io = |e: std::io::Error| DecodeError::Io(e.to_string());
    let mut len = [first, 0, 0, 0];
    src.read_exact(&mut len[1..]).await.map_err(io)?;
    let len = u32::from_be_bytes(len) as u64;
    if len > max {
        return Err(DecodeError::TooLong { len, max });
    }
    let len = len as usize;
    let mut body = Vec::new();
    while body.len() < len {
        if body.len() == body.capacity() {
            let next = (body.capacity() * 2).max(FIRST_RESERVE).min(len);
            lease.resize(next as u64).map_err(|e| DecodeError::Budget(e.to_string()))?;
            body.reserve_exact(next - body.len());
        }
        // into the reserved, untouched capacity: memory is touched only by bytes that arrived
        let rest = (len - body.len()) as u64;
        if (&mut *src).take(rest).read_buf(&mut body).await.map_err(io)? == 0 {
            return Err(DecodeError::Io(format!("connection closed {} bytes into a {len}-byte frame", body.len())));
        }
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fb() -> Feedback {
        Feedback {
            from: 2,
            timestamp: 9,
            queue_len: 3,
            dq: -4,
            bloom_bits: vec![1, 7],
            utilization: 0.625,
            ..Feedback::default()
        }
    }

    /// How many message variants there are ([`variant`]).
    const VARIANTS: usize = 17;

    /// Which variant `m` is: exhaustive, so a new message does not compile here until it is
    /// numbered, and [`every_message_round_trips`] then wants an example of it.
    fn variant(m: &Message) -> usize {
        match m {
            Message::Read { .. } => 0,
            Message::Write { .. } => 1,
            Message::Hello { .. } => 2,
            Message::Ping { .. } => 3,
            Message::ReadReply { .. } => 4,
            Message::WriteAck { .. } => 5,
            Message::Pong { .. } => 6,
            Message::TreeRequest { .. } => 7,
            Message::TreeReply { .. } => 8,
            Message::KeysRequest { .. } => 9,
            Message::KeysReply { .. } => 10,
            Message::Incr { .. } => 11,
            Message::IncrReply { .. } => 12,
            Message::Failed { .. } => 13,
            Message::Cancel { .. } => 14,
            Message::Probe { .. } => 15,
            Message::ProbeReply { .. } => 16,
        }
    }

    #[test]
    fn every_message_round_trips() {
        let msgs = vec![
            Message::Read {
                id: 1,
                key: b"k".to_vec(),
                tags: Tags { priority: 1, size_class: 2, flow: 7, ..Tags::default() },
                age: 1_500,
            },
            Message::Write {
                id: 2,
                key: b"k".to_vec(),
                version: 77,
                value: Some(vec![0; 100]),
                tags: Tags { priority: 3, size_class: 1, flow: u16::MAX, bottleneck_us: u16::MAX },
                age: 9,
            },
            Message::Write { id: 3, key: b"k".to_vec(), version: 78, value: None, tags: Tags::default(), age: 0 },
            Message::Ping { id: 4, clock: 1 << 52 },
            Message::Hello { id: 0, from: 3 },
            Message::ReadReply { id: 5, version: 3, value: Some(b"v".to_vec()), feedback: fb() },
            Message::WriteAck { id: 6, applied: true, feedback: fb() },
            Message::Pong { id: 7, feedback: fb(), healthy: true, clock: 5, wall: 6, hints: 0, recovering: 0 },
            Message::Pong { id: 9, feedback: fb(), healthy: false, clock: u64::MAX, wall: 0, hints: 3, recovering: 2 },
            Message::Pong { id: 10, feedback: fb(), healthy: true, clock: 1, wall: 2, hints: u64::MAX, recovering: 1 },
            Message::Failed { id: 8, reason: "disk".into(), failure: Failure::Now },
            Message::Failed { id: 15, reason: "empty key".into(), failure: Failure::ForGood },
            Message::Failed { id: 16, reason: "ahead".into(), failure: Failure::FromTheFuture },
            Message::TreeRequest { id: 10, first: 5, last: u64::MAX, depth: 10, cutoff: 1 << 60 },
            Message::TreeReply { id: 11, leaves: vec![[7; HASH_BYTES]; 1024] },
            Message::KeysRequest { id: 12, first: 0, last: 99, after: Some(b"k".to_vec()) },
            Message::KeysRequest { id: 13, first: 0, last: 99, after: None },
            Message::Incr { id: 16, key: b"n".to_vec(), by: i64::MIN, level: 2 },
            Message::IncrReply { id: 17, total: -5 },
            Message::Cancel { id: u64::MAX },
            Message::Probe { id: 18 },
            Message::ProbeReply { id: 19, rif: 0, latency: 0 },
            Message::ProbeReply { id: 20, rif: MAX_PROBE_RIF, latency: MAX_PROBE_LATENCY },
            Message::KeysReply {
                id: 14,
                entries: vec![
                    KeyVersion { key: b"a".to_vec(), version: 3, tombstone: false },
                    KeyVersion { key: b"b".to_vec(), version: 4, tombstone: true },
                ],
                more: true,
            },
        ];
        let covered: std::collections::BTreeSet<usize> = msgs.iter().map(variant).collect();
        assert_eq!(covered.len(), VARIANTS, "every message variant is in the list above");
        for m in msgs {
            let frame = encode(&m);
            assert_eq!(u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize, frame.len() - 4);
            assert_eq!(decode(&frame[4..]).unwrap(), m);
        }
    }

    #[test]
    fn malformed_frames_are_errors() {
        let frame = encode(&Message::ReadReply { id: 5, version: 3, value: Some(b"v".to_vec()), feedback: fb() });
        for cut in 0..frame.len() - 4 {
            assert!(decode(&frame[4..4 + cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(decode(&[VERSION + 1, 1]).unwrap_err(), DecodeError::Version(VERSION + 1));
        assert_eq!(decode(&[VERSION, 99]).unwrap_err(), DecodeError::Kind(99));
        let mut long = encode(&Message::Ping { id: 1, clock: 2 });
        long.push(0);
        assert_eq!(decode(&long[4..]).unwrap_err(), DecodeError::Trailing(1));
        // a byte string claiming 4 GB inside a tiny frame
        assert!(matches!(
            decode(&[VERSION, READ, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255]),
            Err(DecodeError::Truncated(_))
        ));
    }

    #[test]
    fn counts_a_peer_sends_are_bounded() {
        let mut head = vec![VERSION, TREE_REPLY];
        head.extend_from_slice(&1u64.to_le_bytes());
        let mut too_deep = head.clone();
        too_deep.extend_from_slice(&(1u32 << 15).to_le_bytes());
        too_deep.extend(vec![0; HASH_BYTES << 15]);
        let err = decode(&too_deep).unwrap_err();
        assert_eq!(err, DecodeError::TooMany { what: "tree leaves", n: 1 << 15, max: 1 << 14 });
        assert!(err.to_string().contains("above the limit"), "{err}");
        // a count the frame cannot hold is refused before allocating
        let mut short = head;
        short.extend_from_slice(&1000u32.to_le_bytes());
        assert_eq!(decode(&short), Err(DecodeError::Truncated(14)));
        let mut keys = vec![VERSION, KEYS_REPLY];
        keys.extend_from_slice(&1u64.to_le_bytes());
        keys.extend_from_slice(&(MAX_LISTED as u32 + 1).to_le_bytes());
        assert!(matches!(decode(&keys), Err(DecodeError::TooMany { what: "keys", .. })));
        // a probe reply's load figures are bounded
        let probe = |rif: u32, latency: u64| {
            let mut b = vec![VERSION, PROBE_REPLY];
            b.extend_from_slice(&1u64.to_le_bytes());
            b.extend_from_slice(&rif.to_le_bytes());
            b.extend_from_slice(&latency.to_le_bytes());
            decode(&b)
        };
        assert!(
            matches!(probe(MAX_PROBE_RIF + 1, 0), Err(DecodeError::TooMany { n, .. }) if n == MAX_PROBE_RIF as u64 + 1)
        );
        assert!(matches!(probe(0, MAX_PROBE_LATENCY + 1), Err(DecodeError::TooMany { max: MAX_PROBE_LATENCY, .. })));
        assert_eq!(probe(3, 7), Ok(Message::ProbeReply { id: 1, rif: 3, latency: 7 }));
        // garbage after a valid kind byte never panics
        let mut rng = 0x1234_5678u64;
        for kind in [TREE_REQUEST, TREE_REPLY, KEYS_REQUEST, KEYS_REPLY, PROBE, PROBE_REPLY] {
            for len in 0..64 {
                let mut body = vec![VERSION, kind];
                body.extend((0..len).map(|_| {
                    rng = crate::key_hash(&rng.to_le_bytes());
                    rng as u8
                }));
                let _ = decode(&body);
            }
        }
    }

    #[tokio::test]
    async fn read_frame_enforces_the_limit() {
        let mut lease = crate::limits::Budget::unlimited().lease();
        let mut src: &[u8] = &[0, 0, 1, 0, 1, 2];
        assert!(matches!(read_frame(&mut src, 16, &mut lease).await, Err(DecodeError::TooLong { len: 256, max: 16 })));
        let mut ok: &[u8] = &[0, 0, 0, 2, 7, 8];
        assert_eq!(read_frame(&mut ok, 16, &mut lease).await.unwrap(), Some(vec![7, 8]));
        assert_eq!(read_frame(&mut ok, 16, &mut lease).await.unwrap(), None);
        let mut cut: &[u8] = &[0, 0];
        assert!(matches!(read_frame(&mut cut, 16, &mut lease).await, Err(DecodeError::Io(_))));
    }

    #[tokio::test]
    async fn a_frame_is_allocated_as_its_bytes_arrive() {
        let budget = crate::limits::Budget::new(1 << 30);
        let mut lease = budget.lease();
        // declares 17 MB, sends 10 bytes, then the sender stalls (here: the stream ends)
        let mut stalled: Vec<u8> = (17_000_000u32).to_be_bytes().to_vec();
        stalled.extend_from_slice(&[1; 10]);
        let mut src: &[u8] = &stalled;
        assert!(matches!(read_frame(&mut src, 20_000_000, &mut lease).await, Err(DecodeError::Io(_))));
        assert_eq!(lease.held(), FIRST_RESERVE as u64, "only the first reservation was taken");
        lease.resize(0).unwrap();
        // a whole large frame grows by doubling up to its length
        let mut big: Vec<u8> = (300_000u32).to_be_bytes().to_vec();
        big.extend(std::iter::repeat_n(5u8, 300_000));
        let mut src: &[u8] = &big;
        assert_eq!(read_frame(&mut src, 1 << 20, &mut lease).await.unwrap().map(|b| b.len()), Some(300_000));
        assert_eq!(lease.held(), 300_000);
        // a budget too small for the frame refuses it
        let mut small = crate::limits::Budget::new(100_000).lease();
        let mut src: &[u8] = &big;
        assert!(matches!(read_frame(&mut src, 1 << 20, &mut small).await, Err(DecodeError::Budget(_))));
    }
}
