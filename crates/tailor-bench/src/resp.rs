//! A minimal RESP2 client: one connection, one command in flight at a time.
//!
//! The bench needs only `GET`, `SET`, `INFO` and `TAILOR.GET`, so this speaks the subset of
//! RESP2 replies those return (simple strings, errors, integers, bulk strings, arrays) and
//! nothing else. Replies are read whole before the next command is written, which is what
//! "one request in flight per connection" means for the open-loop driver.

use std::io;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::TcpStream;

/// Longest bulk string or array accepted from a server (a guard against corrupt length headers).
const MAX_BULK: i64 = 512 * 1024 * 1024;
/// Most nested array levels accepted.
const MAX_DEPTH: usize = 8;

/// A reply from the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`-style status.
    Simple(String),
    /// `-ERR ...`: the command failed at the server.
    Error(String),
    /// `:n`.
    Integer(i64),
    /// `$n` bulk string.
    Bulk(Vec<u8>),
    /// `$-1` or `*-1`.
    Null,
    /// `*n` array.
    Array(Vec<Reply>),
}

/// One RESP connection to a node.
pub struct Conn {
    reader: BufReader<tokio::net::tcp::OwnedReadHalf>,
    writer: BufWriter<tokio::net::tcp::OwnedWriteHalf>,
}

/// The RESP encoding of a command made of `args` (an array of bulk strings).
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

impl Conn {
    /// Connect to `addr` with `TCP_NODELAY` (requests are small and latency is what we measure).
    pub async fn connect(addr: std::net::SocketAddr) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (r, w) = stream.into_split();
        Ok(Conn { reader: BufReader::with_capacity(64 * 1024, r), writer: BufWriter::with_capacity(64 * 1024, w) })
    }

    /// Send one command and read its reply.
    pub async fn command(&mut self, args: &[&[u8]]) -> io::Result<Reply> {
        self.writer.write_all(&encode(args)).await?;
        self.writer.flush().await?;
        read_reply(&mut self.reader).await
    }
}

/// Read one reply from `r`.
pub async fn read_reply<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> io::Result<Reply> {
    // Arrays nest; an explicit stack avoids recursive async functions.
    let mut stack: Vec<(Vec<Reply>, usize)> = Vec::new();
    loop {
        let mut item = read_item(r).await?;
        loop {
            match item {
                Item::Done(reply) => match stack.last_mut() {
                    None => return Ok(reply),
                    Some((items, want)) => {
                        items.push(reply);
                        if items.len() < *want {
                            break;
                        }
                        let (items, _) = stack.pop().expect("stack has the array being filled");
                        item = Item::Done(Reply::Array(items));
                    }
                },
                Item::Array(0) => item = Item::Done(Reply::Array(Vec::new())),
                Item::Array(n) => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(bad("RESP arrays nested too deep"));
                    }
                    stack.push((Vec::with_capacity(n.min(1024)), n));
                    break;
                }
            }
        }
    }
}

enum Item {
    Done(Reply),
    Array(usize),
}

async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> io::Result<String> {
    let mut line = Vec::new();
    let n = r.read_until(b'\n', &mut line).await?;
    if n == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed by the server"));
    }
    if !line.ends_with(b"\r\n") {
        return Err(bad("RESP line not terminated by CRLF"));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|_| bad("RESP line is not UTF-8"))
}

fn length(text: &str) -> io::Result<i64> {
    let n: i64 = text.parse().map_err(|_| bad(format!("bad RESP length `{text}`")))?;
    if !(-1..=MAX_BULK).contains(&n) {
        return Err(bad(format!("RESP length {n} out of range")));
    }
    Ok(n)
}

async fn read_item<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> io::Result<Item> {
    let line = read_line(r).await?;
    let (kind, rest) = line.split_at(line.chars().next().map_or(0, char::len_utf8));
    Ok(Item::Done(match kind {
        "+" => Reply::Simple(rest.to_string()),
        "-" => Reply::Error(rest.to_string()),
        ":" => Reply::Integer(rest.parse().map_err(|_| bad(format!("bad RESP integer `{rest}`")))?),
        "$" => match length(rest)? {
            -1 => Reply::Null,
            n => {
                let mut buf = vec![0u8; n as usize + 2];
                r.read_exact(&mut buf).await?;
                if !buf.ends_with(b"\r\n") {
                    return Err(bad("RESP bulk string not terminated by CRLF"));
                }
                buf.truncate(n as usize);
                Reply::Bulk(buf)
            }
        },
        "*" => match length(rest)? {
            -1 => Reply::Null,
            n => return Ok(Item::Array(n as usize)),
        },
        _ => return Err(bad(format!("unexpected RESP reply `{}`", line.chars().take(40).collect::<String>()))),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn parse(bytes: &[u8]) -> io::Result<Reply> {
        let mut r = BufReader::new(bytes);
        read_reply(&mut r).await
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().build().expect("runtime").block_on(f)
    }

    #[test]
    fn encodes_commands_as_bulk_arrays() {
        assert_eq!(encode(&[b"GET", b"42"]), b"*2\r\n$3\r\nGET\r\n$2\r\n42\r\n".to_vec());
        assert_eq!(encode(&[b"SET", b"k", b""]), b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n".to_vec());
    }

    #[test]
    fn parses_every_reply_kind() {
        block_on(async {
            assert_eq!(parse(b"+OK\r\n").await.unwrap(), Reply::Simple("OK".into()));
            assert_eq!(parse(b"-ERR no\r\n").await.unwrap(), Reply::Error("ERR no".into()));
            assert_eq!(parse(b":-7\r\n").await.unwrap(), Reply::Integer(-7));
            assert_eq!(parse(b"$3\r\na\r\n\r\n").await.unwrap(), Reply::Bulk(b"a\r\n".to_vec()));
            assert_eq!(parse(b"$-1\r\n").await.unwrap(), Reply::Null);
            assert_eq!(parse(b"*0\r\n").await.unwrap(), Reply::Array(vec![]));
            assert_eq!(
                parse(b"*3\r\n:1\r\n*2\r\n$1\r\nx\r\n$-1\r\n+y\r\n").await.unwrap(),
                Reply::Array(vec![
                    Reply::Integer(1),
                    Reply::Array(vec![Reply::Bulk(b"x".to_vec()), Reply::Null]),
                    Reply::Simple("y".into())
                ])
            );
        });
    }

    #[test]
    fn rejects_malformed_replies() {
        block_on(async {
            assert!(parse(b"").await.is_err());
            assert!(parse(b"+OK\n").await.is_err());
            assert!(parse(b"?x\r\n").await.is_err());
            assert!(parse(b"$5\r\nab\r\n").await.is_err());
            assert!(parse(b"$99999999999\r\n").await.is_err());
            assert!(parse(b":x\r\n").await.is_err());
            assert!(parse(b"*2\r\n:1\r\n").await.is_err());
        });
    }
}
