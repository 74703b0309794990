//! `tailor cluster repair`: an anti-entropy pass on every running node of a cluster directory,
//! one node after the other (each compares the Merkle trees of the token ranges it replicates
//! with the other replicas' and repairs the keys of differing leaves; see `anti_entropy.rs`).
//! Each node's reply is its pass's report: `ranges=… mismatched=… leaves=… scanned=…
//! exchanged=… repaired=… failed=… purged=…`.

use super::pids::{config_path, live_nodes};
use super::{io, ClusterError};
use crate::config::NodeConfig;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;

/// One RESP command as a frame.
fn command(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// Send `args` on `con` and read the one-line reply (`+...` or `-...`).
fn ask(con: &mut BufReader<TcpStream>, args: &[&str]) -> Result<String, ClusterError> {
    con.get_mut().write_all(&command(args)).map_err(io("send to a node"))?;
    let mut line = String::new();
    con.read_line(&mut line).map_err(io("read a node's reply"))?;
    Ok(line.trim_end().to_string())
}

/// Run a pass on every running node of the cluster in `dir`; each node's id and reply.
pub fn repair(dir: &Path) -> Result<Vec<(u32, String)>, ClusterError> {
    let mut replies = Vec::new();
    for (id, _) in live_nodes(dir)? {
        let cfg = NodeConfig::load(&config_path(dir, id)).map_err(|e| ClusterError::Invalid(e.to_string()))?;
        let stream = TcpStream::connect(cfg.client_addr).map_err(io(format!("connect to node {id}")))?;
        let mut con = BufReader::new(stream);
        if let Some(p) = &cfg.admin_password {
            ask(&mut con, &["AUTH", "admin", p])?;
        } else if let Some(p) = &cfg.requirepass {
            ask(&mut con, &["AUTH", p])?;
        }
        let reply = ask(&mut con, &["TAILOR.REPAIR"])?;
        let reply =
            reply.strip_prefix('+').map(str::to_string).ok_or(ClusterError::Invalid(format!("node {id}: {reply}")))?;
        replies.push((id, reply));
    }
    Ok(replies)
}
