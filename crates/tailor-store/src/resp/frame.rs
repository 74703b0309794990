//! RESP2 replies and their wire encoding.

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
    /// `$-1`.
    Null,
    /// `*n` array.
    Array(Vec<Reply>),
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

    /// Append the wire form to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Reply::Simple(s) => {
                out.push(b'+');
                out.extend(s.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
                out.extend_from_slice(b"\r\n");
            }
            Reply::Error(s) => {
                out.push(b'-');
                out.extend(s.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
                out.extend_from_slice(b"\r\n");
            }
            Reply::Integer(n) => out.extend_from_slice(format!(":{n}\r\n").as_bytes()),
            Reply::Bulk(b) => {
                out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Null => out.extend_from_slice(b"$-1\r\n"),
            Reply::Array(items) => {
                out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
                for i in items {
                    i.encode(out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_every_kind() {
        let mut out = Vec::new();
        Reply::Array(vec![
            Reply::ok(),
            Reply::err("bad\r\nthing"),
            Reply::Integer(-3),
            Reply::Bulk(b"hi".to_vec()),
            Reply::Null,
        ])
        .encode(&mut out);
        assert_eq!(out, b"*5\r\n+OK\r\n-ERR bad  thing\r\n:-3\r\n$2\r\nhi\r\n$-1\r\n");
    }
}
