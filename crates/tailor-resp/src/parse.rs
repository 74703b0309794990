//! The bounded RESP parser, buffer in, frame out: [`parse_command`] reads what clients send
//! (arrays of bulk strings, in RESP2 and RESP3 alike, and inline commands a human types) with
//! the store's limits; [`parse_frame`] reads any frame a server sends. Both read lines, numbers
//! and bulk headers with the same functions, and turn hostile input into clear errors.

use crate::Frame;

/// Input that is not RESP or breaks a hard limit; the connection is closed after replying.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProtocolError {
    /// A length or count is not a number.
    #[error("Protocol error: invalid {what} '{text}'")]
    BadNumber {
        /// "multibulk length" or "bulk length".
        what: &'static str,
        /// The text found.
        text: String,
    },
    /// An array element is not a bulk string.
    #[error("Protocol error: expected '$', got '{0}'")]
    ExpectedBulk(char),
    /// A bulk string is not followed by CRLF.
    #[error("Protocol error: bulk string not terminated by CRLF")]
    MissingCrlf,
    /// An inline command or header line is too long.
    #[error("Protocol error: too big inline request")]
    LineTooLong,
    /// An array declares too many elements.
    #[error("Protocol error: invalid multibulk length")]
    TooManyElements,
    /// A bulk string is above the hard protocol limit.
    #[error("Protocol error: invalid bulk length")]
    BulkTooLong,
    /// An inline command has unbalanced quotes.
    #[error("Protocol error: unbalanced quotes in request")]
    Unbalanced,
    /// A frame starts with a byte that is no RESP type this parser reads.
    #[error("Protocol error: unexpected frame type '{0}'")]
    UnexpectedType(char),
    /// Aggregates nest deeper than [`FrameLimits::max_depth`].
    #[error("Protocol error: aggregates nested too deep")]
    TooDeep,
}

/// Parser limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Largest argument accepted; larger ones are skipped and refused ([`Parsed::TooLarge`]).
    pub max_arg: u64,
    /// Most bytes one command may take on the wire (headers included); a command declaring
    /// more is skipped and refused ([`Parsed::TooLarge`]), so at most this much of it is ever
    /// buffered.
    pub max_command: u64,
    /// Largest bulk length that is skipped rather than treated as a protocol error.
    pub hard_max_bulk: u64,
    /// Most elements in one command.
    pub max_elements: usize,
    /// Longest inline command or header line.
    pub max_line: usize,
}

impl Limits {
    /// Limits for arguments up to `max_value` bytes and commands up to `max_command` bytes.
    pub fn new(max_value: u64, max_command: u64) -> Limits {
        Limits { max_arg: max_value, max_command, hard_max_bulk: 512 << 20, max_elements: 1 << 20, max_line: 64 << 10 }
    }
}

/// Which size limit a refused command broke.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// One argument is above [`Limits::max_arg`] (`max_value_bytes`).
    Argument,
    /// The command is above [`Limits::max_command`] (`max_command_bytes`).
    Command,
}

/// A command refused for its size, from its declared lengths (nothing of it buffered): consume
/// `used` bytes, then discard `skip` more bytes and `rest` more bulk elements, then refuse it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TooLarge {
    /// Bytes consumed so far (up to the offending argument's header).
    pub used: usize,
    /// Bytes of the offending argument (with its CRLF) still to discard.
    pub skip: u64,
    /// Array elements after it still to discard.
    pub rest: usize,
    /// The size that broke the limit: the argument's declared length, or the command's bytes
    /// up to the end of that argument.
    pub len: u64,
    /// The limit broken.
    pub limit: Limit,
}

impl TooLarge {
    /// The error text a client gets, naming the limit and its config field.
    pub fn refusal(&self, limits: &Limits) -> String {
        match self.limit {
            Limit::Argument => format!(
                "argument of {} bytes exceeds the maximum of {} bytes (max_value_bytes)",
                self.len, limits.max_arg
            ),
            Limit::Command => format!(
                "command of at least {} bytes exceeds the maximum of {} bytes (max_command_bytes)",
                self.len, limits.max_command
            ),
        }
    }
}

/// What the buffer holds.
#[derive(Debug, PartialEq)]
pub enum Parsed {
    /// Not a whole command yet: read more.
    Incomplete,
    /// A command and the bytes it used.
    Command {
        /// Arguments; the first is the command name.
        args: Vec<Vec<u8>>,
        /// Bytes consumed.
        used: usize,
    },
    /// An empty line or a null array: consume and ignore.
    Skip {
        /// Bytes consumed.
        used: usize,
    },
    /// An argument or the whole command is above a size limit.
    TooLarge(TooLarge),
}

