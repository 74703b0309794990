//! Trace replay: requests read from a file instead of generated. Three formats, each possibly
//! zstd-compressed (docs/traces.md):
//! - Tailor's CSV, `time,key,op,size` ([`tailor_csv`]);
//! - Twitter's cache traces (OSDI'20), CSV `timestamp,key,key size,value size,client,op,TTL`
//!   ([`twitter`]);
//! - libCacheSim's binary `oracleGeneral`, 24-byte records ([`oracle_general`]).
//!
//! Decoding is pure (bytes in, records out); engines read the file.

pub mod oracle_general;
pub mod tailor_csv;
pub mod twitter;

use super::WorkloadError;
use crate::model::Op;
use crate::ring::hash_key;
use crate::time::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Read;

pub use tailor_csv::parse_trace;

/// One request of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Arrival time since the start of the trace.
    pub time: Nanos,
    /// Key (an integer key as written, or [`string_key`] of a textual one).
    pub key: u64,
    /// Read or write.
    pub op: Op,
    /// Value size in bytes, as written (0 allowed).
    pub size: u64,
}

/// The integer key for a textual key: `ring::hash_key` of the 64-bit FNV-1a hash of its bytes.
///
/// Engines that receive string keys from clients use the same function, so a trace and a live
/// run name the same keys.
pub fn string_key(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let fnv = bytes.iter().fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME));
    hash_key(fnv)
}

/// A trace file's format (`workload.trace_format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    /// Told by the file: `oracleGeneral` in its name is the binary format; text whose first
    /// line has Twitter's 7 fields and one of its operations is Twitter's; other text is Tailor's.
    #[default]
    Auto,
    /// Tailor's CSV, `time,key,op,size`.
    Tailor,
    /// Twitter's cache-trace CSV.
    Twitter,
    /// libCacheSim's `oracleGeneral` binary records.
    OracleGeneral,
}

impl TraceFormat {
    /// Its name in specs.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Auto => "auto",
            TraceFormat::Tailor => "tailor",
            TraceFormat::Twitter => "twitter",
            TraceFormat::OracleGeneral => "oracle-general",
        }
    }
}

/// A decoded trace: its requests, the format they were read in, and what was left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// The requests, in time order.
    pub records: Vec<TraceRecord>,
    /// The format the file was read in (never `Auto`).
    pub format: TraceFormat,
    /// Operations that are neither reads nor writes (Twitter's delete, incr, decr), by name,
    /// with how many lines each had; none of them is replayed.
    pub skipped: Vec<(String, u64)>,
    /// Whether the file was zstd-compressed.
    pub compressed: bool,
}

/// The zstd frame's magic number, little-endian on disk.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Decode a trace file's bytes; `name` (the file's name) tells `Auto` the binary format apart.
pub fn decode(bytes: &[u8], format: TraceFormat, name: &str) -> Result<Trace, WorkloadError> {
    let compressed = bytes.starts_with(&ZSTD_MAGIC);
    let inflated;
    let raw = if compressed {
        inflated = inflate(bytes)?;
        &inflated[..]
    } else {
        bytes
    };
    let format = match format {
        TraceFormat::Auto => detect(raw, name),
        known => known,
    };
    let text = || {
        std::str::from_utf8(raw).map_err(|e| WorkloadError::Format {
            format: format.name(),
            message: format!(
                "not UTF-8 text ({e}); a binary oracleGeneral trace needs `oracleGeneral` in its file name or workload.trace_format = \"oracle-general\""
            ),
        })
    };
    let (records, skipped) = match format {
        TraceFormat::Tailor | TraceFormat::Auto => (parse_trace(text()?)?, Vec::new()),
        TraceFormat::Twitter => twitter::parse(text()?)?,
        TraceFormat::OracleGeneral => (oracle_general::parse(raw)?, Vec::new()),
    };
    Ok(Trace { records, format, skipped, compressed })
}

/// Decompress every zstd frame of `bytes` (a file may hold several, as `pzstd` and `cat`
/// of compressed files make).
fn inflate(bytes: &[u8]) -> Result<Vec<u8>, WorkloadError> {
    let mut out = Vec::with_capacity(bytes.len().saturating_mul(4));
    let mut input = bytes;
    while !input.is_empty() {
        let mut frame = ruzstd::decoding::StreamingDecoder::new(&mut input)
            .map_err(|e| WorkloadError::Format { format: "zstd", message: e.to_string() })?;
        frame.read_to_end(&mut out).map_err(|e| WorkloadError::Format { format: "zstd", message: e.to_string() })?;
    }
    Ok(out)
}

/// The format of an uncompressed trace file called `name` (see [`TraceFormat::Auto`]).
fn detect(raw: &[u8], name: &str) -> TraceFormat {
    if name.to_ascii_lowercase().contains("oraclegeneral") {
        return TraceFormat::OracleGeneral;
    }
    let first = raw
        .split(|&b| b == b'\n')
        .map(|l| l.trim_ascii())
        .find(|l| !l.is_empty() && !l.starts_with(b"#"))
        .unwrap_or_default();
    let fields: Vec<&[u8]> = first.split(|&b| b == b',').collect();
    let twitter_op = fields.get(5).is_some_and(|op| twitter::op_of(&String::from_utf8_lossy(op)).is_some());
    if fields.len() == twitter::FIELDS && twitter_op {
        TraceFormat::Twitter
    } else {
        TraceFormat::Tailor
    }
}

