//! Who a client connection is (Redis-style `AUTH` with two users), the consistency level it
//! asked for with `CONSISTENCY`, the protocol version it chose with `HELLO`, and the commands
//! it queued after `MULTI` ([`Transaction`]; what `EXEC` does with them is
//! [`crate::commands`]' transaction layer, which depends on this module, never the reverse).
//!
//! - `default`, whose password is `requirepass`: with one set, every command but `AUTH`,
//!   `HELLO` and `QUIT` answers `-NOAUTH` until the client authenticates (Redis's rule);
//! - `admin`, whose password is `admin_password`: with one set, the commands that change how
//!   the node runs (`TAILOR.SET`: consistency levels, workers, emulation knobs, debug hooks)
//!   and `FLUSHDB` (it deletes every key of the cluster) need it; data commands work for either user.
//!
//! Which command needs which user is the command table's ([`Access`], one per command in
//! `commands/table.rs`); this module only applies it.
//!
//! Without passwords (the default, on a loopback bind) everything is open, as in Redis.
//! Passwords are compared in constant time; a wrong one is answered `-WRONGPASS` and counted.

use crate::clients::{ClientHandle, ClientInfo, Registry};
use crate::config::{Consistency, NodeConfig};
use crate::limits::Lease;
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

/// Who may run a command (each command's is in the command table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone, before authenticating too (`AUTH`, `HELLO`, `QUIT`).
    BeforeAuth,
    /// An authenticated user, either one (data and connection commands; unknown commands).
    User,
    /// The admin user, when there is an admin password: commands that change how the node runs
    /// or delete every key.
    Admin,
}

/// Most commands one transaction queues.
pub const MAX_QUEUED_COMMANDS: usize = 100_000;

/// Bytes a queued argument costs beyond its own (its vector).
const ARGUMENT_OVERHEAD: u64 = 32;

/// A connection's open transaction: the commands (their arguments, the name first) queued since
/// `MULTI`, within bounds: at most [`MAX_QUEUED_COMMANDS`] commands and `max_command_bytes`
/// bytes, leased from the node's buffer budget.
#[derive(Debug)]
pub struct Transaction {
    queued: Vec<Vec<Vec<u8>>>,
    /// The queued bytes' share of the node's buffer budget.
    lease: Lease,
    /// A command was refused while queuing: `EXEC` answers `EXECABORT`.
    aborted: bool,
}

impl Transaction {
    /// An empty transaction whose queued bytes are leased through `lease`.
    pub fn new(lease: Lease) -> Transaction {
        Transaction { queued: Vec::new(), lease, aborted: false }
    }

    /// Whether a command was refused while queuing (`EXEC` will run nothing).
    pub fn aborted(&self) -> bool {
        self.aborted
    }

    /// Queue `args` if the limits allow (at most `max_bytes` queued bytes), else the reason.
    pub fn push(&mut self, args: Vec<Vec<u8>>, max_bytes: u64) -> Result<(), String> {
        let held = self.lease.held() + args.iter().map(|a| a.len() as u64 + ARGUMENT_OVERHEAD).sum::<u64>();
        if self.queued.len() >= MAX_QUEUED_COMMANDS {
            return Err(format!(
                "a transaction queues at most {MAX_QUEUED_COMMANDS} commands (this node's fixed limit)"
            ));
        }
        if held > max_bytes {
            return Err(format!(
                "a transaction's queued commands may hold at most {max_bytes} bytes (max_command_bytes)"
            ));
        }
        self.lease.resize(held).map_err(|e| e.to_string())?;
        self.queued.push(args);
        Ok(())
    }

    /// Mark it failed and drop what it queued (EXEC will run none of it).
    pub fn abort(&mut self) {
        self.aborted = true;
        self.queued = Vec::new();
        self.lease.resize(0).expect("shrinking a lease cannot fail");
    }