fn find_line(buf: &[u8], max_line: usize) -> Result<Option<usize>, ProtocolError> {
    match buf.windows(2).position(|w| w == b"\r\n") {
        Some(p) if p > max_line => Err(ProtocolError::LineTooLong),
        Some(p) => Ok(Some(p)),
        None if buf.len() > max_line => Err(ProtocolError::LineTooLong),
        None => Ok(None),
    }
}

fn parse_int(line: &[u8], what: &'static str) -> Result<i64, ProtocolError> {
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| ProtocolError::BadNumber { what, text: String::from_utf8_lossy(line).into_owned() })
}

/// The line at the start of `buf` without its type byte and CRLF, and the bytes it takes.
fn line(buf: &[u8], max_line: usize) -> Result<Option<(&[u8], usize)>, ProtocolError> {
    Ok(find_line(buf, max_line)?.map(|end| (&buf[1..end], end + 2)))
}

/// A bulk length (`null`: -1 is allowed, as in a reply), checked against `max`.
fn bulk_length(text: &[u8], max: u64, null: bool) -> Result<i64, ProtocolError> {
    let len = parse_int(text, "bulk length")?;
    if len < 0 && !(null && len == -1) {
        return Err(ProtocolError::BadNumber { what: "bulk length", text: len.to_string() });
    }
    if len > 0 && len as u64 > max {
        return Err(ProtocolError::BulkTooLong);
    }
    Ok(len)
}

/// An aggregate's element count (`null`: -1 is allowed), checked against `max`.
fn count(text: &[u8], max: usize, null: bool) -> Result<i64, ProtocolError> {
    let n = parse_int(text, "multibulk length")?;
    if n < 0 && !(null && n == -1) {
        return Err(ProtocolError::BadNumber { what: "multibulk length", text: n.to_string() });
    }
    if n > 0 && n as u64 > max as u64 {
        return Err(ProtocolError::TooManyElements);
    }
    Ok(n)
}

/// Parse a `$len\r\n` header at the start of `buf`: the length and the header's size.
pub fn parse_bulk_header(buf: &[u8], limits: &Limits) -> Result<Option<(u64, usize)>, ProtocolError> {
    let Some(&first) = buf.first() else { return Ok(None) };
    if first != b'$' {
        return Err(ProtocolError::ExpectedBulk(first as char));
    }
    let Some((text, used)) = line(buf, limits.max_line)? else { return Ok(None) };
    let len = bulk_length(text, limits.hard_max_bulk, false)?;
    Ok(Some((len as u64, used)))
}

/// Parse one command from the start of `buf`.
pub fn parse_command(buf: &[u8], limits: &Limits) -> Result<Parsed, ProtocolError> {
    let Some(&first) = buf.first() else { return Ok(Parsed::Incomplete) };
    if first != b'*' {
        return parse_inline(buf, limits);
    }
    let Some((text, mut pos)) = line(buf, limits.max_line)? else { return Ok(Parsed::Incomplete) };
    let count = parse_int(text, "multibulk length")?;
    if count <= 0 {
        return Ok(Parsed::Skip { used: pos });
    }
    let count = self::count(text, limits.max_elements, false)? as usize;
    let mut args = Vec::with_capacity(count.min(64));
    for i in 0..count {
        let Some((len, header)) = parse_bulk_header(&buf[pos..], limits)? else { return Ok(Parsed::Incomplete) };
        let start = pos + header;
        let wire = start as u64 + len + 2;
        let broken = if len > limits.max_arg {
            Some((Limit::Argument, len))
        } else if wire > limits.max_command {
            Some((Limit::Command, wire))
        } else {
            None
        };
        if let Some((limit, size)) = broken {
            let rest = count - i - 1;
            return Ok(Parsed::TooLarge(TooLarge { used: start, skip: len + 2, rest, len: size, limit }));
        }
        let stop = start + len as usize;
        if buf.len() < stop + 2 {
            return Ok(Parsed::Incomplete);
        }
        if &buf[stop..stop + 2] != b"\r\n" {
            return Err(ProtocolError::MissingCrlf);
        }
        args.push(buf[start..stop].to_vec());
        pos = stop + 2;
    }
    Ok(Parsed::Command { args, used: pos })
}

