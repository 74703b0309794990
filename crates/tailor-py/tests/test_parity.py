"""Python ports of built-in strategies give the native results, run for run and bit for bit."""

import json

import pytest

import tailor
from conftest import SMALL


def runs_without(results, field):
    runs = json.loads(results.json)["runs"]
    for r in runs:
        assert r.pop(field)
    return runs


@pytest.mark.parametrize("native", ["random", "lor", "p2c-peak-ewma"])
def test_python_selector_matches_native(native):
    res = tailor.sim("c3", selectors=[native, "py-" + native], **SMALL)
    runs = res.runs
    assert len(runs) == 4 and (runs["requests"] > 10_000).all()
    mine = res.raw["runs"]
    for a, b in zip([r for r in mine if r["selector"] == native], [r for r in mine if r["selector"] == "py-" + native]):
        assert a["seed"] == b["seed"]
        a, b = dict(a), dict(b)
        a.pop("selector"), b.pop("selector")
        assert a == b, f"{native} and py-{native} differ at seed {a['seed']}"


def test_python_local_policy_matches_native():
    res = tailor.sim("c3", selectors=["lor"], locals=["fcfs", "py-fcfs"], **SMALL)
    runs = res.raw["runs"]
    native = [r for r in runs if r["local"] == "fcfs"]
    port = [r for r in runs if r["local"] == "py-fcfs"]
    assert len(native) == len(port) == 2
    for a, b in zip(native, port):
        a, b = dict(a), dict(b)
        a.pop("local"), b.pop("local")
        assert a == b


def test_a_different_rule_gives_different_results():
    """The parity above is not vacuous: a port with a rule changed does not match."""

    class Last(tailor.Selector):
        name = "py-last"

        def select(self, now, req, replicas):
            return replicas[-1]

    tailor.register(Last)
    try:
        res = tailor.sim("c3", selectors=["random", "py-last"], **SMALL)
        p99 = res.runs.set_index(["selector", "seed"])["p99_ms"]
        assert p99[("py-last", 1)] != p99[("random", 1)]
    finally:
        tailor.unregister("py-last")
