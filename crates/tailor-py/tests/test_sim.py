"""The simulator from Python: specs, frames, determinism, the command line's results files."""

import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import tailor
from conftest import SMALL

REPO = Path(__file__).resolve().parents[3]


def test_presets_and_strategies_list_what_is_built_in():
    presets = tailor.presets()
    assert {"c3", "heron", "europar", "demo"} <= set(presets["name"])
    kinds = tailor.strategies()
    assert {"c3", "lor", "random"} <= set(kinds[kinds.kind == "selector"]["name"])
    assert "py-lor" in set(kinds["name"])  # registered by conftest
    assert {"fcfs", "rml"} <= set(kinds[kinds.kind == "local"]["name"])


def test_spec_overrides_read_like_python():
    text = tailor.spec("c3", requests=1234, seeds=[7, 8], selectors=["c3", "lor"], set={"cluster.servers": 9})
    assert "requests = 1234" in text and "seeds = [7, 8]" in text and "servers = 9" in text
    assert 'selectors = ["c3", "lor"]' in text


def test_frames_have_the_csv_columns_and_swept_parameters():
    res = tailor.sim("c3", selectors=["c3", "lor"], sweep={"cluster.fluctuation.interval_ms": [50.0, 300.0]},
                     requests=40_000, seeds=[1, 2], set={"workload.warmup_ms": 100.0}, progress=False)
    runs = res.runs
    assert len(runs) == 8
    assert runs["cluster.fluctuation.interval_ms"].dtype.kind == "f"
    assert set(runs["cluster.fluctuation.interval_ms"]) == {50.0, 300.0}
    for col in ["selector", "local", "seed", "requests", "p50_ms", "p99_ms", "p999_ms", "throughput_rps", "valid"]:
        assert col in runs.columns
    assert (runs["p99_ms"] >= runs["p50_ms"]).all() and runs["valid"].all()
    table = res.table()
    assert len(table) == 4 and (table["seeds"] == 2).all()
    assert (table["p99_min"] <= table["p99_ms"]).all() and (table["p99_ms"] <= table["p99_max"]).all()
    cdf = res.cdf()
    assert cdf.groupby("run")["fraction"].apply(lambda f: f.is_monotonic_increasing).all()
    assert cdf.groupby("run")["fraction"].max().between(0.99, 1.0).all()
    series = res.load_series()
    assert set(series["server"]) == set(range(50))
    assert (series["requests"] >= 0).all()
    queueing = res.queueing()
    assert len(queueing) == 8 * 50 and queueing["utilisation"].between(0.0, 1.0).all()
    assert (queueing["mean_in_system"] >= queueing["mean_waiting"]).all()
    busiest = queueing.groupby("run")["utilisation"].max()
    assert busiest.tolist() == pytest.approx(runs["util_max"].tolist())
    assert "util_max" in table.columns


def test_same_spec_and_seed_give_the_same_bits():
    a = tailor.sim("c3", selectors=["c3"], **SMALL)
    b = tailor.sim("c3", selectors=["c3"], **SMALL)
    assert a.json == b.json


def tailor_binary():
    found = os.environ.get("TAILOR_BIN") or shutil.which("tailor")
    for candidate in [found, REPO / "target/release/tailor"]:
        if candidate and Path(candidate).is_file():
            return str(candidate)
    pytest.fail("no `tailor` binary: build it (cargo build --release -p tailor) or set TAILOR_BIN")