fn parse_inline(buf: &[u8], limits: &Limits) -> Result<Parsed, ProtocolError> {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        return if buf.len() > limits.max_line { Err(ProtocolError::LineTooLong) } else { Ok(Parsed::Incomplete) };
    };
    if nl > limits.max_line {
        return Err(ProtocolError::LineTooLong);
    }
    let line = buf[..nl].strip_suffix(b"\r").unwrap_or(&buf[..nl]);
    let mut args = Vec::new();
    let mut cur: Option<Vec<u8>> = None;
    let mut quote: Option<u8> = None;
    for &b in line {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => cur.get_or_insert_with(Vec::new).push(b),
            None if b == b'"' || b == b'\'' => {
                quote = Some(b);
                cur.get_or_insert_with(Vec::new);
            }
            None if b == b' ' || b == b'\t' => {
                if let Some(a) = cur.take() {
                    args.push(a);
                }
            }
            None => cur.get_or_insert_with(Vec::new).push(b),
        }
    }
    if quote.is_some() {
        return Err(ProtocolError::Unbalanced);
    }
    if let Some(a) = cur.take() {
        args.push(a);
    }
    if args.is_empty() {
        return Ok(Parsed::Skip { used: nl + 1 });
    }
    Ok(Parsed::Command { args, used: nl + 1 })
}

/// Limits of [`parse_frame`]: what a client accepts from a server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameLimits {
    /// Longest status, error or header line.
    pub max_line: usize,
    /// Longest bulk string.
    pub max_bulk: u64,
    /// Most elements (or field-value pairs) in one aggregate.
    pub max_elements: usize,
    /// Most nested aggregate levels.
    pub max_depth: usize,
}

impl Default for FrameLimits {
    /// A client's limits: 512 MiB bulks (Redis's own ceiling), 64 KiB lines, 2^20 elements, 8 levels.
    fn default() -> FrameLimits {
        FrameLimits { max_line: 64 << 10, max_bulk: 512 << 20, max_elements: 1 << 20, max_depth: 8 }
    }
}

/// Parse one frame from the start of `buf`: the frame and the bytes it used, or `None` when
/// more must arrive. Reads RESP2 (`+ - : $ *`, with `$-1` and `*-1` as [`Frame::Null`]) and the
/// RESP3 types the store sends (`_` null, `%` map).
pub fn parse_frame(buf: &[u8], limits: &FrameLimits) -> Result<Option<(Frame, usize)>, ProtocolError> {
    frame_at(buf, limits, 0)
}

