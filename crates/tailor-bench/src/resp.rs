//! A minimal RESP client: one connection, one command in flight at a time.
//!
//! Parsing and encoding are [`tailor_resp`]'s, the store's own: this file only moves bytes.
//! Received bytes go into a buffer that [`tailor_resp::parse_frame`] reads whole frames from
//! (within [`FrameLimits::default`]: 512 MiB bulks, 8 nested levels). Replies are read whole
//! before the next command is written, which is what "one request in flight per connection"
//! means for the open-loop driver.

use std::io;
use tailor_resp::{encode_command, parse_frame, FrameLimits};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;

pub use tailor_resp::Frame as Reply;

/// Bytes read from the socket at a time (and a buffer's size when idle).
const READ_CHUNK: usize = 64 * 1024;

/// The RESP frames arriving on a byte stream, read into a buffer and parsed whole.
pub struct FrameReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// `buf[start..]` is not parsed yet.
    start: usize,
    limits: FrameLimits,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// Frames from `inner`.
    pub fn new(inner: R) -> FrameReader<R> {
        FrameReader { inner, buf: Vec::with_capacity(READ_CHUNK), start: 0, limits: FrameLimits::default() }
    }

    /// The next frame; an error when the peer closes or sends what is not RESP.
    pub async fn next(&mut self) -> io::Result<Reply> {
        loop {
            match parse_frame(&self.buf[self.start..], &self.limits) {
                Ok(Some((frame, used))) => {
                    self.start += used;
                    return Ok(frame);
                }
                Ok(None) => {}
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
            self.buf.drain(..self.start);
            self.start = 0;
            if self.buf.capacity() > 4 * READ_CHUNK && self.buf.len() < READ_CHUNK {
                self.buf.shrink_to(READ_CHUNK);
            }
            self.buf.reserve(READ_CHUNK);
            if self.inner.read_buf(&mut self.buf).await? == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed by the server"));
            }
        }
    }
}

/// One RESP connection to a node.
pub struct Conn {
    reader: FrameReader<tokio::net::tcp::OwnedReadHalf>,
    writer: BufWriter<tokio::net::tcp::OwnedWriteHalf>,
    /// The command being written (kept to reuse its allocation).
    out: Vec<u8>,
}

/// The RESP encoding of a command made of `args` (an array of bulk strings).
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_command(args, &mut out);
    out
}

impl Conn {
    /// Connect to `addr` with `TCP_NODELAY` (requests are small and latency is what we measure).
    pub async fn connect(addr: std::net::SocketAddr) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (r, w) = stream.into_split();
        Ok(Conn { reader: FrameReader::new(r), writer: BufWriter::with_capacity(64 * 1024, w), out: Vec::new() })
    }

    /// Send one command and read its reply.
    pub async fn command(&mut self, args: &[&[u8]]) -> io::Result<Reply> {
        self.out.clear();
        encode_command(args, &mut self.out);
        self.writer.write_all(&self.out).await?;
        self.writer.flush().await?;
        self.reader.next().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn parse(bytes: &[u8]) -> io::Result<Reply> {
        FrameReader::new(bytes).next().await
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
    fn reads_frames_that_arrive_in_pieces() {
        block_on(async {
            // a reader that hands out one byte per read: every frame is incomplete many times
            let (mut w, r) = tokio::io::duplex(1);
            let writer = tokio::spawn(async move {
                w.write_all(b"+OK\r\n$3\r\na\r\n\r\n*2\r\n:1\r\n$-1\r\n").await.unwrap();
            });
            let mut frames = FrameReader::new(r);
            assert_eq!(frames.next().await.unwrap(), Reply::Simple("OK".into()));
            assert_eq!(frames.next().await.unwrap(), Reply::Bulk(b"a\r\n".to_vec()));
            assert_eq!(frames.next().await.unwrap(), Reply::Array(vec![Reply::Integer(1), Reply::Null]));
            writer.await.unwrap();
            assert_eq!(frames.next().await.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
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
