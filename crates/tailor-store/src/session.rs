//! Who a client connection is (Redis-style `AUTH` with two users), the consistency level it
//! asked for with `CONSISTENCY`, the protocol version it chose with `HELLO`, and the commands
//! it queued after `MULTI` ([`crate::commands`]' transaction layer).
//!
//! - `default`, whose password is `requirepass`: with one set, every command but `AUTH`,
//!   `HELLO` and `QUIT` answers `-NOAUTH` until the client authenticates (Redis's rule);
//! - `admin`, whose password is `admin_password`: with one set, the commands that change how
//!   the node runs (`TAILOR.SET`: consistency levels, workers, emulation knobs, debug hooks)
//!   and `FLUSHDB` (it deletes every key of the cluster) need it; data commands work for either user.
//!
//! Without passwords (the default, on a loopback bind) everything is open, as in Redis.
//! Passwords are compared in constant time; a wrong one is answered `-WRONGPASS` and counted.

use crate::clients::{ClientHandle, ClientInfo, Registry};
use crate::commands::Transaction;
use crate::config::{Consistency, NodeConfig};
use crate::resp::{Protocol, Reply};
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// An authenticated user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User {
    /// `requirepass`'s user.
    Default,
    /// `admin_password`'s user.
    Admin,
}

/// One connection's identity and choices.
#[derive(Debug, Default)]
pub struct Session {
    user: Option<User>,
    /// This connection's consistency level for reads and writes (`CONSISTENCY`), if it set one.
    consistency: Option<Consistency>,
    /// Its entry in the node's client registry (`None` in unit tests).
    client: Option<ClientHandle>,
    /// `CLIENT SETNAME`'s name.
    name: Option<String>,
    /// The protocol its replies are encoded in (`HELLO 2` / `HELLO 3`).
    protocol: Protocol,
    /// Wrong passwords this connection sent (`AUTH`, `HELLO ... AUTH`).
    wrong_passwords: u32,
    /// The commands queued since `MULTI`, if one is open.
    transaction: Option<Transaction>,
}

/// Longest `CLIENT SETNAME` name.
pub const MAX_NAME: usize = 256;

/// Commands that change how the node runs: only the admin user, when there is one.
const ADMIN: &[&str] = &["tailor.set", "tailor.repair", "tailor.hints", "flushdb"];

/// Commands a client may send before authenticating.
const BEFORE_AUTH: &[&str] = &["auth", "hello", "quit"];

fn same(password: &[u8], expected: &str) -> bool {
    password.len() == expected.len() && bool::from(password.ct_eq(expected.as_bytes()))
}

impl Session {
    /// A connection's session, registered in `registry` (`CLIENT LIST`) until dropped.
    pub fn connected(registry: &Arc<Registry>, addr: Option<std::net::SocketAddr>) -> Session {
        Session { client: Some(registry.join(addr)), ..Session::default() }
    }

    /// A copy of who the connection is and the consistency it chose, for commands that only
    /// read the session (pipelined GET/SET run concurrently, each with one); it is not in the
    /// client registry, so the connection's own session must be [`Session::touch`]ed for them.
    pub fn snapshot(&self) -> Session {
        Session { user: self.user, consistency: self.consistency, protocol: self.protocol, ..Session::default() }
    }

    /// The protocol version this connection's replies use.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Encode this connection's replies in `p` from now on (`HELLO`).
    pub fn set_protocol(&mut self, p: Protocol) {
        self.protocol = p;
    }

    /// Its connection id (0 when not registered).
    pub fn id(&self) -> u64 {
        self.client.as_ref().map_or(0, ClientHandle::id)
    }

    /// Command `name` arrived (idle time and last command in `CLIENT LIST`).
    pub fn touch(&self, name: &str) {
        if let Some(c) = &self.client {
            c.touch(name);
        }
    }

    /// `CLIENT SETNAME`'s name, if set.
    pub fn name(&self) -> Option<String> {
        self.name.clone()
    }

    /// Name the connection (empty clears); Redis's rules: no spaces, newlines or special
    /// characters.
    pub fn set_name(&mut self, name: &[u8]) -> Result<(), Reply> {
        if name.len() > MAX_NAME || !name.iter().all(|&b| b.is_ascii_graphic()) {
            return Err(Reply::err(format!(
                "Client names cannot contain spaces, newlines or special characters (at most {MAX_NAME} bytes)."
            )));
        }
        let name = String::from_utf8_lossy(name).into_owned();
        if let Some(c) = &self.client {
            c.set_name(&name);
        }
        self.name = (!name.is_empty()).then_some(name);
        Ok(())
    }

    /// This connection's registry entry.
    pub fn info(&self) -> Option<ClientInfo> {
        self.client.as_ref().and_then(ClientHandle::info)
    }

    /// Every connection of the node (none when not registered).
    pub fn clients(&self) -> Vec<ClientInfo> {
        self.registry().map_or_else(Vec::new, |r| r.list())
    }

    /// The node's client registry, if this session is in it.
    pub fn registry(&self) -> Option<&Arc<Registry>> {
        self.client.as_ref().map(ClientHandle::registry)
    }

    /// The consistency level this connection asked for, if any.
    pub fn consistency(&self) -> Option<Consistency> {
        self.consistency
    }

