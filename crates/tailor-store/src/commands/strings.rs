//! String commands: `GET`, `SET k v [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL] [NX|XX] [GET]`,
//! `SETEX`, `PSETEX`, `SETNX`, `GETSET`, `GETDEL`, `MSET`, `APPEND`, `STRLEN`; `INCRBYFLOAT`
//! refused (the `INCR` family is in `counters.rs`).
//!
//! A plain `SET` (and SETEX/PSETEX, MSET) is one replicated write at the write consistency; with
//! NX, XX, GET or KEEPTTL, and GETSET, GETDEL, SETNX, APPEND, it is a read at the write
//! consistency and then a write, not atomic across coordinators (see `access.rs`). `MSET`
//! writes each key as its own replicated write, in order: not atomic (a reader may see some
//! keys new and others old, and a failure part way leaves the earlier keys written).

use super::access::{self, either, Live};
use super::expiry::{positive, Unit};
use crate::node::Node;
use crate::resp::Reply;
use crate::session::Session;
use std::sync::Arc;

/// Most keys one `MSET` may write.
pub const MAX_MSET_KEYS: usize = 1024;

/// Why INCRBYFLOAT is refused.
pub const NO_FLOAT_COUNTERS: &str = "INCRBYFLOAT is not supported: float increments do not merge exactly \
across replicas; INCR, DECR, INCRBY and DECRBY are replicated counters";

/// The unit of SET's expiry option `opt` (lower case).
fn unit_of(opt: &[u8]) -> Unit {
    match opt {
        b"ex" => Unit::Seconds,
        b"px" => Unit::Millis,
        b"exat" => Unit::SecondsAt,
        _ => Unit::MillisAt,
    }
}

/// SET's options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetOptions {
    expires: Option<u64>,
    keep_ttl: bool,
    nx: bool,
    xx: bool,
    get: bool,
}

impl SetOptions {
    /// Parse `[EX s|PX ms|EXAT s|PXAT ms|KEEPTTL] [NX|XX] [GET]` with Redis's errors.
    pub fn parse(args: &[Vec<u8>]) -> Result<SetOptions, Reply> {
        let mut o = SetOptions::default();
        let mut it = args.iter();
        let syntax = || Reply::err("syntax error");
        while let Some(a) = it.next() {
            let a = a.to_ascii_lowercase();
            match a.as_slice() {
                b"nx" if !o.xx => o.nx = true,
                b"xx" if !o.nx => o.xx = true,
                b"get" => o.get = true,
                b"keepttl" if o.expires.is_none() => o.keep_ttl = true,
                b"ex" | b"px" | b"exat" | b"pxat" => {
                    let n = it.next().ok_or_else(syntax)?;
                    if o.expires.is_some() || o.keep_ttl {
                        return Err(syntax());
                    }
                    o.expires = Some(positive(unit_of(&a), n, "set")?);
                }
                _ => return Err(syntax()),
            }
        }
        Ok(o)
    }

    /// Whether the command must read the key first.
    fn reads(self) -> bool {
        self.nx || self.xx || self.get || self.keep_ttl
    }
}

/// `SET key value [options]`.
pub async fn set(node: &Arc<Node>, session: &Session, key: &[u8], value: &[u8], o: SetOptions) -> Reply {
    either(set_inner(node, session, key, value, o).await)
}

async fn set_inner(
    node: &Arc<Node>,
    session: &Session,
    key: &[u8],
    value: &[u8],
    o: SetOptions,
) -> Result<Reply, Reply> {
    access::check_value(node, value)?;
    let old = if o.reads() { access::read_for_write(node, session, key).await? } else { None };
    let old_reply = |old: &Option<Live>| old.as_ref().map_or(Reply::Null, |v| Reply::Bulk(v.value.clone()));
    if o.nx && old.is_some() || o.xx && old.is_none() {
        return Ok(if o.get { old_reply(&old) } else { Reply::Null });
    }
    let expires = if o.keep_ttl { old.as_ref().and_then(|v| v.expires) } else { o.expires };
    access::write(node, session, key, value, expires).await?;
    Ok(if o.get { old_reply(&old) } else { Reply::ok() })
}

