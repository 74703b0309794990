"""The lower bound, the report and the live commands from Python."""

import math
import os
import re
import shutil
from pathlib import Path

import pytest

import tailor
from conftest import SMALL


def test_bound_matches_the_command_line():
    b = tailor.bound("europar", requests=300)
    assert b["requests"] > 0 and b["machines"] == 12
    assert 0 < b["lower_bound"] <= b["relaxation_upper"]
    assert b["ratio"] >= 1.0 - 1e-9 and math.isclose(b["ratio"], b["max_weighted_flow"] / b["lower_bound"])
    stretch = tailor.bound("europar", requests=300, weighting="stretch")
    assert stretch["lower_bound"] != b["lower_bound"]
    with pytest.raises(tailor.TailorError, match="needs at least 1 request"):
        tailor.bound("europar", requests=0)
    with pytest.raises(tailor.TailorError, match="unknown weighting `max`"):
        tailor.bound("europar", requests=10, weighting="max")


def test_report_is_written_from_results_objects(tmp_path):
    res = tailor.sim("c3", selectors=["c3", "lor"], **SMALL)
    page = Path(res.report(tmp_path / "r" / "report.html"))
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") or html.lower().startswith("<!doctype html>")
    assert "<svg" in html and "c3" in html and "lor" in html
    with pytest.raises(tailor.TailorError):
        tailor.report(tmp_path / "nothing-here", out=tmp_path / "x.html")


def needs_cli(test):
    """Live tests start the command line's nodes: scripts/test-python.sh sets TAILOR_BIN."""
    found = os.environ.get("TAILOR_BIN") or shutil.which("tailor")
    return pytest.mark.skipif(not found, reason="needs the tailor command line (TAILOR_BIN)")(test)


@needs_cli
def test_a_live_cluster_as_a_context_manager():
    with tailor.Cluster(nodes=3, selector="lor") as c:
        assert len(c.addresses) == 3 and all(re.match(r"127\.0\.0\.1:\d+$", a) for a in c.addresses)
        res = c.bench("live-c3", rate=300, duration=4, warmup=1)
        directory = c.dir
    assert directory.exists() is False
    runs = res.runs
    assert res.engine == "live" and len(runs) == 1
    assert runs["requests"].iloc[0] > 300 and runs["p99_ms"].iloc[0] > 0
    assert {"valid", "errors", "timeouts", "invalid_reasons"} <= set(runs.columns)


@needs_cli
def test_experiment_and_reproduce_through_the_command_line():
    found = tailor.experiment("live-c3", engine="sim", requests=20_000, seeds=[1], set={"workload.warmup_ms": 100})
    assert set(found) == {"sim"} and found["sim"].engine == "sim" and len(found["sim"].runs) > 0
    claims = tailor.reproduce("hector", quick=True)
    assert len(claims) >= 1 and "verdict" in " ".join(claims.columns)
    with pytest.raises(tailor.TailorError, match="unknown preset `nope`"):
        tailor.experiment("nope", engine="sim")