    /// The queued commands, in order (their bytes are given back to the budget).
    pub fn into_queued(self) -> Vec<Vec<Vec<u8>>> {
        self.queued
    }
}

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

    /// `AUTH password` (`user` `None`) or `AUTH user password`: the user on success, else the
    /// reply to send.
    pub fn auth(&mut self, cfg: &NodeConfig, user: Option<&[u8]>, password: &[u8]) -> Result<User, Reply> {
        let named = user.is_some();
        let user = user.unwrap_or(b"default");
        let found = match (user, &cfg.requirepass, &cfg.admin_password) {
            (b"default", Some(expected), _) if same(password, expected) => Some(User::Default),
            (b"admin", _, Some(expected)) if same(password, expected) => Some(User::Admin),
            (b"default", None, _) if !named && cfg.admin_password.is_none() => {
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

    /// Whether this session may run command `name` (lower case), which needs `access`; the
    /// refusal otherwise.
    pub fn may_run(&self, cfg: &NodeConfig, name: &str, access: Access) -> Result<(), Reply> {
        let open = cfg.requirepass.is_none() && cfg.admin_password.is_none();
        if open || access == Access::BeforeAuth {
            return Ok(());
        }
        if self.user.is_none() && cfg.requirepass.is_some() {
            return Err(Reply::Error("NOAUTH Authentication required.".into()));
        }
        if access == Access::Admin && cfg.admin_password.is_some() && self.user != Some(User::Admin) {
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

    use Access::{Admin, BeforeAuth, User as Data};

    fn auth(s: &mut Session, c: &NodeConfig, a: &[&str]) -> Result<User, Reply> {
        match a {
            [p] => s.auth(c, None, p.as_bytes()),
            [u, p] => s.auth(c, Some(u.as_bytes()), p.as_bytes()),
            _ => unreachable!("AUTH takes one or two arguments"),
        }
    }

    #[test]
    fn open_by_default() {
        let s = Session::default();
        assert!(s.may_run(&cfg(None, None), "tailor.set", Admin).is_ok());
        assert!(s.may_run(&cfg(None, None), "get", Data).is_ok());
    }

    #[test]
    fn requirepass_gates_everything_but_auth() {
        let c = cfg(Some("s3cret"), None);
        let mut s = Session::default();
        assert!(matches!(s.may_run(&c, "get", Data), Err(Reply::Error(e)) if e.starts_with("NOAUTH")));
        assert!(s.may_run(&c, "auth", BeforeAuth).is_ok());
        assert!(matches!(auth(&mut s, &c, &["nope"]), Err(Reply::Error(e)) if e.starts_with("WRONGPASS")));
        assert!(auth(&mut s, &c, &["s3cret!"]).is_err(), "a longer password is wrong too");
        assert_eq!(auth(&mut s, &c, &["s3cret"]), Ok(User::Default));
        assert!(s.may_run(&c, "get", Data).is_ok() && s.may_run(&c, "tailor.set", Admin).is_ok());
    }

    #[test]
    fn admin_commands_need_the_admin_user() {
        let c = cfg(Some("data"), Some("root"));
        let mut s = Session::default();
        auth(&mut s, &c, &["data"]).unwrap();
        assert!(matches!(s.may_run(&c, "tailor.set", Admin), Err(Reply::Error(e)) if e.starts_with("NOPERM")));
        assert!(s.may_run(&c, "flushdb", Admin).is_err(), "FLUSHDB is the admin's");
        assert!(auth(&mut s, &c, &["admin", "data"]).is_err());
        assert_eq!(auth(&mut s, &c, &["admin", "root"]), Ok(User::Admin));
        assert!(s.may_run(&c, "tailor.set", Admin).is_ok() && s.may_run(&c, "get", Data).is_ok());
        // an admin password alone: data stays open, knobs do not
        let c = cfg(None, Some("root"));
        assert!(Session::default().may_run(&c, "get", Data).is_ok());
        assert!(Session::default().may_run(&c, "tailor.set", Admin).is_err());
    }
}
