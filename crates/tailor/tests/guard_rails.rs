//! Guard rails a newcomer meets (issue 35, item 7): a run that would print a table of zeros is
//! refused before any row; a misspelt swept key is refused by `--print-spec` too; a bound of
//! no request is refused; `experiment` warns of an overload as `sim` does.

use std::process::{Command, Output};

fn tailor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tailor")).args(args).output().expect("tailor runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn nothing_measured_is_refused_before_any_row() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let o = tailor(&["sim", "c3", "--set", "workload.requests=20000", "--set", "seeds=[1]", "-q", "--out", out]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("every run measured 0 requests after the 2000 ms warm-up"), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty(), "a table was printed: {}", text(&o.stdout));
    assert!(!dir.path().join("results.json").exists());
}

#[test]
fn a_misspelt_swept_key_is_refused_by_print_spec() {
    let o = tailor(&["sim", "c3", "--set", "sweep.workload.lod=0.5", "--print-spec"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("unknown field `lod`"), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
    let ok = tailor(&["sim", "c3", "--set", "sweep.workload.load=0.5", "--print-spec"]);
    assert!(ok.status.success() && text(&ok.stdout).contains("[sweep]"), "{}", text(&ok.stderr));
}

#[test]
fn a_bound_of_no_request_is_refused() {
    let o = tailor(&["bound", "europar", "--requests", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("the bound needs at least 1 request"), "{}", text(&o.stderr));
    assert!(!text(&o.stdout).contains("NaN"));
}

#[test]
fn experiment_warns_of_an_overload_as_sim_does() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "c3",
        "--set",
        "workload.requests=40000",
        "--set",
        "workload.warmup_ms=100",
        "--set",
        "seeds=[1]",
        "--set",
        "compare.selectors=lor",
        "--set",
        "sweep.cluster.fluctuation.interval_ms=[100]",
        "--set",
        "workload.load=4",
        "--out",
        dir.path().to_str().unwrap(),
    ];
    let sim = tailor(&[&["sim", "-q"], &args[..]].concat());
    let experiment = tailor(&[&["experiment", "--engine", "sim"], &args[..]].concat());
    for o in [&sim, &experiment] {
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(text(&o.stderr).contains("warning: workload.load: offered work is"), "{}", text(&o.stderr));
    }
}

#[test]
fn a_long_run_prints_progress_lines_when_stderr_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args([
            "sim",
            "c3",
            "--set",
            "workload.requests=60000",
            "--set",
            "workload.warmup_ms=200",
            "--set",
            "seeds=[1]",
        ])
        .arg("--out")
        .arg(dir.path())
        .env("TAILOR_PROGRESS_EVERY", "0.1")
        .output()
        .expect("tailor runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("[0m ") && l.contains(" runs, ")).collect();
    assert!(!lines.is_empty(), "no progress line in: {stderr}");
    assert!(lines.iter().all(|l| l.contains("/48 runs")), "{lines:?}");
}
