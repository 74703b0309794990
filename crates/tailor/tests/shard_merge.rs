//! `tailor sim --shard I/N` and `tailor merge` as a user runs them: a sweep run as shards and
//! merged gives the bytes and the table of the sweep run whole.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A small sweep: 2 points x 2 selectors x 2 seeds = 8 runs, so 3 shards hold 3, 3 and 2.
const SWEEP: [&str; 11] = [
    "c3",
    "--set",
    "workload.requests=30000",
    "--set",
    "workload.warmup_ms=100",
    "--set",
    "seeds=[1,2]",
    "--set",
    "compare.selectors=c3,lor",
    "--set",
    "sweep.cluster.fluctuation.interval_ms=100,500",
];

fn tailor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tailor")).args(args).output().expect("tailor runs")
}

/// `tailor sim` of the sweep (with `extra` arguments) into `out`; its stdout, the table.
fn sim(extra: &[&str], out: &Path) -> Vec<u8> {
    let o = tailor(&[&["sim"], &SWEEP[..], extra, &["-q", "--out", out.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

fn shard_file(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("results.shard-{i}-of-3.json"))
}

/// The merge of `inputs`, expected to fail; its stderr.
fn merge_error(inputs: &[&Path]) -> String {
    let args: Vec<&str> = inputs.iter().map(|p| p.to_str().unwrap()).collect();
    let o = tailor(&[&["merge"], &args[..]].concat());
    assert!(!o.status.success(), "merge of {args:?} should fail");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn shards_merged_equal_the_whole_sweep_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, shards, merged) = (dir.path().join("whole"), dir.path().join("shards"), dir.path().join("merged"));
    let whole_table = sim(&[], &whole);
    for i in 0..3 {
        sim(&["--shard", &format!("{i}/3")], &shards);
    }
    assert!(!shards.join("results.json").exists(), "a shard writes only its shard file");
    let o = tailor(&["merge", shards.to_str().unwrap(), "--out", merged.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&whole_table), "the table");
    for file in ["results.json", "results.csv"] {
        let (a, b) = (std::fs::read(whole.join(file)).unwrap(), std::fs::read(merged.join(file)).unwrap());
        assert!(a == b, "{file} differs between the whole sweep and the merged shards");
    }

    let err = merge_error(&[&shard_file(&shards, 0), &shard_file(&shards, 2)]);
    assert!(err.contains("missing shard(s) 1 of 3") && err.contains("results.shard-1-of-3.json"), "{err}");

    let other = dir.path().join("other");
    sim(&["--set", "seeds=[1,3]", "--shard", "1/3"], &other);
    let err = merge_error(&[&shard_file(&shards, 0), &shard_file(&other, 1), &shard_file(&shards, 2)]);
    assert!(err.contains("come from different sweeps (`spec` differs)"), "{err}");
}

#[test]
fn a_shard_out_of_range_names_the_flag() {
    for (bad, why) in [("3/3", "below N (0/3 to 2/3)"), ("0/0", "at least 1"), ("1", "I/N")] {
        let o = tailor(&["sim", "c3", "--shard", bad]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains("--shard") && err.contains(why), "{err}");
    }
}