/// `SETEX key seconds value` / `PSETEX key ms value`: `expires` is the absolute time.
pub async fn setex(node: &Arc<Node>, session: &Session, key: &[u8], expires: u64, value: &[u8]) -> Reply {
    either(access::write(node, session, key, value, Some(expires)).await.map(|()| Reply::ok()))
}

/// `SETNX key value`: 1 if set, 0 if the key existed.
pub async fn setnx(node: &Arc<Node>, session: &Session, key: &[u8], value: &[u8]) -> Reply {
    either(
        async {
            access::check_value(node, value)?;
            if access::read_for_write(node, session, key).await?.is_some() {
                return Ok(Reply::Integer(0));
            }
            access::write(node, session, key, value, None).await?;
            Ok::<_, Reply>(Reply::Integer(1))
        }
        .await,
    )
}

/// `GETSET key value` (the old value; the new one has no expiry) and `GETDEL key`.
pub async fn get_and(node: &Arc<Node>, session: &Session, key: &[u8], value: Option<&[u8]>) -> Reply {
    either(
        async {
            if let Some(v) = value {
                access::check_value(node, v)?;
            }
            let old = access::read_for_write(node, session, key).await?;
            match value {
                Some(v) => access::write(node, session, key, v, None).await?,
                None if old.is_some() => access::delete(node, session, key).await?,
                None => {}
            }
            Ok::<_, Reply>(old.map_or(Reply::Null, |v| Reply::Bulk(v.value)))
        }
        .await,
    )
}

/// `GET key`.
pub async fn get(node: &Arc<Node>, session: &Session, key: &[u8]) -> Reply {
    match access::read(node, session, key).await {
        Ok(v) => v.map_or(Reply::Null, |v| Reply::Bulk(v.value)),
        Err(e) => e,
    }
}

/// `MSET k v [k v ...]`: each pair its own replicated write, in order (not atomic); every value
/// is checked before the first is written.
pub async fn mset(node: &Arc<Node>, session: &Session, pairs: &[(Vec<u8>, Vec<u8>)]) -> Reply {
    if let Some(Err(e)) = pairs.iter().map(|(_, v)| access::check_value(node, v)).find(Result::is_err) {
        return e;
    }
    for (key, value) in pairs {
        if let Err(e) = access::write(node, session, key, value, None).await {
            return e;
        }
    }
    Reply::ok()
}

/// `APPEND key value`: the new length; the key keeps its expiry.
pub async fn append(node: &Arc<Node>, session: &Session, key: &[u8], value: &[u8]) -> Reply {
    either(
        async {
            let old = access::read_for_write(node, session, key).await?;
            let (mut joined, expires) = old.map_or((Vec::new(), None), |v| (v.value, v.expires));
            access::check_value(node, &[joined.as_slice(), value].concat())?;
            joined.extend_from_slice(value);
            access::write(node, session, key, &joined, expires).await?;
            Ok::<_, Reply>(Reply::Integer(joined.len() as i64))
        }
        .await,
    )
}

/// `STRLEN key`: the value's length, 0 if absent.
pub async fn strlen(node: &Arc<Node>, session: &Session, key: &[u8]) -> Reply {
    match access::read(node, session, key).await {
        Ok(v) => Reply::Integer(v.map_or(0, |v| v.value.len() as i64)),
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<SetOptions, Reply> {
        SetOptions::parse(&a.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>())
    }

    #[test]
    fn set_options_are_checked_like_redis() {
        let o = parse(&["EX", "10", "NX", "GET"]).unwrap();
        assert!(o.nx && o.get && o.expires.is_some() && o.reads());
        assert!(!parse(&[]).unwrap().reads());
        assert!(parse(&["KEEPTTL", "xx"]).unwrap().keep_ttl);
        let syntax = Err(Reply::err("syntax error"));
        for bad in [&["nx", "xx"][..], &["ex"], &["ex", "1", "px", "1"], &["keepttl", "ex", "1"], &["bogus"]] {
            assert_eq!(parse(bad), syntax, "{bad:?}");
        }
        let invalid = Err(Reply::err("invalid expire time in 'set' command"));
        assert_eq!(parse(&["EX", "9223372036854775807"]), invalid);
        assert_eq!(parse(&["PX", "0"]), invalid);
        assert_eq!(parse(&["EX", "-1"]), invalid);
        assert_eq!(parse(&["EX", "ten"]), Err(Reply::err("value is not an integer or out of range")));
    }
}
