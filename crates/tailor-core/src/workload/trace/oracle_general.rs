//! libCacheSim's `oracleGeneral` binary traces: 24-byte little-endian records of
//! `u32 timestamp (s), u64 object id, u32 object size, i64 next access (virtual time)`, as its
//! trace converters write them (often zstd-compressed, `.oracleGeneral.zst`).
//!
//! The format has no operation: every record is a read (a cache lookup) of its object's size.
//! The object id is the key as is (an integer key, as in Tailor's CSV). Requests of one second
//! are spread evenly over it ([`super::spread_seconds`]). The next-access time (Belady's
//! oracle) is not used.

use super::{spread_seconds, TraceRecord};
use crate::model::Op;
use crate::workload::WorkloadError;

/// Bytes of one record.
pub const RECORD: usize = 24;

/// Parse a whole (uncompressed) trace.
pub fn parse(bytes: &[u8]) -> Result<Vec<TraceRecord>, WorkloadError> {
    let bad = |message: String| WorkloadError::Format { format: "oracleGeneral", message };
    if !bytes.len().is_multiple_of(RECORD) {
        return Err(bad(format!(
            "{} bytes is not a whole number of {RECORD}-byte records ({} whole and {} bytes over)",
            bytes.len(),
            bytes.len() / RECORD,
            bytes.len() % RECORD
        )));
    }
    let mut seconds = Vec::with_capacity(bytes.len() / RECORD);
    let mut records = Vec::with_capacity(bytes.len() / RECORD);
    for (i, r) in bytes.chunks_exact(RECORD).enumerate() {
        let second = u64::from(u32::from_le_bytes(r[0..4].try_into().expect("4 bytes")));
        let key = u64::from_le_bytes(r[4..12].try_into().expect("8 bytes"));
        let size = u64::from(u32::from_le_bytes(r[12..16].try_into().expect("4 bytes")));
        if seconds.last().is_some_and(|&last| second < last) {
            return Err(bad(format!(
                "record {} (byte {}): timestamp {second} s is before the previous record's {} s",
                i + 1,
                i * RECORD,
                seconds.last().copied().unwrap_or_default()
            )));
        }
        seconds.push(second);
        records.push(TraceRecord { time: 0, key, op: Op::Read, size });
    }
    for (r, t) in records.iter_mut().zip(spread_seconds(&seconds)) {
        r.time = t;
    }
    Ok(records)
}

/// One record's bytes (for tests and converters).
pub fn encode(second: u32, key: u64, size: u32, next_access: i64) -> [u8; RECORD] {
    let mut out = [0; RECORD];
    out[0..4].copy_from_slice(&second.to_le_bytes());
    out[4..12].copy_from_slice(&key.to_le_bytes());
    out[12..16].copy_from_slice(&size.to_le_bytes());
    out[16..24].copy_from_slice(&next_access.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_reads_of_their_objects_spread_over_their_second() {
        let bytes: Vec<u8> = [(7, 42, 100, 2), (7, 43, 2_000, -1), (8, 42, 100, -1)]
            .iter()
            .flat_map(|&(s, k, z, n)| encode(s, k, z, n))
            .collect();
        let records = parse(&bytes).unwrap();
        let got: Vec<_> = records.iter().map(|r| (r.time / 1_000_000, r.key, r.op, r.size)).collect();
        assert_eq!(got, vec![(0, 42, Op::Read, 100), (500, 43, Op::Read, 2_000), (1_000, 42, Op::Read, 100)]);
    }

    #[test]
    fn a_torn_or_unordered_file_is_refused_with_where() {
        let one = encode(5, 1, 1, -1);
        let err = parse(&one[..20]).unwrap_err().to_string();
        assert_eq!(
            err,
            "oracleGeneral trace: 20 bytes is not a whole number of 24-byte records (0 whole and 20 bytes over)"
        );
        let back: Vec<u8> = [encode(5, 1, 1, -1), encode(4, 1, 1, -1)].concat();
        let err = parse(&back).unwrap_err().to_string();
        assert!(err.contains("record 2 (byte 24): timestamp 4 s is before the previous record's 5 s"), "{err}");
    }
}
