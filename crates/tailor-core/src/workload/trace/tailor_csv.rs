//! Tailor's own trace format: CSV lines of `time,key,op,size`.

use super::{string_key, TraceRecord};
use crate::model::Op;
use crate::time::{from_ms, Nanos};
use crate::workload::WorkloadError;

/// Parses a CSV trace of `time,key,op,size` lines.
///
/// - `time`: milliseconds since the trace start (a float, >= 0), non-decreasing line to line.
/// - `key`: a decimal `u64` is used as is; anything else (non-empty) is a string hashed with
///   [`string_key`]. The key is everything between the first and the third-from-last comma, so
///   string keys may themselves contain commas; surrounding whitespace is trimmed and there is no
///   quoting.
/// - `op`: `read`, `get` or `r` for reads, `write`, `set` or `w` for writes (any case).
/// - `size`: value size in whole bytes.
///
/// Blank lines and lines whose first non-blank character is `#` are skipped. The first remaining
/// line is a header, and skipped, when it starts with a letter (e.g. `time,key,op,size`). Every
/// error names the 1-based line number.
pub fn parse_trace(text: &str) -> Result<Vec<TraceRecord>, WorkloadError> {
    let mut records = Vec::new();
    let mut first = true;
    let mut last_time: Nanos = 0;
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if std::mem::replace(&mut first, false) && line.starts_with(|c: char| c.is_ascii_alphabetic()) {
            continue;
        }
        let record = parse_line(line).map_err(|message| WorkloadError::Line { line: line_no, message })?;
        if record.time < last_time {
            return Err(WorkloadError::Line {
                line: line_no,
                message: format!(
                    "time {} ms is before the previous line's {} ms (times must be non-decreasing)",
                    crate::time::to_ms(record.time),
                    crate::time::to_ms(last_time)
                ),
            });
        }
        last_time = record.time;
        records.push(record);
    }
    Ok(records)
}

/// Parses one non-blank, non-comment line; the error message lacks the line number.
fn parse_line(line: &str) -> Result<TraceRecord, String> {
    let fields_error = || format!("expected 4 fields `time,key,op,size`, found {}", line.split(',').count());
    let (time, rest) = line.split_once(',').ok_or_else(fields_error)?;
    let mut tail = rest.rsplitn(3, ',');
    let (size, op, key) = match (tail.next(), tail.next(), tail.next()) {
        (Some(size), Some(op), Some(key)) => (size.trim(), op.trim(), key.trim()),
        _ => return Err(fields_error()),
    };
    let time = time.trim();
    let ms: f64 = time.parse().map_err(|_| format!("time `{time}` is not a number of milliseconds"))?;
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(format!("time `{time}` must be a finite number of milliseconds >= 0"));
    }
    if key.is_empty() {
        return Err("key is empty".to_string());
    }
    let key = key.parse::<u64>().unwrap_or_else(|_| string_key(key.as_bytes()));
    let op = match op.to_ascii_lowercase().as_str() {
        "read" | "get" | "r" => Op::Read,
        "write" | "set" | "w" => Op::Write,
        _ => return Err(format!("op `{op}` is not one of read, get, r, write, set, w")),
    };
    let size: u64 = size.parse().map_err(|_| format!("size `{size}` is not a whole number of bytes"))?;
    Ok(TraceRecord { time: from_ms(ms), key, op, size })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::hash_key;

    fn line_error(text: &str) -> (usize, String) {
        match parse_trace(text).unwrap_err() {
            WorkloadError::Line { line, message } => (line, message),
            other => panic!("unexpected error {other}"),
        }
    }

    #[test]
    fn parses_a_good_trace() {
        let text = "# captured 2024-01-01\n\
                    time,key,op,size\n\
                    0,42,read,1024\n\
                    \n\
                    0.5, user:7 ,GET,100\r\n\
                    0.5,a,b,w,0\n\
                    \t# a comment\n\
                    1.25,18446744073709551615,Set,524288\n\
                    3,-1,r,1\n";
        let records = parse_trace(text).unwrap();
        assert_eq!(
            records,
            vec![
                TraceRecord { time: 0, key: 42, op: Op::Read, size: 1024 },
                TraceRecord { time: 500_000, key: string_key(b"user:7"), op: Op::Read, size: 100 },
                TraceRecord { time: 500_000, key: string_key(b"a,b"), op: Op::Write, size: 0 },
                TraceRecord { time: 1_250_000, key: u64::MAX, op: Op::Write, size: 524_288 },
                TraceRecord { time: 3_000_000, key: string_key(b"-1"), op: Op::Read, size: 1 },
            ]
        );
    }

    #[test]
    fn header_is_optional_and_empty_traces_are_empty() {
        assert_eq!(
            parse_trace("1,2,w,3").unwrap(),
            vec![TraceRecord { time: 1_000_000, key: 2, op: Op::Write, size: 3 }]
        );
        assert_eq!(parse_trace("").unwrap(), vec![]);
        assert_eq!(parse_trace("# only a comment\n\n").unwrap(), vec![]);
    }

    #[test]
    fn string_keys_hash_fnv1a_then_mix() {
        // FNV-1a of the empty input is the offset basis; of "a" it is 0xaf63dc4c8601ec8c.
        assert_eq!(string_key(b""), hash_key(0xcbf2_9ce4_8422_2325));
        assert_eq!(string_key(b"a"), hash_key(0xaf63_dc4c_8601_ec8c));
        assert_ne!(string_key(b"ab"), string_key(b"ba"));
    }

    #[test]
    fn every_bad_line_names_its_number() {
        let good = "time,key,op,size\n0,1,r,10\n";
        let bad = |line: &str| line_error(&format!("{good}{line}\n"));
        assert_eq!(bad("1,2,r"), (3, "expected 4 fields `time,key,op,size`, found 3".into()));
        assert_eq!(bad("1"), (3, "expected 4 fields `time,key,op,size`, found 1".into()));
        assert_eq!(bad("soon,2,r,1"), (3, "time `soon` is not a number of milliseconds".into()));
        assert_eq!(bad("-1,2,r,1"), (3, "time `-1` must be a finite number of milliseconds >= 0".into()));
        assert_eq!(bad("NaN,2,r,1"), (3, "time `NaN` must be a finite number of milliseconds >= 0".into()));
        assert_eq!(bad("1, ,r,1"), (3, "key is empty".into()));
        assert_eq!(bad("1,2,delete,1"), (3, "op `delete` is not one of read, get, r, write, set, w".into()));
        assert_eq!(bad("1,2,r,1.5"), (3, "size `1.5` is not a whole number of bytes".into()));
        assert_eq!(bad("1,2,r,-3"), (3, "size `-3` is not a whole number of bytes".into()));
        assert_eq!(
            line_error("5,1,r,1\n\n# gap\n4.5,1,r,1\n"),
            (4, "time 4.5 ms is before the previous line's 5 ms (times must be non-decreasing)".into())
        );
        // A second header-like line is data, and wrong.
        assert_eq!(bad("time,key,op,size").0, 3);
    }
}
