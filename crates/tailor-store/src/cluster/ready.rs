//! Whether a started cluster is ready: every node listens and sees every peer up and caught up.
//! Listening is not enough: a node that heartbeated a peer still starting has marked it down,
//! and a write at ALL (or QUORUM on a small cluster) in that window fails although every
//! process runs.

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

/// Whether the node whose metrics are at `metrics` reports `peers` peers, all up and caught up,
/// and is caught up itself. A node starts recovering (`recovery.rs`) and peers avoid it at ONE
/// until a heartbeat says it left; a cluster called ready before then sends every read at ONE
/// around the node that left last (seen in CI: a frozen node no read went to, because its last
/// heartbeat before the freeze still said "recovering").
pub fn sees_peers_up(metrics: SocketAddr, peers: usize) -> bool {
    let Ok(text) = http_get(metrics, "/metrics") else { return false };
    let values = |family: &str| -> Vec<f64> {
        text.lines()
            .filter(|l| l.starts_with(family) && l[family.len()..].starts_with('{'))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .collect()
    };
    let (up, behind, recovering) =
        (values("tailor_peer_up"), values("tailor_peer_recovering"), values("tailor_recovering"));
    up.len() == peers
        && up.iter().all(|&v| v == 1.0)
        && behind.len() == peers
        && behind.iter().all(|&v| v == 0.0)
        && recovering.iter().all(|&v| v == 0.0)
}
