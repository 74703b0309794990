//! `cargo bench -p tailor-store --bench storage_get`: the storage engine alone, in process, as
//! the ceiling a node's GET path is measured against (issue 10's "node GET vs fjall in-process").
//!
//! Loads `KEYS` values of 1 KiB under redis-benchmark's key names (`key:000000012345`), then
//! reads random keys with one thread and with two (the machine's cores), through
//! [`Storage::get`] (one lookup, as a node's read does) and through `size_of` + `get` (the two
//! lookups a read cost before the replica kept value sizes), and prints reads per second; then
//! the same reads through the row cache in front of it (`row_cache_mb`, every key cached).
//!
//! Not a test: figures vary with the machine; compare rows of one run.

use std::sync::Arc;
use std::time::Instant;
use tailor_store::config::Durability;
use tailor_store::storage::Storage;

const KEYS: u64 = 100_000;
const READS_PER_THREAD: u64 = 400_000;

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

/// Reads per second over `threads` threads, each running `read` on random keys.
fn rate(storage: &Arc<Storage>, threads: u64, read: fn(&Storage, &[u8])) -> f64 {
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let storage = storage.clone();
            std::thread::spawn(move || {
                let mut state = 0x9e37_79b9_7f4a_7c15 ^ (t + 1);
                for _ in 0..READS_PER_THREAD {
                    read(&storage, &key(next(&mut state) % KEYS));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("reader thread");
    }
    (threads * READS_PER_THREAD) as f64 / start.elapsed().as_secs_f64()
}

fn one_lookup(s: &Storage, k: &[u8]) {
    std::hint::black_box(s.get(k).expect("read"));
}

fn two_lookups(s: &Storage, k: &[u8]) {
    std::hint::black_box(s.size_of(k).expect("size"));
    std::hint::black_box(s.get(k).expect("read"));
}

fn open(dir: &std::path::Path, row_cache_bytes: u64) -> Arc<Storage> {
    let storage = Storage::open_with_cache(dir, Durability::Buffer, Some(256 << 20)).expect("open");
    Arc::new(storage.with_row_cache(row_cache_bytes))
}

fn main() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let storage = open(dir.path(), 0);
    let value = vec![b'x'; 1024];
    for i in 0..KEYS {
        storage.put(&key(i), 1, Some(&value)).expect("load");
    }
    println!("fjall in process, {KEYS} keys of 1 KiB, random reads ({READS_PER_THREAD} per thread)");
    println!("{:<34} {:>12}", "path", "reads/s");
    for threads in [1, 2] {
        println!("{:<34} {:>12.0}", format!("get, {threads} thread(s)"), rate(&storage, threads, one_lookup));
        println!(
            "{:<34} {:>12.0}",
            format!("size_of + get, {threads} thread(s)"),
            rate(&storage, threads, two_lookups)
        );
    }
    drop(storage);
    let cached = open(dir.path(), 256 << 20);
    for i in 0..KEYS {
        cached.get(&key(i)).expect("warm the row cache");
    }
    for threads in [1, 2] {
        println!("{:<34} {:>12.0}", format!("row cache get, {threads} thread(s)"), rate(&cached, threads, one_lookup));
    }
}
