//! Replies to client commands, independent of the protocol version that carries them
//! ([`super::encode`] writes them as RESP2 or RESP3).

/// A reply to a client command.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// `+OK`-style status.
    Simple(String),
    /// `-ERR ...`; the text must start with an error code (e.g. `ERR`).
    Error(String),
    /// `:n`.
    Integer(i64),
    /// `$n` bulk string.
    Bulk(Vec<u8>),
    /// No value (a missing key): `$-1` in RESP2, `_` in RESP3.
    Null,
    /// `*n` array.
    Array(Vec<Reply>),
    /// Field-value pairs (HELLO, CONFIG GET, COMMAND DOCS): a RESP3 map, a flat array of
    /// `2n` elements in RESP2, as Redis answers them.
    Map(Vec<(Reply, Reply)>),
}

impl Reply {
    /// `+OK`.
    pub fn ok() -> Reply {
        Reply::Simple("OK".into())
    }

    /// An `ERR` error with `msg`.
    pub fn err(msg: impl std::fmt::Display) -> Reply {
        Reply::Error(format!("ERR {msg}"))
    }

    /// A bulk string from text.
    pub fn text(s: impl Into<String>) -> Reply {
        Reply::Bulk(s.into().into_bytes())
    }
}