/// Times for requests stamped in whole seconds (`seconds`, non-decreasing): the `i`-th of the
/// `n` requests of one second arrives `i/n` of a second after its start, counted from the first
/// request's second, so that a second's requests are spread evenly rather than all arriving at
/// once. `seconds` must be non-decreasing (the readers check it first).
pub fn spread_seconds(seconds: &[u64]) -> Vec<Nanos> {
    const SECOND: u64 = 1_000_000_000;
    let Some(&origin) = seconds.first() else { return Vec::new() };
    let mut times = Vec::with_capacity(seconds.len());
    let mut start = 0;
    while start < seconds.len() {
        let s = seconds[start];
        let n = seconds[start..].iter().take_while(|&&t| t == s).count();
        let base = (s - origin).saturating_mul(SECOND);
        times.extend((0..n as u64).map(|i| base + i * SECOND / n as u64));
        start += n;
    }
    debug_assert!(times.windows(2).all(|w| w[0] <= w[1]), "spread times stay in order");
    debug_assert_eq!(times.len(), seconds.len(), "a time per record");
    debug_assert!(
        times.iter().zip(seconds).all(|(&t, &s)| t / SECOND == s - origin || t == u64::MAX),
        "each record stays within its own second"
    );
    times
}

/// Give every request of size 0 its key's size: the size of the key's latest earlier request
/// that had one, or else of its first later one (a read that missed, or a trace that records
/// sizes on writes only). A key that never has a size keeps 0.
pub fn fill_sizes_per_key(records: &mut [TraceRecord]) {
    let mut first: HashMap<u64, u64> = HashMap::new();
    for r in records.iter().filter(|r| r.size > 0) {
        first.entry(r.key).or_insert(r.size);
    }
    let mut last: HashMap<u64, u64> = HashMap::new();
    for r in records.iter_mut() {
        if r.size > 0 {
            last.insert(r.key, r.size);
        } else if let Some(&size) = last.get(&r.key).or_else(|| first.get(&r.key)) {
            r.size = size;
        }
    }
    debug_assert!(
        records.iter().all(|r| r.size > 0 || !first.contains_key(&r.key)),
        "a key with a known size has it everywhere"
    );
}

/// Reads and writes among `records`.
pub fn op_counts(records: &[TraceRecord]) -> (u64, u64) {
    let reads = records.iter().filter(|r| r.op == Op::Read).count() as u64;
    (reads, records.len() as u64 - reads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seconds_requests_are_spread_evenly_from_the_first_second() {
        let ms = |t: Nanos| t / 1_000_000;
        let times: Vec<_> = spread_seconds(&[100, 100, 100, 100, 101, 103, 103]).into_iter().map(ms).collect();
        assert_eq!(times, vec![0, 250, 500, 750, 1_000, 3_000, 3_500]);
        assert!(spread_seconds(&[]).is_empty());
    }

    #[test]
    fn a_request_without_a_size_takes_its_keys() {
        let r = |key, size| TraceRecord { time: 0, key, op: Op::Read, size };
        let mut records = vec![r(1, 0), r(1, 10), r(2, 0), r(1, 0), r(1, 30), r(1, 0), r(3, 5)];
        fill_sizes_per_key(&mut records);
        let sizes: Vec<_> = records.iter().map(|r| r.size).collect();
        assert_eq!(sizes, vec![10, 10, 0, 10, 30, 30, 5]);
    }

    #[test]
    fn the_format_is_told_by_name_and_first_line() {
        assert_eq!(detect(b"", "cluster52.oracleGeneral.bin"), TraceFormat::OracleGeneral);
        assert_eq!(detect(b"# a trace\n0,k,1,10,7,get,0\n", "c.csv"), TraceFormat::Twitter);
        assert_eq!(detect(b"time,key,op,size\n0,k,get,10\n", "c.csv"), TraceFormat::Tailor);
        assert_eq!(detect(b"0,k,1,10,7,frobnicate,0\n", "c.csv"), TraceFormat::Tailor);
    }

    #[test]
    fn a_binary_file_read_as_text_says_what_to_do() {
        let err = decode(&[0xff, 0xfe, 0, 1], TraceFormat::Auto, "x.bin").unwrap_err().to_string();
        assert!(err.contains("oracle-general"), "{err}");
    }

    #[test]
    fn a_broken_zstd_stream_is_an_error_not_a_panic() {
        let err = decode(&[0x28, 0xB5, 0x2F, 0xFD, 1, 2, 3], TraceFormat::Auto, "x.zst").unwrap_err().to_string();
        assert!(err.starts_with("zstd trace:"), "{err}");
    }
}