    /// Ask for `level` on this connection's reads and writes (`None`: the node's levels).
    pub fn set_consistency(&mut self, level: Option<Consistency>) {
        self.consistency = level;
    }

    /// `AUTH password` or `AUTH user password`: the user on success, else the reply to send.
    pub fn auth(&mut self, cfg: &NodeConfig, args: &[Vec<u8>]) -> Result<User, Reply> {
        let (user, password) = match args {
            [_, p] => ("default".as_bytes(), p),
            [_, u, p] => (u.as_slice(), p),
            _ => return Err(Reply::err("wrong number of arguments for 'auth' command")),
        };
        let found = match (user, &cfg.requirepass, &cfg.admin_password) {
            (b"default", Some(expected), _) if same(password, expected) => Some(User::Default),
            (b"admin", _, Some(expected)) if same(password, expected) => Some(User::Admin),
            (b"default", None, _) if args.len() == 2 && cfg.admin_password.is_none() => {
                return Err(Reply::err("AUTH <password> called without any password configured for the default user"))
            }
            _ => None,
        };
        match found {
            Some(u) => {
                self.user = Some(u);
                Ok(u)
            }
            None => {
                self.wrong_passwords += 1;
                Err(Reply::Error("WRONGPASS invalid username-password pair or user is disabled.".into()))
            }
        }
    }

    /// Whether a `MULTI` is open on this connection.
    pub fn in_transaction(&self) -> bool {
        self.transaction.is_some()
    }

    /// The open transaction, if any.
    pub fn transaction(&mut self) -> Option<&mut Transaction> {
        self.transaction.as_mut()
    }

    /// Open a transaction (`MULTI`).
    pub fn begin_transaction(&mut self, t: Transaction) {
        self.transaction = Some(t);
    }

    /// Close the open transaction (`EXEC`, `DISCARD`), handing back what it queued.
    pub fn end_transaction(&mut self) -> Option<Transaction> {
        self.transaction.take()
    }

    /// Wrong passwords this connection sent so far.
    pub fn wrong_passwords(&self) -> u32 {
        self.wrong_passwords
    }

    /// Whether this session may run command `name` (lower case); the refusal otherwise.
    pub fn may_run(&self, cfg: &NodeConfig, name: &str) -> Result<(), Reply> {
        let open = cfg.requirepass.is_none() && cfg.admin_password.is_none();
        if open || BEFORE_AUTH.contains(&name) {
            return Ok(());
        }
        if self.user.is_none() && cfg.requirepass.is_some() {
            return Err(Reply::Error("NOAUTH Authentication required.".into()));
        }
        if ADMIN.contains(&name) && cfg.admin_password.is_some() && self.user != Some(User::Admin) {
            return Err(Reply::Error(format!(
                "NOPERM '{name}' changes how the node runs: authenticate as the admin user (AUTH admin <admin_password>)"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(requirepass: Option<&str>, admin: Option<&str>) -> NodeConfig {
        NodeConfig {
            requirepass: requirepass.map(String::from),
            admin_password: admin.map(String::from),
            ..NodeConfig::default()
        }
    }

    fn args(a: &[&str]) -> Vec<Vec<u8>> {
        a.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn open_by_default() {
        let s = Session::default();
        assert!(s.may_run(&cfg(None, None), "tailor.set").is_ok());
        assert!(s.may_run(&cfg(None, None), "get").is_ok());
    }

    #[test]
    fn requirepass_gates_everything_but_auth() {
        let c = cfg(Some("s3cret"), None);
        let mut s = Session::default();
        assert!(matches!(s.may_run(&c, "get"), Err(Reply::Error(e)) if e.starts_with("NOAUTH")));
        assert!(s.may_run(&c, "auth").is_ok());
        assert!(matches!(s.auth(&c, &args(&["auth", "nope"])), Err(Reply::Error(e)) if e.starts_with("WRONGPASS")));
        assert!(s.auth(&c, &args(&["auth", "s3cret!"])).is_err(), "a longer password is wrong too");
        assert_eq!(s.auth(&c, &args(&["auth", "s3cret"])), Ok(User::Default));
        assert!(s.may_run(&c, "get").is_ok() && s.may_run(&c, "tailor.set").is_ok());
    }

    #[test]
    fn admin_commands_need_the_admin_user() {
        let c = cfg(Some("data"), Some("root"));
        let mut s = Session::default();
        s.auth(&c, &args(&["auth", "data"])).unwrap();
        assert!(matches!(s.may_run(&c, "tailor.set"), Err(Reply::Error(e)) if e.starts_with("NOPERM")));
        assert!(s.may_run(&c, "flushdb").is_err(), "FLUSHDB is the admin's");
        assert!(s.auth(&c, &args(&["auth", "admin", "data"])).is_err());
        assert_eq!(s.auth(&c, &args(&["auth", "admin", "root"])), Ok(User::Admin));
        assert!(s.may_run(&c, "tailor.set").is_ok() && s.may_run(&c, "get").is_ok());
        // an admin password alone: data stays open, knobs do not
        let c = cfg(None, Some("root"));
        assert!(Session::default().may_run(&c, "get").is_ok());
        assert!(Session::default().may_run(&c, "tailor.set").is_err());
    }
}
