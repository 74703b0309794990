//! The sample traces under examples/traces (written by scripts/make-sample-traces.py in
//! Twitter's cache-trace format and libCacheSim's oracleGeneral format) read as the simulator
//! and `tailor bench` read them: plain and zstd-compressed give the same requests, the format
//! is told by the file, and what the model has no use for is skipped and counted.

use std::path::PathBuf;
use tailor_core::model::Op;
use tailor_core::workload::trace::{decode, op_counts, TraceFormat};
use tailor_spec::trace::read;

fn sample(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/traces");
    dir.join(name).to_string_lossy().into_owned()
}

#[test]
fn the_twitter_sample_reads_alike_plain_and_compressed() {
    let plain = read(&sample("twitter-sample.csv"), TraceFormat::Auto).unwrap();
    let packed = read(&sample("twitter-sample.csv.zst"), TraceFormat::Auto).unwrap();
    assert_eq!((plain.format, plain.compressed, packed.compressed), (TraceFormat::Twitter, false, true));
    assert_eq!(plain.records, packed.records);
    assert_eq!(op_counts(&plain.records), (853, 132));
    assert_eq!(plain.skipped, vec![("delete".to_string(), 25), ("incr".to_string(), 11)]);
    assert!(plain.records.windows(2).all(|w| w[0].time <= w[1].time));
    // a get that missed (value size 0) took its key's size, unless its key never has one
    let sized: std::collections::HashSet<u64> = plain.records.iter().filter(|r| r.size > 0).map(|r| r.key).collect();
    let reads = plain.records.iter().filter(|r| r.op == Op::Read);
    assert!(reads.clone().all(|r| r.size > 0 || !sized.contains(&r.key)));
    assert!(reads.filter(|r| r.size == 0).count() < 10, "few keys are only ever missed");
    // forced to Tailor's CSV (whose keys may hold commas), it fails at the first delete
    let err = read(&sample("twitter-sample.csv"), TraceFormat::Tailor).unwrap_err();
    assert!(err.contains("op `delete` is not one of"), "{err}");
}

#[test]
fn the_oracle_general_sample_reads_alike_plain_and_compressed() {
    let plain = read(&sample("sample.oracleGeneral.bin"), TraceFormat::Auto).unwrap();
    let packed = read(&sample("sample.oracleGeneral.bin.zst"), TraceFormat::Auto).unwrap();
    assert_eq!((plain.format, packed.format), (TraceFormat::OracleGeneral, TraceFormat::OracleGeneral));
    assert_eq!(plain.records, packed.records);
    assert_eq!(plain.records.len(), 23_736 / 24);
    assert_eq!(op_counts(&plain.records).1, 0, "oracleGeneral records are reads");
    let last = plain.records.last().unwrap().time;
    assert!((9_000_000_000..10_000_000_000).contains(&last), "10 s of requests spread within their seconds: {last}");
}

#[test]
fn concatenated_zstd_files_are_one_trace() {
    let one = std::fs::read(sample("sample.oracleGeneral.bin.zst")).unwrap();
    let two = [one.clone(), one].concat();
    let single =
        decode(&std::fs::read(sample("sample.oracleGeneral.bin")).unwrap(), TraceFormat::OracleGeneral, "x").unwrap();
    // the second copy's times go back to 0: refused as out of order, which proves it was read
    let err = decode(&two, TraceFormat::OracleGeneral, "x").unwrap_err().to_string();
    assert!(err.contains(&format!("record {}", single.records.len() + 1)), "{err}");
}

#[test]
fn a_missing_file_is_named() {
    let err = read("no/such/trace.csv", TraceFormat::Auto).unwrap_err();
    assert!(err.starts_with("reading trace no/such/trace.csv:"), "{err}");
}
