//! A RESP value independent of the protocol version that carries it: a server's reply
//! ([`super::encode`] writes it as RESP2 or RESP3) or what a client read ([`super::parse_frame`]).

/// A RESP value: a reply to a command, or a command as a client sends it (an array of bulks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// `+OK`-style status.
    Simple(String),
    /// `-ERR ...`; the text must start with an error code (e.g. `ERR`).
    Error(String),
    /// `:n`.
    Integer(i64),
    /// `$n` bulk string.
    Bulk(Vec<u8>),
    /// No value (a missing key): `$-1` in RESP2, `_` in RESP3 (`*-1` reads as it too).
    Null,
    /// `*n` array.
    Array(Vec<Frame>),
    /// Field-value pairs (HELLO, CONFIG GET, COMMAND DOCS): a RESP3 map, a flat array of
    /// `2n` elements in RESP2, as Redis answers them.
    Map(Vec<(Frame, Frame)>),
}

impl Frame {
    /// `+OK`.
    pub fn ok() -> Frame {
        Frame::Simple("OK".into())
    }

    /// An `ERR` error with `msg`.
    pub fn err(msg: impl std::fmt::Display) -> Frame {
        Frame::Error(format!("ERR {msg}"))
    }

    /// A bulk string from text.
    pub fn text(s: impl Into<String>) -> Frame {
        Frame::Bulk(s.into().into_bytes())
    }
}
