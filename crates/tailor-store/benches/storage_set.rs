//! `cargo bench -p tailor-store --bench storage_set`: the storage engine's write ceiling, in
//! process, one writer thread: what a node's SET path is measured against (issue 10), and
//! whether Redis's SET rate is within reach of any node built on this engine.
//!
//! Writes `WRITES` values of 1 KiB to random keys among `KEYS` (redis-benchmark's `-r 100000`
//! key names), 16 per batch (a `-P 16` pipeline), each batch moved to the OS before the next
//! (`buffer` durability's promise), through three paths:
//!
//! - fjall alone, one keyspace: the floor of any fjall-based store;
//! - fjall alone, Tailor's layout: the value in `data`, its version in `versions` (with the
//!   node's memtable cap for it);
//! - [`Storage`] in a flush scope: version check, stripes, row cache, one batch per scope.
//!
//! Each row also prints the process's CPU time per write (the writer and fjall's background
//! flushes and compactions). Not a test: figures vary with the machine; compare rows of one run.

use fjall::{Database, KeyspaceCreateOptions, PersistMode};
use std::time::{Duration, Instant};
use tailor_store::config::Durability;
use tailor_store::flush_scope::poll_scoped;
use tailor_store::storage::{Applied, Storage, VERSIONS_MEMTABLE_BYTES};

const KEYS: u64 = 100_000;
const WRITES: u64 = 600_000;
const PIPELINE: u64 = 16;

fn key(i: u64) -> Vec<u8> {
    format!("key:{i:012}").into_bytes()
}

/// A xorshift step: a cheap, dependency-free random key index.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// This process's CPU time so far (user + system, every thread).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // fields after the command's closing parenthesis; utime and stime are the 12th and 13th
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // the kernel's USER_HZ is 100 on every Linux this runs on
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// Run `batch` (one pipeline's writes of the given keys) until `WRITES` writes are done; print
/// writes per second and CPU µs per write.
fn measure(path: &str, mut batch: impl FnMut(&[Vec<u8>], &[u8])) {
    let value = vec![b'x'; 1024];
    let mut state = 0x9e37_79b9_7f4a_7c15;
    let (start, cpu) = (Instant::now(), cpu_time());
    for _ in 0..WRITES / PIPELINE {
        let keys: Vec<Vec<u8>> = (0..PIPELINE).map(|_| key(next(&mut state) % KEYS)).collect();
        batch(&keys, &value);
    }
    let (wall, cpu) = (start.elapsed(), cpu_time().saturating_sub(cpu));
    let rate = WRITES as f64 / wall.as_secs_f64();
    let cpu_us = cpu.as_secs_f64() * 1e6 / WRITES as f64;
    println!("{path:<44} {rate:>12.0} {cpu_us:>14.2}");
}

fn fjall_alone(dir: &std::path::Path, with_versions: bool) {
    let db = Database::builder(dir).manual_journal_persist(true).worker_threads(1).open().expect("open");
    let data = db.keyspace("data", KeyspaceCreateOptions::default).expect("data");
    let versions = || KeyspaceCreateOptions::default().max_memtable_size(VERSIONS_MEMTABLE_BYTES);
    let versions = db.keyspace("versions", versions).expect("versions");
    let mut version = 0u64;
    let label = if with_versions { "fjall alone, data + versions keyspaces" } else { "fjall alone, one keyspace" };
    measure(label, |keys, value| {
        let mut batch = db.batch();
        for k in keys {
            version += 1;
            let mut rec = version.to_le_bytes().to_vec();
            rec.extend_from_slice(value);
            batch.insert(&data, k.as_slice(), rec);
            if with_versions {
                let mut vkey = (version.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes().to_vec();
                vkey.extend_from_slice(k);
                batch.insert(&versions, vkey, version.to_le_bytes());
            }
        }
        batch.commit().expect("commit");
        db.persist(PersistMode::Buffer).expect("persist");
    });
}

fn storage_in_scopes(dir: &std::path::Path) {
    let storage = Storage::open(dir, Durability::Buffer).expect("open").with_row_cache(256 << 20);
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let mut version = 0u64;
    measure("Storage, one flush scope per pipeline", |keys, value| {
        runtime.block_on(poll_scoped(async {
            for k in keys {
                version += 1;
                if storage.apply(k, version, Some(value)).expect("apply") == Applied::Committed {
                    storage.when_durable(|done| done.expect("durable"));
                }
            }
        }));
    });
}

fn main() {
    println!("one writer thread, {WRITES} writes of 1 KiB to {KEYS} random keys, {PIPELINE} per batch, buffer");
    println!("{:<44} {:>12} {:>14}", "path", "writes/s", "CPU µs/write");
    let runs: [fn(&std::path::Path); 3] = [|d| fjall_alone(d, false), |d| fjall_alone(d, true), storage_in_scopes];
    for run in runs {
        let dir = tempfile::tempdir().expect("temporary directory");
        run(dir.path());
    }
}
