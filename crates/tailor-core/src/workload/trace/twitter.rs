//! Twitter's cache traces (Yang, Yue and Vinayak, OSDI'20; the twitter/cache-trace repository,
//! CC-BY 4.0): one request per line, `timestamp,anonymized key,key size,value size,client
//! id,operation,TTL`, the timestamp in whole seconds.
//!
//! How a line becomes a request (docs/traces.md):
//! - `get` and `gets` are reads; `set`, `add`, `cas`, `replace`, `append` and `prepend` are
//!   writes of the value size given; every other operation (`delete`, `incr`, `decr`, ...) is
//!   skipped and counted by name;
//! - the key is hashed as Tailor hashes string keys ([`super::string_key`]), so its namespaces
//!   stay part of it; a key containing commas is everything between the first field and the
//!   last five;
//! - requests of one second are spread evenly over it ([`super::spread_seconds`]);
//! - a request whose value size is 0 (a get that missed) takes its key's size
//!   ([`super::fill_sizes_per_key`]).
//!
//! Key size, client id and TTL are read for their syntax only: Tailor's model has no use for
//! them yet. Blank lines and lines starting with `#` are skipped. Every error names its line.

use super::{fill_sizes_per_key, spread_seconds, string_key, TraceRecord};
use crate::model::Op;
use crate::workload::WorkloadError;
use std::collections::BTreeMap;

/// Fields of a line.
pub const FIELDS: usize = 7;

/// Distinct skipped operation names counted one by one; the rest are counted as `other`.
const MAX_SKIPPED_NAMES: usize = 32;

/// The request an operation makes (`None`: skipped).
pub fn op_of(name: &str) -> Option<Op> {
    match name {
        "get" | "gets" => Some(Op::Read),
        "set" | "add" | "cas" | "replace" | "append" | "prepend" => Some(Op::Write),
        _ => None,
    }
}

/// One line's fields: its second, key, value size and operation.
struct Line<'a> {
    second: u64,
    key: &'a str,
    value_size: u64,
    op: &'a str,
}

/// Operations skipped, by name, with how many lines each had.
pub type Skipped = Vec<(String, u64)>;

/// Parse a whole trace: its requests, and the skipped operations with their counts.
pub fn parse(text: &str) -> Result<(Vec<TraceRecord>, Skipped), WorkloadError> {
    let mut seconds = Vec::new();
    let mut records = Vec::new();
    let mut skipped: BTreeMap<String, u64> = BTreeMap::new();
    let mut last = 0;
    for (idx, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |message: String| WorkloadError::Line { line: idx + 1, message };
        let l = fields(line).map_err(at)?;
        if l.second < last {
            return Err(at(format!(
                "timestamp {} s is before the previous line's {last} s (times must be non-decreasing)",
                l.second
            )));
        }
        last = l.second;
        let Some(op) = op_of(l.op) else {
            let name = if skipped.len() < MAX_SKIPPED_NAMES || skipped.contains_key(l.op) { l.op } else { "other" };
            *skipped.entry(name.to_string()).or_default() += 1;
            continue;
        };
        seconds.push(l.second);
        records.push(TraceRecord { time: 0, key: string_key(l.key.as_bytes()), op, size: l.value_size });
    }
    for (r, t) in records.iter_mut().zip(spread_seconds(&seconds)) {
        r.time = t;
    }
    fill_sizes_per_key(&mut records);
    Ok((records, skipped.into_iter().collect()))
}

/// Split and check one non-blank line; the error lacks the line number.
fn fields(line: &str) -> Result<Line<'_>, String> {
    let count = line.split(',').count();
    let wrong = || {
        format!("expected {FIELDS} fields `timestamp,key,key size,value size,client id,operation,TTL`, found {count}")
    };
    let (second, rest) = line.split_once(',').ok_or_else(wrong)?;
    let tail: Vec<&str> = rest.rsplitn(FIELDS - 1, ',').collect();
    let [ttl, op, client, value_size, key_size, key] = tail[..] else { return Err(wrong()) };
    let number = |what: &str, text: &str| -> Result<u64, String> {
        text.trim().parse().map_err(|_| format!("{what} `{}` is not a whole number", text.trim()))
    };
    let second = number("timestamp", second)?;
    number("key size", key_size)?;
    let value_size = number("value size", value_size)?;
    let _ = (client, number("TTL", ttl)?);
    let key = key.trim();
    if key.is_empty() {
        return Err("key is empty".into());
    }
    Ok(Line { second, key, value_size, op: op.trim() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Nanos;

    const SAMPLE: &str = "\
0,nz:u:eeW511W3dcH3de3d15ec,26,35,1,get,0
0,nz:u:eeW511W3dcH3de3d15ec,26,0,1,get,0
0,p:a:k,5,0,2,delete,0
1,p:a:k,5,1200,2,set,3600
1,nz:u:q,9,0,3,gets,0
1,nz:u:q,9,77,3,cas,0
2,x:y,3,10,1,incr,0
2,p:a:k,5,0,2,get,0
";

    #[test]
    fn maps_operations_spreads_seconds_and_sizes_keys() {
        let (records, skipped) = parse(SAMPLE).unwrap();
        let ms = |t: Nanos| t / 1_000_000;
        let got: Vec<_> = records.iter().map(|r| (ms(r.time), r.op, r.size)).collect();
        assert_eq!(
            got,
            vec![
                (0, Op::Read, 35),
                (500, Op::Read, 35),
                (1_000, Op::Write, 1_200),
                (1_333, Op::Read, 77),
                (1_666, Op::Write, 77),
                (2_000, Op::Read, 1_200),
            ]
        );
        assert_eq!(records[0].key, string_key(b"nz:u:eeW511W3dcH3de3d15ec"));
        assert_eq!(skipped, vec![("delete".to_string(), 1), ("incr".to_string(), 1)]);
    }

    #[test]
    fn a_key_with_commas_keeps_them() {
        let (records, _) = parse("5,a,b,3,10,1,set,0\n").unwrap();
        assert_eq!(records[0].key, string_key(b"a,b"));
    }

    #[test]
    fn every_bad_line_names_its_number() {
        let bad = |line: &str| match parse(&format!("0,k,1,1,1,get,0\n{line}\n")).unwrap_err() {
            WorkloadError::Line { line, message } => (line, message),
            other => panic!("{other}"),
        };
        assert_eq!(
            bad("0,k,1,1,get,0").1,
            "expected 7 fields `timestamp,key,key size,value size,client id,operation,TTL`, found 6"
        );
        assert_eq!(bad("soon,k,1,1,1,get,0"), (2, "timestamp `soon` is not a whole number".into()));
        assert_eq!(bad("0,k,1,-1,1,get,0").1, "value size `-1` is not a whole number");
        assert_eq!(bad("0, ,1,1,1,get,0").1, "key is empty");
        assert_eq!(bad("0,k,1,1,1,get,ttl").1, "TTL `ttl` is not a whole number");
        let (line, message) = match parse("3,k,1,1,1,get,0\n2,k,1,1,1,get,0\n").unwrap_err() {
            WorkloadError::Line { line, message } => (line, message),
            other => panic!("{other}"),
        };
        assert_eq!(
            (line, message.as_str()),
            (2, "timestamp 2 s is before the previous line's 3 s (times must be non-decreasing)")
        );
    }
}
