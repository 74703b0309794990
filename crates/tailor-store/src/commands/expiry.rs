//! Expiry commands: `EXPIRE`/`PEXPIRE`/`EXPIREAT`/`PEXPIREAT` (with `NX`/`XX`/`GT`/`LT`),
//! `TTL`/`PTTL`, `PERSIST`, and the expiry arithmetic `SET`'s options share.
//!
//! An expiry is an absolute time (Unix ms) written with the value as a new version
//! ([`crate::expiry`]); EXPIRE and PERSIST are read-modify-writes, not atomic across
//! coordinators (see `access.rs`). An expiry at or before now deletes the key (Redis's rule).

use super::access::{self, integer};
use crate::node::Node;
use crate::resp::Reply;
use crate::session::Session;
use std::sync::Arc;

/// How an expiry argument counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Seconds from now (`EX`, `EXPIRE`).
    Seconds,
    /// Milliseconds from now (`PX`, `PEXPIRE`).
    Millis,
    /// Unix seconds (`EXAT`, `EXPIREAT`).
    SecondsAt,
    /// Unix milliseconds (`PXAT`, `PEXPIREAT`).
    MillisAt,
}

/// The absolute expiry (Unix ms) of argument `n` in `unit` at `now`; `None` on overflow.
pub fn absolute(unit: Unit, n: i64, now: u64) -> Option<i64> {
    let ms = match unit {
        Unit::Seconds | Unit::SecondsAt => n.checked_mul(1000)?,
        Unit::Millis | Unit::MillisAt => n,
    };
    match unit {
        Unit::Seconds | Unit::Millis => ms.checked_add(i64::try_from(now).ok()?),
        Unit::SecondsAt | Unit::MillisAt => Some(ms),
    }
}

/// `ERR invalid expire time in '<cmd>' command`.
pub fn invalid(cmd: &str) -> Reply {
    Reply::err(format!("invalid expire time in '{cmd}' command"))
}

/// A positive expiry argument as SET/SETEX/PSETEX take it: the absolute time, or the error.
pub fn positive(unit: Unit, arg: &[u8], cmd: &str) -> Result<u64, Reply> {
    let n = integer(arg)?;
    match absolute(unit, n, crate::expiry::now_ms()) {
        Some(at) if n > 0 && at > 0 => Ok(at as u64),
        _ => Err(invalid(cmd)),
    }
}

/// EXPIRE's condition flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cond {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Cond {
    /// Parse `[NX|XX|GT|LT]...` with Redis's errors.
    pub fn parse(args: &[Vec<u8>]) -> Result<Cond, Reply> {
        let mut c = Cond::default();
        for a in args {
            match a.to_ascii_lowercase().as_slice() {
                b"nx" => c.nx = true,
                b"xx" => c.xx = true,
                b"gt" => c.gt = true,
                b"lt" => c.lt = true,
                _ => return Err(Reply::err(format!("Unsupported option {}", String::from_utf8_lossy(a)))),
            }
        }
        if c.nx && (c.xx || c.gt || c.lt) {
            return Err(Reply::err("NX and XX, GT or LT options at the same time are not compatible"));
        }
        if c.gt && c.lt {
            return Err(Reply::err("GT and LT options at the same time are not compatible"));
        }
        Ok(c)
    }

    /// Whether a new expiry `at` may replace `current` (`None`: no expiry, i.e. infinite).
    fn allows(self, current: Option<u64>, at: u64) -> bool {
        match current {
            _ if self.nx => current.is_none(),
            None => !self.xx && !self.gt,
            Some(cur) => !(self.gt && at <= cur || self.lt && at >= cur),
        }
    }
}

/// `EXPIRE`-family command: set `key`'s expiry to `at` (Unix ms) if `cond` allows; 1 if the
/// expiry was set, 0 if not. An expiry at or before now deletes the key.
pub async fn expire(node: &Arc<Node>, session: &Session, key: &[u8], at: u64, cond: Cond) -> Reply {
    access::either(expire_inner(node, session, key, at, cond).await)
}

async fn expire_inner(node: &Arc<Node>, session: &Session, key: &[u8], at: u64, cond: Cond) -> Result<Reply, Reply> {
    let Some(old) = access::read_for_write(node, session, key).await? else { return Ok(Reply::Integer(0)) };
    if !cond.allows(old.expires, at) {
        return Ok(Reply::Integer(0));
    }
    if at <= crate::expiry::now_ms() {
        access::delete(node, session, key).await?;
    } else {
        access::write(node, session, key, &old.value, Some(at)).await?;
    }
    Ok(Reply::Integer(1))
}

/// `TTL` (`millis` false) or `PTTL`: -2 absent, -1 no expiry, else the time left.
pub async fn ttl(node: &Arc<Node>, session: &Session, key: &[u8], millis: bool) -> Reply {
    match access::read(node, session, key).await {
        Err(e) => e,
        Ok(None) => Reply::Integer(-2),
        Ok(Some(v)) => match v.expires {
            None => Reply::Integer(-1),
            Some(at) => {
                let left = at.saturating_sub(crate::expiry::now_ms()) as i64;
                Reply::Integer(if millis { left } else { (left + 500) / 1000 })
            }
        },
    }
}

/// `PERSIST key`: 1 if an expiry was removed (a new write of the value without one), else 0.
pub async fn persist(node: &Arc<Node>, session: &Session, key: &[u8]) -> Reply {
    access::either(
        async {
            match access::read_for_write(node, session, key).await? {
                Some(v) if v.expires.is_some() => {
                    access::write(node, session, key, &v.value, None).await?;
                    Ok::<_, Reply>(Reply::Integer(1))
                }
                _ => Ok(Reply::Integer(0)),
            }
        }
        .await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_times_never_overflow() {
        assert_eq!(absolute(Unit::Seconds, 2, 1000), Some(3000));
        assert_eq!(absolute(Unit::Millis, 2, 1000), Some(1002));
        assert_eq!(absolute(Unit::SecondsAt, 2, 1000), Some(2000));
        assert_eq!(absolute(Unit::MillisAt, 2, 1000), Some(2));
        assert_eq!(absolute(Unit::Seconds, i64::MAX, 1000), None);
        assert_eq!(absolute(Unit::Millis, i64::MAX, 1000), None);
        assert_eq!(absolute(Unit::SecondsAt, i64::MIN, 0), None);
        assert!(positive(Unit::Seconds, b"9223372036854775807", "set").is_err());
        assert!(positive(Unit::Seconds, b"0", "set").is_err());
        assert!(positive(Unit::Millis, b"-5", "set").is_err());
        assert!(positive(Unit::Millis, b"x", "set").is_err());
    }

    #[test]
    fn conditions_follow_redis() {
        let parse = |a: &[&str]| Cond::parse(&a.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>());
        assert!(parse(&["nx", "xx"]).is_err() && parse(&["gt", "lt"]).is_err() && parse(&["zz"]).is_err());
        let (nx, xx, gt, lt) =
            (parse(&["NX"]).unwrap(), parse(&["xx"]).unwrap(), parse(&["gt"]).unwrap(), parse(&["lt"]).unwrap());
        assert!(nx.allows(None, 5) && !nx.allows(Some(1), 5));
        assert!(!xx.allows(None, 5) && xx.allows(Some(1), 5));
        assert!(!gt.allows(None, 5) && gt.allows(Some(1), 5) && !gt.allows(Some(9), 5));
        assert!(lt.allows(None, 5) && !lt.allows(Some(1), 5) && lt.allows(Some(9), 5));
        assert!(Cond::default().allows(None, 5));
    }
}
