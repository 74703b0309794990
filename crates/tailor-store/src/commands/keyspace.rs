//! Key commands: `DEL`/`UNLINK` (the same here: deletes are versioned tombstones either way),
//! `EXISTS`, `TYPE`.
//!
//! `EXISTS` and `TYPE` read each key at the read consistency; an expired key is absent. `DEL`
//! reads each key at the write consistency to count what existed, then writes a tombstone for
//! each that did (a read-modify-write per key, not atomic; see `access.rs`).

use super::access;
use crate::node::Node;
use crate::resp::Reply;
use crate::session::Session;
use std::sync::Arc;

/// `DEL`/`UNLINK key [key ...]`: how many existed and were deleted.
pub async fn del(node: &Arc<Node>, session: &Session, keys: &[Vec<u8>]) -> Reply {
    let mut count = 0;
    for k in keys {
        match access::read_for_write(node, session, k).await {
            Ok(None) => {}
            Ok(Some(_)) => match access::delete(node, session, k).await {
                Ok(()) => count += 1,
                Err(e) => return e,
            },
            Err(e) => return e,
        }
    }
    Reply::Integer(count)
}

/// `EXISTS key [key ...]`: how many of the keys exist (a key named twice counts twice).
pub async fn exists(node: &Arc<Node>, session: &Session, keys: &[Vec<u8>]) -> Reply {
    let mut count = 0;
    for k in keys {
        match access::read(node, session, k).await {
            Ok(v) => count += v.is_some() as i64,
            Err(e) => return e,
        }
    }
    Reply::Integer(count)
}

/// `TYPE key`: `string`, or `none` if absent (the only type this store has).
pub async fn key_type(node: &Arc<Node>, session: &Session, key: &[u8]) -> Reply {
    match access::read(node, session, key).await {
        Ok(v) => Reply::Simple(if v.is_some() { "string" } else { "none" }.into()),
        Err(e) => e,
    }
}
