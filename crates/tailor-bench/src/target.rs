//! What the load generator drives. The open loop, the recording and the validity verdict are
//! the same for every system; a [`Target`] only connects and executes one planned request.
//! [`RespTarget`] is Tailor's store (any RESP server); `tailor-cql` provides Cassandra's.

use crate::node_cpu::Schedstat;
use crate::resp::{Conn, Reply};
use crate::schedule::{value_bytes, Planned};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// How a request ended at the target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A value (read), an acknowledgement (write).
    Ok,
    /// A read found no value.
    Miss,
    /// The target answered with an error; the connection stays usable.
    Failed(String),
}

/// A system under load.
pub trait Target: Send + Sync + 'static {
    /// One connection (one request at a time) to a coordinator.
    type Conn: Send + 'static;

    /// Open a connection to coordinator `node` (an index into the bench's node list).
    fn connect(&self, node: usize) -> impl Future<Output = io::Result<Self::Conn>> + Send;

    /// Execute `p` on `conn`. An `Err` means the connection is unusable and is dropped.
    fn exec(&self, conn: &mut Self::Conn, p: &Planned) -> impl Future<Output = io::Result<Answer>> + Send;

    /// Read `keys` in one request on `conn` (a multi-get); a target without one refuses.
    fn multiget(
        &self,
        _conn: &mut Self::Conn,
        _keys: &[(u64, u64)],
    ) -> impl Future<Output = io::Result<Answer>> + Send {
        async { Ok(Answer::Failed(format!("{} has no multi-get", self.describe(0)))) }
    }

    /// The selector and local policy the target runs, when it can tell.
    fn labels(&self) -> impl Future<Output = (Option<String>, Option<String>)> + Send;

    /// How coordinator `node` is named in error messages.
    fn describe(&self, node: usize) -> String;

    /// Each node's scheduler counters now, `None` for a node that cannot tell (the validity
    /// rule then judges without it); an empty list when the target measures none.
    fn node_cpu(&self) -> impl Future<Output = Vec<Option<Schedstat>>> + Send {
        async { Vec::new() }
    }
}

/// Tailor's store, or any server speaking RESP: `GET key`, `SET key value`, `MGET key...`.
pub struct RespTarget {
    /// Client addresses of the nodes.
    pub nodes: Vec<SocketAddr>,
}

impl Target for RespTarget {
    type Conn = Conn;

    async fn connect(&self, node: usize) -> io::Result<Conn> {
        Conn::connect(self.nodes[node]).await
    }

    async fn exec(&self, conn: &mut Conn, p: &Planned) -> io::Result<Answer> {
        let key = p.key.to_string();
        let reply = match p.op {
            tailor_core::Op::Read => conn.command(&[b"GET", key.as_bytes()]).await?,
            tailor_core::Op::Write => conn.command(&[b"SET", key.as_bytes(), &value_bytes(p.key, p.size)]).await?,
        };
        Ok(match (p.op, reply) {
            (tailor_core::Op::Read, Reply::Bulk(_)) | (tailor_core::Op::Write, Reply::Simple(_)) => Answer::Ok,
            (tailor_core::Op::Read, Reply::Null) => Answer::Miss,
            (_, Reply::Error(e)) => Answer::Failed(e),
            (_, other) => Answer::Failed(format!("unexpected reply {other:?}")),
        })
    }

    async fn multiget(&self, conn: &mut Conn, keys: &[(u64, u64)]) -> io::Result<Answer> {
        let names: Vec<String> = keys.iter().map(|(k, _)| k.to_string()).collect();
        let mut args: Vec<&[u8]> = vec![b"MGET"];
        args.extend(names.iter().map(|k| k.as_bytes()));
        Ok(crate::multiget::answer(keys.len(), conn.command(&args).await?))
    }

    /// What the first answering node says (`TAILOR.GET selector`/`local`, falling back to the
    /// `selector:`/`local:` lines of `INFO`).
    async fn labels(&self) -> (Option<String>, Option<String>) {
        let (mut sel, mut loc) = (None, None);
        for &addr in &self.nodes {
            if sel.is_some() && loc.is_some() {
                break;
            }
            let asked = tokio::time::timeout(Duration::from_secs(2), ask_labels(addr)).await;
            if let Ok(Ok((s, l))) = asked {
                sel = sel.or(s);
                loc = loc.or(l);
            }
        }
        (sel, loc)
    }

    fn describe(&self, node: usize) -> String {
        self.nodes[node].to_string()
    }

    /// Each node's `INFO cpu` counters, one node after the other (a few ms each; 2 s at most).
    async fn node_cpu(&self) -> Vec<Option<Schedstat>> {
        let mut out = Vec::with_capacity(self.nodes.len());
        for &addr in &self.nodes {
            let asked = tokio::time::timeout(Duration::from_secs(2), async {
                Conn::connect(addr).await?.command(&[b"INFO", b"cpu"]).await
            });
            out.push(match asked.await {
                Ok(Ok(Reply::Bulk(info))) => Schedstat::from_info(&String::from_utf8_lossy(&info)),
                _ => None,
            });
        }
        out
    }
}

async fn ask_labels(addr: SocketAddr) -> io::Result<(Option<String>, Option<String>)> {
    let mut conn = Conn::connect(addr).await?;
    let (mut s, mut l) = (knob(&mut conn, "selector").await?, knob(&mut conn, "local").await?);
    if s.is_none() || l.is_none() {
        if let Reply::Bulk(info) = conn.command(&[b"INFO"]).await? {
            let info = String::from_utf8_lossy(&info).into_owned();
            let field = |name: &str| {
                info.lines()
                    .find_map(|line| line.strip_prefix(name).map(|v| v.trim().to_string()))
                    .filter(|v| !v.is_empty())
            };
            s = s.or_else(|| field("selector:"));
            l = l.or_else(|| field("local:"));
        }
    }
    Ok((s, l))
}

/// A `TAILOR.GET` knob as text, `None` if the node does not know it.
async fn knob(conn: &mut Conn, name: &str) -> io::Result<Option<String>> {
    Ok(match conn.command(&[b"TAILOR.GET", name.as_bytes()]).await? {
        Reply::Bulk(v) => Some(String::from_utf8_lossy(&v).into_owned()),
        _ => None,
    })
}
