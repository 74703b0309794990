//! How the command families read and write a key through the coordinator: values come back
//! without their expiry envelope ([`crate::expiry`]), writes carry the expiry as an absolute
//! time, and every value is checked against `max_value_bytes` first.
//!
//! Read-modify-write (SET with NX/XX/GET/KEEPTTL, GETSET, GETDEL, APPEND, EXPIRE, PERSIST,
//! DEL's count) is a read at the session's *write* consistency followed by a write with a new
//! version. It is NOT atomic: two clients doing it at once through the same or different
//! coordinators may both see the old value, and the later version wins (last-writer-wins);
//! e.g. two concurrent `SET k v NX` may both answer OK, and two concurrent `APPEND`s may lose
//! one of the appended strings. The read at the write level makes a single client's own
//! read-modify-write sequence consistent with its earlier writes.

use crate::expiry;
use crate::node::Node;
use crate::resp::Reply;
use crate::session::Session;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tailor_core::coordinator::Fanout;

/// A live value as a client sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Live {
    /// The client's bytes.
    pub value: Vec<u8>,
    /// Expiry, Unix ms.
    pub expires: Option<u64>,
}

fn coord_err(e: crate::coordinator::CoordError) -> Reply {
    Reply::err(e)
}

/// The live value of a replicated value at `now()` (Unix ms), if it has not expired. A value
/// without an envelope (most) is handed on as it is: no copy and no clock read; a counter
/// record reads as its total in decimal (`counters.rs`).
pub fn live(stored: Option<Vec<u8>>, now: impl FnOnce() -> u64) -> Option<Live> {
    let mut stored = stored?;
    if crate::counter::is_counter(&stored) {
        return super::counters::live(&stored, now);
    }
    let (value, expires) = expiry::decode(&stored);
    let header = stored.len() - value.len();
    if header == 0 {
        return Some(Live { value: stored, expires: None });
    }
    if expires.is_some_and(|at| at <= now()) {
        return None;
    }
    stored.drain(..header);
    Some(Live { value: stored, expires })
}

/// Read `key` at the session's read consistency (plain reads: GET, EXISTS, TTL, ...).
pub async fn read(node: &Arc<Node>, session: &Session, key: &[u8]) -> Result<Option<Live>, Reply> {
    read_in_multiget(node, session, key, Fanout::default()).await
}

/// [`read`] of one key of the MGET `fanout` (its key count and Rein's bottleneck tag).
pub async fn read_in_multiget(
    node: &Arc<Node>,
    session: &Session,
    key: &[u8],
    fanout: Fanout,
) -> Result<Option<Live>, Reply> {
    let v = node.coordinator.read_in_multiget(key, session.consistency(), fanout).await.map_err(coord_err)?;
    Ok(live(v.value, expiry::now_ms))
}

/// Read `key` at the session's write consistency: the read of a read-modify-write.
pub async fn read_for_write(node: &Arc<Node>, session: &Session, key: &[u8]) -> Result<Option<Live>, Reply> {
    let level = session.consistency().unwrap_or(node.coordinator.consistency().1);
    let v = node.coordinator.read(key, Some(level)).await.map_err(coord_err)?;
    Ok(live(v.value, expiry::now_ms))
}

/// Refuse a value above `max_value_bytes`.
pub fn check_value(node: &Node, value: &[u8]) -> Result<(), Reply> {
    let max = node.cfg.max_value_bytes;
    if value.len() as u64 > max {
        node.metrics.limit_refusals.fetch_add(1, Ordering::Relaxed);
        return Err(Reply::err(format!(
            "value of {} bytes exceeds the maximum of {max} bytes (max_value_bytes)",
            value.len()
        )));
    }
    Ok(())
}

/// Write `value` to `key` expiring at `expires` (Unix ms), at the session's write consistency.
pub async fn write(
    node: &Arc<Node>,
    session: &Session,
    key: &[u8],
    value: &[u8],
    expires: Option<u64>,
) -> Result<(), Reply> {
    check_value(node, value)?;
    let stored = expiry::encode(value, expires);
    node.coordinator.write(key, Some(stored), session.consistency()).await.map_err(coord_err)
}

/// Delete `key` at the session's write consistency.
pub async fn delete(node: &Arc<Node>, session: &Session, key: &[u8]) -> Result<(), Reply> {
    node.coordinator.write(key, None, session.consistency()).await.map_err(coord_err)
}

/// Redis's integer argument: an `i64`, else its error.
pub fn integer(arg: &[u8]) -> Result<i64, Reply> {
    std::str::from_utf8(arg)
        .ok()
        .filter(|s| !s.starts_with('+'))
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| Reply::err("value is not an integer or out of range"))
}

/// Either reply as one.
pub fn either(r: Result<Reply, Reply>) -> Reply {
    r.unwrap_or_else(|e| e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_like_redis() {
        assert_eq!(integer(b"-12"), Ok(-12));
        assert_eq!(integer(b"9223372036854775807"), Ok(i64::MAX));
        for bad in [&b"9223372036854775808"[..], b"+1", b" 1", b"1.5", b"", b"\xff"] {
            assert!(integer(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn expired_values_are_not_live() {
        let e = expiry::encode(b"v", Some(10));
        assert_eq!(live(Some(e.clone()), || 9), Some(Live { value: b"v".to_vec(), expires: Some(10) }));
        assert_eq!(live(Some(e), || 10), None);
        assert_eq!(live(None, || 0), None);
        let plain = Some(b"plain".to_vec());
        let no_clock = || -> u64 { panic!("a value without an envelope needs no clock") };
        assert_eq!(live(plain, no_clock), Some(Live { value: b"plain".to_vec(), expires: None }));
        let magic_like = [expiry::MAGIC.as_slice(), b"x"].concat();
        let wrapped = expiry::encode(&magic_like, None);
        assert_eq!(live(Some(wrapped), || 0), Some(Live { value: magic_like, expires: None }));
    }
}
