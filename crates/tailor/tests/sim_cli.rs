//! The `tailor sim` and `tailor bound` commands as a user runs them.

use std::process::Command;

fn tailor(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tailor")).args(args).output().expect("tailor runs")
}

#[test]
fn same_spec_and_seed_give_byte_identical_results_json() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for run in ["a", "b"] {
        let out = dir.path().join(run);
        let o = tailor(&[
            "sim",
            "heron",
            "--set",
            "workload.requests=20000",
            "--set",
            "seeds=[3]",
            "--set",
            "sweep.workload.sizes.weights=[[0.9,0.1]]",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.contains("p99 ms") && stdout.contains("heron") && stdout.contains("c3"), "{stdout}");
        files.push(std::fs::read(out.join("results.json")).unwrap());
    }
    assert_eq!(files[0], files[1]);
    let results: serde_json::Value = serde_json::from_slice(&files[0]).unwrap();
    let run = &results["runs"][0];
    for field in ["selector", "local", "params", "seed", "requests"] {
        assert!(!run[field].is_null(), "missing {field}");
    }
    for p in ["p50", "p95", "p99", "p999", "max", "mean"] {
        assert!(run["read_latency_ms"][p].as_f64().unwrap() > 0.0, "read_latency_ms.{p}");
    }
}

#[test]
fn bad_specs_name_the_field() {
    let o = tailor(&["sim", "c3", "--set", "workload.reqests=5"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("reqests"));
    let o = tailor(&["sim", "nope"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown preset `nope`"));
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("x.toml");
    std::fs::write(&spec, "[cluster]\nservers = 4\nworkrs = 2\n").unwrap();
    let o = tailor(&["sim", spec.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("workrs") && err.contains("line 3"), "{err}");
}

#[test]
fn bound_of_a_preset_and_of_an_instance_file() {
    let dir = tempfile::tempdir().unwrap();
    let inst = dir.path().join("inst.json");
    let o = tailor(&[
        "bound",
        "europar",
        "--requests",
        "200",
        "--weighting",
        "stretch",
        "--export",
        inst.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && stdout.contains("lower bound") && stdout.contains("ratio"), "{stdout}");
    let o = tailor(&["bound", inst.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(&inst, r#"{"machines":2,"requests":[{"release_ms":0,"processing_ms":1,"weight":1,"machines":[]}]}"#)
        .unwrap();
    let o = tailor(&["bound", inst.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("request 0"), "{err}");
}

#[test]
fn sim_with_bound_adds_the_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let o = tailor(&[
        "sim",
        "europar",
        "--bound",
        "--set",
        "workload.requests=300",
        "--set",
        "seeds=[1]",
        "--set",
        "sweep.workload.load=0.9",
        "--set",
        "compare.selectors=lor,eft",
        "--set",
        "compare.locals=fcfs",
        "--out",
        dir.path().to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("max/bound"));
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("results.json")).unwrap()).unwrap();
    for run in results["runs"].as_array().unwrap() {
        assert!(run["bound"]["ratio"].as_f64().unwrap() >= 1.0 - 1e-9);
    }
}

#[test]
fn an_error_names_its_cause_once() {
    let out = tailor(&["cluster", "down", "--dir", "/nonexistent-tailor-dir"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
#[cfg(not(feature = "highs"))]
fn a_build_without_highs_names_the_solver_flag() {
    let out = tailor(&["bound", "europar", "--solver", "highs"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("`--solver highs` needs a build with HiGHS"), "{err}");
    assert!(!err.contains("backend"), "{err}");
}
