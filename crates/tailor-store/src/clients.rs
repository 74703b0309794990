//! The node's registry of client connections, for `CLIENT LIST`/`INFO` and `INFO clients`:
//! per connection its id, peer address, name (`CLIENT SETNAME`), age, idle time and last
//! command. A connection registers when it opens and leaves when its session is dropped; the
//! registry is bounded ([`MAX_LISTED`]: connections past it work but are not listed, and are
//! counted).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// Most connections the registry lists (the node's `max_clients` usually caps them earlier).
pub const MAX_LISTED: usize = 10_000;

/// Longest command name remembered per connection.
const MAX_CMD: usize = 32;

/// One connection as `CLIENT LIST` shows it.
#[derive(Clone, Debug)]
pub struct ClientInfo {
    /// Its id (`CLIENT ID`).
    pub id: u64,
    /// Peer address, if known.
    pub addr: Option<SocketAddr>,
    /// `CLIENT SETNAME`'s name (empty: none).
    pub name: String,
    /// When it connected.
    pub since: Instant,
    /// When its last command arrived.
    pub last: Instant,
    /// Its last command's name.
    pub cmd: String,
}

impl ClientInfo {
    /// The `CLIENT LIST` line (Redis's `key=value` fields, the ones this node knows).
    pub fn line(&self, now: Instant) -> String {
        let addr = self.addr.map_or_else(|| "?:0".to_string(), |a| a.to_string());
        format!(
            "id={} addr={addr} laddr=? fd=-1 name={} age={} idle={} flags=N db=0 cmd={}",
            self.id,
            self.name,
            now.duration_since(self.since).as_secs(),
            now.duration_since(self.last).as_secs(),
            if self.cmd.is_empty() { "NULL" } else { &self.cmd },
        )
    }
}

/// The connections of one node.
#[derive(Debug, Default)]
pub struct Registry {
    listed: Mutex<BTreeMap<u64, ClientInfo>>,
    next: AtomicU64,
    /// Connections opened so far (`INFO stats`'s `total_connections_received`).
    pub opened: AtomicU64,
    /// Connections open now.
    pub open: AtomicU64,
    /// Connections not listed because the registry was full.
    pub unlisted: AtomicU64,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, ClientInfo>> {
        self.listed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register a new connection from `addr`; it leaves when the handle is dropped.
    pub fn join(self: &Arc<Self>, addr: Option<SocketAddr>) -> ClientHandle {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.opened.fetch_add(1, Ordering::Relaxed);
        self.open.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let mut listed = self.lock();
        if listed.len() < MAX_LISTED {
            let info = ClientInfo { id, addr, name: String::new(), since: now, last: now, cmd: String::new() };
            listed.insert(id, info);
        } else {
            self.unlisted.fetch_add(1, Ordering::Relaxed);
        }
        ClientHandle { id, registry: self.clone() }
    }

    /// Every listed connection, by id.
    pub fn list(&self) -> Vec<ClientInfo> {
        self.lock().values().cloned().collect()
    }

    /// Connection `id`, if listed.
    pub fn get(&self, id: u64) -> Option<ClientInfo> {
        self.lock().get(&id).cloned()
    }

    fn update(&self, id: u64, f: impl FnOnce(&mut ClientInfo)) {
        if let Some(c) = self.lock().get_mut(&id) {
            f(c);
        }
    }
}

/// A registered connection; dropping it unregisters it.
#[derive(Debug)]
pub struct ClientHandle {
    id: u64,
    registry: Arc<Registry>,
}

impl ClientHandle {
    /// The connection's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Its command `cmd` arrived now.
    pub fn touch(&self, cmd: &str) {
        let cmd: String = cmd.chars().take(MAX_CMD).collect();
        self.registry.update(self.id, |c| {
            c.last = Instant::now();
            c.cmd = cmd;
        });
    }

    /// Set its name (`CLIENT SETNAME`; empty clears it).
    pub fn set_name(&self, name: &str) {
        self.registry.update(self.id, |c| c.name = name.to_string());
    }

    /// This connection's entry.
    pub fn info(&self) -> Option<ClientInfo> {
        self.registry.get(self.id)
    }

    /// The registry it is in.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }
}

impl Drop for ClientHandle {
    fn drop(&mut self) {
        self.registry.open.fetch_sub(1, Ordering::Relaxed);
        self.registry.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_join_are_listed_and_leave() {
        let r = Arc::new(Registry::default());
        let a = r.join("127.0.0.1:5000".parse().ok());
        let b = r.join(None);
        a.set_name("worker");
        b.touch("get");
        assert_eq!(r.list().len(), 2);
        let line = a.info().unwrap().line(Instant::now());
        assert!(line.starts_with("id=1 addr=127.0.0.1:5000 ") && line.contains(" name=worker "), "{line}");
        assert!(b.info().unwrap().line(Instant::now()).ends_with("cmd=get"));
        drop(a);
        assert_eq!((r.list().len(), r.open.load(Ordering::Relaxed), r.opened.load(Ordering::Relaxed)), (1, 1, 2));
        assert_ne!(b.id(), 1);
    }
}
