//! The wire form of a [`Frame`] in the protocol version a connection chose with `HELLO`:
//! RESP2 (the default) or RESP3, which differ only in how null and maps are written here; and
//! of a command, as a client sends it.

use super::Frame;

/// A connection's protocol version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// RESP2: what every connection speaks until `HELLO 3`.
    #[default]
    Resp2,
    /// RESP3: null is `_`, maps are `%`.
    Resp3,
}

impl Protocol {
    /// The version number `HELLO` takes and reports.
    pub fn version(self) -> i64 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }

    /// The protocol of version `v`, if this node speaks it.
    pub fn from_version(v: i64) -> Option<Protocol> {
        match v {
            2 => Some(Protocol::Resp2),
            3 => Some(Protocol::Resp3),
            _ => None,
        }
    }
}

/// Append `text` with CR and LF replaced (a status or error line must stay one line).
fn line(out: &mut Vec<u8>, prefix: u8, text: &str) {
    out.push(prefix);
    out.extend(text.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
    out.extend_from_slice(b"\r\n");
}

/// Append an aggregate's `prefix` and element count.
fn header(out: &mut Vec<u8>, prefix: u8, n: usize) {
    out.push(prefix);
    out.extend_from_slice(n.to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Append the wire form of the command made of `args` (an array of bulk strings) to `out`.
pub fn encode_command(args: &[&[u8]], out: &mut Vec<u8>) {
    out.reserve(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    header(out, b'*', args.len());
    for a in args {
        bulk(out, a);
    }
}

/// Append a bulk string.
fn bulk(out: &mut Vec<u8>, b: &[u8]) {
    header(out, b'$', b.len());
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

impl Frame {
    /// Append the wire form in protocol `p` to `out`.
    pub fn encode(&self, p: Protocol, out: &mut Vec<u8>) {
        match self {
            Frame::Simple(s) => line(out, b'+', s),
            Frame::Error(s) => line(out, b'-', s),
            Frame::Integer(n) => line(out, b':', &n.to_string()),
            Frame::Bulk(b) => bulk(out, b),
            Frame::Null if p == Protocol::Resp3 => out.extend_from_slice(b"_\r\n"),
            Frame::Null => out.extend_from_slice(b"$-1\r\n"),
            Frame::Array(items) => {
                header(out, b'*', items.len());
                items.iter().for_each(|i| i.encode(p, out));
            }
            Frame::Map(pairs) => {
                match p {
                    Protocol::Resp3 => header(out, b'%', pairs.len()),
                    Protocol::Resp2 => header(out, b'*', pairs.len() * 2),
                }
                for (k, v) in pairs {
                    k.encode(p, out);
                    v.encode(p, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(r: &Frame, p: Protocol) -> String {
        let mut out = Vec::new();
        r.encode(p, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn scalars_are_the_same_in_both_versions() {
        let r = Frame::Array(vec![Frame::ok(), Frame::err("bad\r\nthing"), Frame::Integer(-3), Frame::text("hi")]);
        let expected = "*4\r\n+OK\r\n-ERR bad  thing\r\n:-3\r\n$2\r\nhi\r\n";
        assert_eq!(wire(&r, Protocol::Resp2), expected);
        assert_eq!(wire(&r, Protocol::Resp3), expected);
    }

    #[test]
    fn null_and_maps_follow_the_version() {
        let r = Frame::Array(vec![Frame::Null, Frame::Map(vec![(Frame::text("proto"), Frame::Integer(3))])]);
        assert_eq!(wire(&r, Protocol::Resp2), "*2\r\n$-1\r\n*2\r\n$5\r\nproto\r\n:3\r\n");
        assert_eq!(wire(&r, Protocol::Resp3), "*2\r\n_\r\n%1\r\n$5\r\nproto\r\n:3\r\n");
    }

    #[test]
    fn commands_are_arrays_of_bulks() {
        let mut out = Vec::new();
        encode_command(&[b"GET", b"42"], &mut out);
        assert_eq!(out, b"*2\r\n$3\r\nGET\r\n$2\r\n42\r\n");
        out.clear();
        encode_command(&[b"SET", b"k", b""], &mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
        let as_frame = Frame::Array(vec![Frame::text("SET"), Frame::text("k"), Frame::text("")]);
        assert_eq!(wire(&as_frame, Protocol::Resp2).as_bytes(), out);
    }

    #[test]
    fn versions_round_trip() {
        for p in [Protocol::Resp2, Protocol::Resp3] {
            assert_eq!(Protocol::from_version(p.version()), Some(p));
        }
        assert_eq!(Protocol::from_version(4), None);
        assert_eq!(Protocol::from_version(1), None);
    }
}