fn frame_at(buf: &[u8], limits: &FrameLimits, depth: usize) -> Result<Option<(Frame, usize)>, ProtocolError> {
    let Some(&kind) = buf.first() else { return Ok(None) };
    if !b"+-:$*_%".contains(&kind) {
        return Err(ProtocolError::UnexpectedType(kind as char));
    }
    let Some((text, mut pos)) = line(buf, limits.max_line)? else { return Ok(None) };
    let string = || String::from_utf8_lossy(text).into_owned();
    let frame = match kind {
        b'+' => Frame::Simple(string()),
        b'-' => Frame::Error(string()),
        b':' => Frame::Integer(parse_int(text, "integer")?),
        b'_' => Frame::Null,
        b'$' => match bulk_length(text, limits.max_bulk, true)? {
            -1 => Frame::Null,
            len => {
                let stop = pos + len as usize;
                if buf.len() < stop + 2 {
                    return Ok(None);
                }
                if &buf[stop..stop + 2] != b"\r\n" {
                    return Err(ProtocolError::MissingCrlf);
                }
                let b = buf[pos..stop].to_vec();
                pos = stop + 2;
                Frame::Bulk(b)
            }
        },
        _ => {
            let n = count(text, limits.max_elements, kind == b'*')?;
            if n == -1 {
                return Ok(Some((Frame::Null, pos)));
            }
            if n > 0 && depth >= limits.max_depth {
                return Err(ProtocolError::TooDeep);
            }
            let per = if kind == b'%' { 2 } else { 1 };
            let mut items = Vec::with_capacity((n as usize * per).min(1024));
            for _ in 0..n as usize * per {
                let Some((item, used)) = frame_at(&buf[pos..], limits, depth + 1)? else { return Ok(None) };
                items.push(item);
                pos += used;
            }
            if kind == b'*' {
                Frame::Array(items)
            } else {
                let mut it = items.into_iter();
                Frame::Map(std::iter::from_fn(|| Some((it.next()?, it.next()?))).collect())
            }
        }
    };
    Ok(Some((frame, pos)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim() -> Limits {
        Limits { max_arg: 10, max_command: 60, hard_max_bulk: 1000, max_elements: 8, max_line: 32 }
    }

    #[test]
    fn parses_arrays_and_waits_for_more() {
        let buf = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1";
        assert_eq!(
            parse_command(buf, &lim()).unwrap(),
            Parsed::Command { args: vec![b"GET".to_vec(), b"k".to_vec()], used: 20 }
        );
        assert_eq!(parse_command(&buf[..15], &lim()).unwrap(), Parsed::Incomplete);
        assert_eq!(parse_command(&buf[20..], &lim()).unwrap(), Parsed::Incomplete);
    }

    #[test]
    fn parses_inline_with_quotes() {
        assert_eq!(
            parse_command(b"set k \"a b\"\r\n", &lim()).unwrap(),
            Parsed::Command { args: vec![b"set".to_vec(), b"k".to_vec(), b"a b".to_vec()], used: 13 }
        );
        assert_eq!(parse_command(b"\r\n", &lim()).unwrap(), Parsed::Skip { used: 2 });
        assert_eq!(parse_command(b"get \"x\r\n", &lim()).unwrap_err(), ProtocolError::Unbalanced);
    }

    #[test]
    fn oversized_argument_is_skipped_not_buffered() {
        let buf = b"*3\r\n$3\r\nSET\r\n$50\r\n";
        let t = TooLarge { used: 18, skip: 52, rest: 1, len: 50, limit: Limit::Argument };
        assert_eq!(parse_command(buf, &lim()).unwrap(), Parsed::TooLarge(t));
        assert!(t.refusal(&lim()).contains("argument of 50 bytes exceeds the maximum of 10 bytes (max_value_bytes)"));
    }

    #[test]
    fn a_command_above_the_total_is_refused_from_its_headers() {
        // each argument fits, the command does not: refused at the header that crosses 60 bytes
        let mut cmd = b"*8\r\n".to_vec();
        for _ in 0..8 {
            cmd.extend_from_slice(b"$9\r\n123456789\r\n");
        }
        match parse_command(&cmd, &lim()).unwrap() {
            Parsed::TooLarge(t) => {
                assert_eq!((t.limit, t.used, t.skip, t.rest, t.len), (Limit::Command, 53, 11, 4, 64));
                assert!(t.refusal(&lim()).contains("(max_command_bytes)"), "{}", t.refusal(&lim()));
            }
            other => panic!("{other:?}"),
        }
        // nothing after the headers arrived yet: still refused before any data is buffered
        assert!(matches!(parse_command(&cmd[..53], &lim()).unwrap(), Parsed::TooLarge(_)));
        assert_eq!(parse_command(&cmd[..52], &lim()).unwrap(), Parsed::Incomplete);
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        assert!(matches!(parse_command(b"*x\r\n", &lim()), Err(ProtocolError::BadNumber { .. })));
        assert_eq!(parse_command(b"*1\r\n:5\r\n", &lim()).unwrap_err(), ProtocolError::ExpectedBulk(':'));
        assert_eq!(parse_command(b"*1\r\n$2\r\nabXY", &lim()).unwrap_err(), ProtocolError::MissingCrlf);
        assert_eq!(parse_command(b"*99\r\n", &lim()).unwrap_err(), ProtocolError::TooManyElements);
        assert_eq!(parse_command(b"*1\r\n$5000\r\n", &lim()).unwrap_err(), ProtocolError::BulkTooLong);
        assert_eq!(parse_command(&[b'a'; 40], &lim()).unwrap_err(), ProtocolError::LineTooLong);
        assert!(parse_command(b"*1\r\n$-1\r\n", &lim()).is_err());
    }

    fn frame(bytes: &[u8]) -> Result<Option<(Frame, usize)>, ProtocolError> {
        parse_frame(bytes, &FrameLimits::default())
    }

    /// `bytes` is one whole frame: it parses to `expected` using every byte, and every proper
    /// prefix of it is incomplete.
    fn whole(bytes: &[u8], expected: Frame) {
        assert_eq!(frame(bytes).unwrap(), Some((expected, bytes.len())), "{}", String::from_utf8_lossy(bytes));
        for cut in 0..bytes.len() {
            assert_eq!(frame(&bytes[..cut]).unwrap(), None, "prefix of {cut} bytes");
        }
    }

    #[test]
    fn frames_of_every_type_and_every_prefix_is_incomplete() {
        whole(b"+OK\r\n", Frame::Simple("OK".into()));
        whole(b"-ERR no\r\n", Frame::Error("ERR no".into()));
        whole(b":-7\r\n", Frame::Integer(-7));
        whole(b"$3\r\na\r\n\r\n", Frame::Bulk(b"a\r\n".to_vec()));
        whole(b"$0\r\n\r\n", Frame::Bulk(Vec::new()));
        whole(b"$-1\r\n", Frame::Null);
        whole(b"*-1\r\n", Frame::Null);
        whole(b"_\r\n", Frame::Null);
        whole(b"*0\r\n", Frame::Array(vec![]));
        whole(
            b"*3\r\n:1\r\n*2\r\n$1\r\nx\r\n$-1\r\n+y\r\n",
            Frame::Array(vec![
                Frame::Integer(1),
                Frame::Array(vec![Frame::Bulk(b"x".to_vec()), Frame::Null]),
                Frame::Simple("y".into()),
            ]),
        );
        whole(b"%1\r\n$5\r\nproto\r\n:3\r\n", Frame::Map(vec![(Frame::text("proto"), Frame::Integer(3))]));
        // what follows a frame is left for the next call
        assert_eq!(frame(b"+OK\r\n:1\r\n").unwrap(), Some((Frame::ok(), 5)));
    }

    #[test]
    fn frames_round_trip_through_the_encoder() {
        let f = Frame::Array(vec![
            Frame::ok(),
            Frame::err("x"),
            Frame::Integer(i64::MIN),
            Frame::Bulk(vec![0, 13, 10, 255]),
            Frame::Null,
            Frame::Map(vec![(Frame::text("k"), Frame::Array(vec![]))]),
        ]);
        let mut wire = Vec::new();
        f.encode(crate::Protocol::Resp3, &mut wire);
        assert_eq!(frame(&wire).unwrap(), Some((f, wire.len())));
    }

    #[test]
    fn malformed_frames_are_errors() {
        assert_eq!(frame(b"?x\r\n").unwrap_err(), ProtocolError::UnexpectedType('?'));
        assert!(matches!(frame(b":x\r\n"), Err(ProtocolError::BadNumber { what: "integer", .. })));
        assert!(matches!(frame(b"$x\r\n"), Err(ProtocolError::BadNumber { what: "bulk length", .. })));
        assert!(matches!(frame(b"$-2\r\n"), Err(ProtocolError::BadNumber { .. })));
        assert!(matches!(frame(b"%-1\r\n"), Err(ProtocolError::BadNumber { .. })));
        assert_eq!(frame(b"$2\r\nabXY").unwrap_err(), ProtocolError::MissingCrlf);
        // an error inside an aggregate is found as soon as its bytes are there
        assert_eq!(frame(b"*2\r\n:1\r\n?").unwrap_err(), ProtocolError::UnexpectedType('?'));
        assert_eq!(frame(b"*2\r\n:1\r\n").unwrap(), None);
    }

    #[test]
    fn frame_limits_hold_before_anything_is_buffered() {
        let lim = FrameLimits { max_line: 16, max_bulk: 10, max_elements: 3, max_depth: 2 };
        assert_eq!(parse_frame(b"$11\r\n", &lim).unwrap_err(), ProtocolError::BulkTooLong);
        assert!(parse_frame(b"$10\r\n", &lim).unwrap().is_none());
        assert_eq!(parse_frame(b"*4\r\n", &lim).unwrap_err(), ProtocolError::TooManyElements);
        assert_eq!(parse_frame(b"%2\r\n", &lim).unwrap(), None, "a map's count is of pairs");
        assert_eq!(parse_frame(b"%4\r\n", &lim).unwrap_err(), ProtocolError::TooManyElements);
        assert_eq!(parse_frame(&[b'+'; 40], &lim).unwrap_err(), ProtocolError::LineTooLong);
        assert_eq!(parse_frame(b"+0123456789abcdefghij\r\n", &lim).unwrap_err(), ProtocolError::LineTooLong);
        let two = b"*1\r\n*1\r\n:1\r\n";
        assert_eq!(parse_frame(two, &lim).unwrap().map(|(_, n)| n), Some(two.len()));
        assert_eq!(parse_frame(b"*1\r\n*1\r\n*1\r\n:1\r\n", &lim).unwrap_err(), ProtocolError::TooDeep);
        // empty aggregates do not nest
        assert!(parse_frame(b"*1\r\n*1\r\n*0\r\n", &lim).unwrap().is_some());
    }

    #[test]
    fn error_texts_are_redis_like() {
        assert_eq!(ProtocolError::BulkTooLong.to_string(), "Protocol error: invalid bulk length");
        assert_eq!(ProtocolError::TooManyElements.to_string(), "Protocol error: invalid multibulk length");
        assert_eq!(ProtocolError::LineTooLong.to_string(), "Protocol error: too big inline request");
        assert_eq!(ProtocolError::ExpectedBulk(':').to_string(), "Protocol error: expected '$', got ':'");
        let bad = ProtocolError::BadNumber { what: "multibulk length", text: "x".into() };
        assert_eq!(bad.to_string(), "Protocol error: invalid multibulk length 'x'");
    }
}
