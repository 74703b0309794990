//! A bounded command parser: arrays of bulk strings (what clients send, in RESP2 and RESP3
//! alike) and inline commands (what a human types), with limits that turn hostile input into
//! clear errors.

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

/// Parse a `$len\r\n` header at the start of `buf`: the length and the header's size.
pub fn parse_bulk_header(buf: &[u8], limits: &Limits) -> Result<Option<(u64, usize)>, ProtocolError> {
    let Some(&first) = buf.first() else { return Ok(None) };
    if first != b'$' {
        return Err(ProtocolError::ExpectedBulk(first as char));
    }
    let Some(end) = find_line(buf, limits.max_line)? else { return Ok(None) };
    let len = parse_int(&buf[1..end], "bulk length")?;
    if len < 0 {
        return Err(ProtocolError::BadNumber { what: "bulk length", text: len.to_string() });
    }
    if len as u64 > limits.hard_max_bulk {
        return Err(ProtocolError::BulkTooLong);
    }
    Ok(Some((len as u64, end + 2)))
}

/// Parse one command from the start of `buf`.
pub fn parse_command(buf: &[u8], limits: &Limits) -> Result<Parsed, ProtocolError> {
    let Some(&first) = buf.first() else { return Ok(Parsed::Incomplete) };
    if first != b'*' {
        return parse_inline(buf, limits);
    }
    let Some(end) = find_line(buf, limits.max_line)? else { return Ok(Parsed::Incomplete) };
    let count = parse_int(&buf[1..end], "multibulk length")?;
    let mut pos = end + 2;
    if count <= 0 {
        return Ok(Parsed::Skip { used: pos });
    }
    if count as usize > limits.max_elements {
        return Err(ProtocolError::TooManyElements);
    }
    let count = count as usize;
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
}
