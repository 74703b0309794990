//! `tailor reproduce all --quick` runs every source's claims and stands by the verdicts the
//! project claims in `claims.toml`: a claim that stops holding makes this test (and CI) fail.

use std::process::Command;

#[test]
fn every_claim_keeps_the_verdict_the_project_claims() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("repro");
    let o = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["reproduce", "all", "--quick", "-q", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let judged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("reproduce.json")).unwrap()).unwrap();
    let claims = judged.as_array().unwrap();
    assert!(claims.len() >= 40, "{} claims", claims.len());
    let html = std::fs::read_to_string(out.join("reproduce.html")).unwrap();
    for c in claims {
        let id = c["claim"]["id"].as_str().unwrap();
        assert!(stdout.contains(id) && html.contains(id), "claim {id} missing from the table or the page");
        assert!(c["outcome"].get("Ok").is_some(), "claim {id} was not judged: {}", c["outcome"]);
    }
    // a smoke run says so where its verdicts are read: the table, the page, the terminal
    assert!(stdout.contains("(smoke run: --quick"), "{stdout}");
    assert!(html.contains("<b>smoke run</b>") && String::from_utf8_lossy(&o.stderr).contains("smoke run (--quick)"));
    // the claims that flipped between --quick and the full run now agree with it
    let claimed = [
        ("tap-below-c3", "fails"),
        ("hector-pa-vs-ds-skewed", "fails"),
        ("hector-rml-saturation", "holds"),
        ("heron-below-c3", "sign only"),
        ("heron-product-below-c3", "fails"),
        ("heron-shared-below-c3", "fails"),
    ];
    for (id, verdict) in claimed {
        let c = claims.iter().find(|c| c["claim"]["id"] == id).unwrap();
        assert_eq!(c["outcome"]["Ok"]["verdict"], verdict, "{id}: {}", c["outcome"]);
    }
    // each Héron row names the score it ranked with; a trivial bound is flagged from the data
    assert!(html.contains("selector.heron.scoring = c3") && html.contains("selector.heron.scoring = product"));
    // and the server model it ran on: the shared-capacity rows say so
    assert!(html.contains("cluster.shared_capacity = 2"), "the shared server's rows show their model");
    assert!(html.contains("Trivial bound in") && html.contains("informative in all"));
    // whether each published setup could be expressed exactly, in the table and on the page
    assert!(stdout.contains("approximate") && html.contains("approximate<br><small>"), "{stdout}");
    assert!(html.contains("served stably (throughput at least 99 % of offered)"));
    // the statements no model here can check are listed with their reason
    assert!(html.contains("Not reproduced here") && html.contains("multi-get"));
    let summary = format!("{} claims: ", claims.len());
    assert!(stdout.contains(&summary) && stdout.contains("statements not reproduced"), "{stdout}");
    for paper in ["C3", "TAP", "Héron", "Euro-Par", "Hector"] {
        assert!(html.contains(paper), "{paper} missing from the page");
    }
    // each setup's runs are kept for `tailor report`
    assert!(out.join("setups/c3-t500/results.json").is_file());
}

#[test]
fn an_unknown_source_is_refused_with_the_known_ones() {
    let o = Command::new(env!("CARGO_BIN_EXE_tailor")).args(["reproduce", "nope", "--quick"]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("known sources") && err.contains("Hector"), "{err}");
}