def test_python_and_the_command_line_write_the_same_files(tmp_path):
    sets = ["workload.requests=40000", "seeds=[1,2]", "workload.warmup_ms=100", "compare.selectors=c3,lor",
            "sweep.cluster.fluctuation.interval_ms=100,500"]
    cli = tmp_path / "cli"
    cmd = [tailor_binary(), "sim", "c3", "--quiet", "--out", str(cli)] + [a for s in sets for a in ("--set", s)]
    subprocess.run(cmd, check=True, capture_output=True)
    res = tailor.sim("c3", requests=40_000, seeds=[1, 2], selectors=["c3", "lor"],
                     set={"workload.warmup_ms": 100}, sweep={"cluster.fluctuation.interval_ms": [100, 500]},
                     progress=False)
    py = res.save(tmp_path / "py")
    for name in ["results.json", "results.csv", "results.parquet"]:
        assert (cli / name).read_bytes() == (Path(py) / name).read_bytes(), name
    pa = pytest.importorskip("pyarrow.parquet")
    table = pa.read_table(cli / "results.parquet").to_pandas()
    assert table.columns.tolist() == res.runs.columns.tolist()
    assert table["p99_ms"].tolist() == res.runs["p99_ms"].tolist()
    again = tailor.Results.load(cli)
    pd.testing.assert_frame_equal(again.runs, res.runs)
    csv = pd.read_csv(cli / "results.csv")
    assert csv["p99_ms"].tolist() == res.runs["p99_ms"].tolist()


def test_arrow_and_polars_conversions():
    res = tailor.sim("c3", selectors=["lor"], **SMALL)
    pa = pytest.importorskip("pyarrow")
    table = res.to_arrow()
    assert isinstance(table, pa.Table) and table.num_rows == 2
    assert table.column("p99_ms").to_pylist() == res.runs["p99_ms"].tolist()


def test_shards_merge_to_a_single_runs_bytes(tmp_path):
    common = dict(requests=30_000, seeds=[1, 2], selectors=["c3", "lor"], set={"workload.warmup_ms": 100},
                  sweep={"cluster.fluctuation.interval_ms": [100, 500]}, progress=False)
    whole = tailor.sim("c3", **common)
    shards = [tailor.sim("c3", shard=(i, 3), **common) for i in range(3)]
    assert sum(len(s.results.runs) for s in shards) == len(whole.runs) == 8
    assert tailor.merge(*shards).json == whole.json
    # from files, in any order, as the command line writes them
    for s in reversed(shards):
        s.save(tmp_path)
    assert tailor.merge(tmp_path).json == whole.json
    cli = tmp_path / "cli"
    sets = ["workload.requests=30000", "seeds=[1,2]", "compare.selectors=c3,lor", "workload.warmup_ms=100",
            "sweep.cluster.fluctuation.interval_ms=100,500"]
    subprocess.run([tailor_binary(), "sim", "c3", "--quiet", "--shard", "1/3", "--out", str(cli)]
                   + [a for s in sets for a in ("--set", s)], check=True, capture_output=True)
    assert (cli / shards[1].file_name).read_text() == shards[1].json
    with pytest.raises(tailor.TailorError, match="missing shard"):
        tailor.merge(shards[0], shards[2])
    with pytest.raises(tailor.TailorError, match=r"0-based|below"):
        tailor.sim("c3", shard=(3, 3), **common)


def test_per_request_latencies_agree_with_the_summary():
    res = tailor.sim("c3", selectors=["c3", "lor"], per_request=True, **SMALL)
    reqs = res.requests()
    runs = res.runs
    counts = reqs.groupby("run").size()
    assert counts.tolist() == runs["requests"].tolist()
    assert set(reqs["op"]) == {"read"} and (reqs["latency_ms"] > 0).all()
    for i, run in runs.iterrows():
        lat = reqs[reqs.run == i]["latency_ms"]
        # the summary comes from a 3-significant-digit histogram
        assert abs(lat.max() - run["max_ms"]) <= 0.002 * run["max_ms"]
        assert abs(lat.quantile(0.99) - run["p99_ms"]) <= 0.01 * run["p99_ms"]
    # asking for them does not change a figure
    plain = tailor.sim("c3", selectors=["c3", "lor"], **SMALL)
    pd.testing.assert_frame_equal(plain.runs, runs)
    with pytest.raises(ValueError, match="per_request=True"):
        plain.requests()
