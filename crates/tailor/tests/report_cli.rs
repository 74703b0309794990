//! `tailor report` end to end: a tiny simulation, then the HTML page and the PNG export.

use std::path::Path;
use std::process::Command;

fn tailor(args: &[&str], cwd: &Path) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_tailor")).args(args).current_dir(cwd).output().expect("run tailor");
    assert!(
        out.status.success() || args[0] == "report",
        "tailor {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A two-point, two-selector europar run with few requests: seconds, but every plot kind has data.
fn simulate(dir: &Path) {
    tailor(
        &[
            "sim",
            "europar",
            "--set",
            "workload.requests=2000",
            "--set",
            "seeds=[1]",
            "--set",
            "compare.selectors=random,lor",
            "--set",
            "compare.locals=fcfs",
            "--set",
            "sweep.workload.load=0.5,0.9",
            "--out",
            "sim-out",
            "-q",
        ],
        dir,
    );
    assert!(dir.join("sim-out/results.json").is_file());
}

#[test]
fn report_is_self_contained_html_with_every_strategy() {
    let tmp = tempfile::tempdir().unwrap();
    simulate(tmp.path());
    let out = tailor(&["report", "sim-out", "-o", "out/report.html"], tmp.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(tmp.path().join("out/report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for needle in
        ["<title>Tailor report: europar</title>", "<details><summary>Experiment spec", "<svg", ">random<", ">lor<"]
    {
        assert!(html.contains(needle), "missing {needle}");
    }
    for external in ["src=\"http", "href=\"http", "src='http", "href='http", "<script", "<link"] {
        assert!(!html.contains(external), "page is not self-contained: {external}");
    }
    assert!(html.contains("load=0.5") && html.contains("load=0.9"));
    assert!(!tmp.path().join("out/plots").exists(), "no PNGs without --png");
}

#[test]
fn png_export_writes_png_files() {
    let tmp = tempfile::tempdir().unwrap();
    simulate(tmp.path());
    let out = tailor(&["report", "sim-out", "-o", "report.html", "--png"], tmp.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plots = tmp.path().join("plots");
    let mut pngs: Vec<_> = std::fs::read_dir(&plots).unwrap().map(|e| e.unwrap().path()).collect();
    pngs.sort();
    assert!(pngs.len() >= 10, "expected a PNG per plot, got {}", pngs.len());
    assert!(pngs.iter().any(|p| p.ends_with("europar-sim-p99-vs-sweep.png")));
    for p in &pngs {
        let bytes = std::fs::read(p).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{} is not a PNG", p.display());
    }
}

#[test]
fn bad_inputs_fail_with_the_file_named() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    let out = tailor(&["report", "empty"], tmp.path());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty holds no results.json"));
    std::fs::write(tmp.path().join("junk.json"), "{\"format\": 1}").unwrap();
    let out = tailor(&["report", "junk.json"], tmp.path());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("junk.json is not a Tailor results file"), "{err}");
}

#[test]
fn an_invalid_live_run_is_bannered_in_its_table_part_and_in_the_overlay() {
    let tmp = tempfile::tempdir().unwrap();
    simulate(tmp.path());
    // a "live" file from the simulated one, its first run judged invalid by the bench
    let text = std::fs::read_to_string(tmp.path().join("sim-out/results.json")).unwrap();
    let mut live: serde_json::Value = serde_json::from_str(&text).unwrap();
    live["engine"] = "live".into();
    for run in live["runs"].as_array_mut().unwrap() {
        run["valid"] = true.into();
    }
    live["runs"][0]["valid"] = false.into();
    live["runs"][0]["invalid_reasons"] =
        serde_json::json!(["408 timeouts after the warm-up", "achieved 812 req/s of 1000 offered (81 % < 95 %)"]);
    std::fs::create_dir(tmp.path().join("live-out")).unwrap();
    std::fs::write(tmp.path().join("live-out/results.json"), live.to_string()).unwrap();
    let out = tailor(&["report", "sim-out", "live-out", "-o", "report.html"], tmp.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(tmp.path().join("report.html")).unwrap();
    let banner =
        "live run invalid: 408 timeouts after the warm-up; achieved 812 req/s of 1000 offered (81 % &lt; 95 %)";
    assert_eq!(html.matches(banner).count(), 2, "one in the live part, one in the overlay");
    let overlay = html.find("simulated vs measured</h2>").expect("an overlay section");
    assert!(html[overlay..].contains(banner));
    assert!(html.contains("<th class=\"num\">timeouts</th>"), "the live table has the timeouts column");
}
