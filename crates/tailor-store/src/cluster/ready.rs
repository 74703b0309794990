//! Whether a started cluster is ready: every node listens and sees every peer up. Listening is
//! not enough: a node that heartbeated a peer still starting has marked it down, and a write at
//! ALL (or QUORUM on a small cluster) in that window fails although every process runs.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// The body of `GET path` over HTTP/1.0 from `addr` (a node's metrics endpoint).
pub fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut body = String::new();
    s.read_to_string(&mut body)?;
    Ok(body.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or(body))
}

/// Whether the node whose metrics are at `metrics` reports `peers` peers, all up.
pub fn sees_peers_up(metrics: SocketAddr, peers: usize) -> bool {
    let Ok(text) = http_get(metrics, "/metrics") else { return false };
    let states: Vec<bool> = text
        .lines()
        .filter(|l| l.starts_with("tailor_peer_up{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v == 1.0)
        .collect();
    states.len() == peers && states.iter().all(|&up| up)
}
