//! Tailor's real replicated key-value store.
//!
//! A node is a coordinator and a replica at once. Clients speak RESP2 or RESP3 to any node; its
//! coordinator maps the key on the token ring ([`tailor_core::ring::Ring`]), picks a replica for
//! reads with the configured [`tailor_core::selector`] strategy (parking requests when the
//! strategy says wait), and sends writes to every replica, acknowledging at the configured
//! consistency level. Replicas order work with a [`tailor_core::local`] queue policy feeding `P`
//! worker threads over the fjall storage engine ([`storage`]), and piggyback their facts
//! ([`tailor_core::facts::Feedback`]) on every response.
//!
//! One job per module: [`config`], [`storage`], [`resp`], [`client_conn`] (with [`clients`]), [`tls`], [`commands`],
//! [`internode`], [`peer`], [`peer_conn`], [`limits`], [`coordinator`], [`replica`],
//! [`emulation`], [`metrics`], [`node`] (a running node's shared state; [`start`] builds it and
//! runs it), [`cli`], [`cluster`]; repair in [`hints`], [`repair`],
//! [`anti_entropy`] (over [`merkle`] trees) and [`gc`] (tombstones and expired values); expiry
//! replicated as an absolute time in [`expiry`].

#![warn(missing_docs)]

pub mod anti_entropy;
pub mod cli;
pub mod client_conn;
pub mod clients;
pub mod cluster;
pub mod commands;
pub mod commit;
pub mod config;
pub mod coordinator;
pub mod counter;
pub mod disk;
pub mod disk_watch;
pub mod emulation;
pub mod expiry;
pub mod flush_scope;
pub mod gc;
pub mod hints;
pub mod hlc;
pub mod internode;
pub mod knobs;
pub mod limits;
pub mod merkle;
pub mod metrics;
pub mod node;
pub mod peer;
pub mod peer_conn;
pub mod process;
pub mod recovery;
pub mod repair;
pub mod replica;
pub mod resp;
pub mod row_cache;
pub mod scrape;
pub mod session;
pub mod size_cache;
pub mod staged;
pub mod start;
pub mod storage;
pub mod tls;
pub mod transport;

/// A stable 64-bit hash of a client key (FNV-1a); the ring mixes it again.
pub fn key_hash(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The ring token of a client key: where it sits on the ring (what [`tailor_core::ring::Ring`]
/// places), and the order of the storage's `versions` keyspace.
pub fn token(key: &[u8]) -> u64 {
    tailor_core::ring::token(key_hash(key))
}
