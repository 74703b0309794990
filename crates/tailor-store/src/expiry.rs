//! Expiry replicated as an absolute time: a value that expires carries its expiry (Unix
//! milliseconds) inside the replicated value bytes, in a small envelope.
//!
//! Why inside the value: the value bytes are what every path already copies unchanged — the
//! coordinator's write copies, internode `Write` and `ReadReply` messages, hints, blocking and
//! background read repair, anti-entropy's copies — so each of them carries the expiry with the
//! value, and an expiry change (EXPIRE, PERSIST) is a new write with a new version, which
//! last-writer-wins, Merkle trees (they compare versions) and repair already propagate.
//!
//! Envelope: [`MAGIC`] (5 bytes) ++ expiry (u64 LE, Unix ms; 0 = none) ++ the client's bytes.
//! A value without expiry is stored as the client's bytes unless they begin with [`MAGIC`]
//! (then it is wrapped with expiry 0, so no client value is ever misread), or with a counter
//! record's prefix (`counter.rs`: a counter holds its expiry in its own header). Values stored before
//! this format that begin with the magic (`\xFF\x00TXP`) would be misread: no such value is
//! expected, and it is the one compatibility caveat.
//!
//! The storage engine reads the envelope: an expired value reads as absent (with its version,
//! like a tombstone) on every replica, and is dropped like a tombstone once its version is past
//! the tombstone grace (`storage.rs`).

/// Prefix of an enveloped value.
pub const MAGIC: &[u8; 5] = b"\xFF\x00TXP";

/// Bytes of the envelope before the client's value.
pub const HEADER: usize = MAGIC.len() + 8;

/// Milliseconds since the Unix epoch on the system clock.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// The replicated form of `value` expiring at `expires` (Unix ms), if any.
pub fn encode(value: &[u8], expires: Option<u64>) -> Vec<u8> {
    if expires.is_none() && !value.starts_with(MAGIC) && !crate::counter::is_counter(value) {
        return value.to_vec();
    }
    let mut out = Vec::with_capacity(HEADER + value.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&expires.unwrap_or(0).to_le_bytes());
    out.extend_from_slice(value);
    out
}

/// The client's bytes and expiry (Unix ms) of a replicated value.
pub fn decode(stored: &[u8]) -> (&[u8], Option<u64>) {
    let Some(rest) = stored.strip_prefix(MAGIC.as_slice()) else { return (stored, None) };
    let Some((at, value)) = rest.split_first_chunk::<8>() else { return (stored, None) };
    match u64::from_le_bytes(*at) {
        0 => (value, None),
        at => (value, Some(at)),
    }
}

/// The expiry of a replicated value, if it has one (a counter record holds its own:
/// `counter.rs`).
pub fn expires(stored: &[u8]) -> Option<u64> {
    if crate::counter::is_counter(stored) {
        let at = stored.get(MAGIC.len()..HEADER).map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
        return (at != 0).then_some(at);
    }
    decode(stored).1
}

/// Whether a replicated value has expired at `now` (Unix ms): an expiry at or before now.
pub fn expired(stored: &[u8], now: u64) -> bool {
    expires(stored).is_some_and(|at| at <= now)
}

/// Whether a replicated value has expired by the system clock, read only for a value that has
/// an expiry (every read and write asks; most values have none).
pub fn expired_now(stored: &[u8]) -> bool {
    expires(stored).is_some() && expired(stored, now_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_values_stay_plain_and_envelopes_round_trip() {
        assert_eq!(encode(b"v", None), b"v");
        assert_eq!(decode(b"v"), (&b"v"[..], None));
        let e = encode(b"v", Some(1234));
        assert_eq!(e.len(), HEADER + 1);
        assert_eq!(decode(&e), (&b"v"[..], Some(1234)));
        assert!(expired(&e, 1234) && !expired(&e, 1233) && !expired(b"v", u64::MAX));
    }

    #[test]
    fn a_client_value_that_looks_like_an_envelope_is_wrapped() {
        let tricky = [MAGIC.as_slice(), &[9; 8], b"x"].concat();
        let e = encode(&tricky, None);
        assert_eq!(decode(&e), (tricky.as_slice(), None));
        assert_eq!(decode(MAGIC), (MAGIC.as_slice(), None), "a short one is plain bytes");
    }
}
