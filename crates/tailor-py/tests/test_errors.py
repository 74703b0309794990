"""Bad input raises Python exceptions with the command line's messages; a failing Python
strategy stops the run and raises its error with the strategy and the method named."""

import pytest

import tailor
from conftest import SMALL


def test_unknown_preset_field_and_selector_name_the_problem():
    with pytest.raises(tailor.TailorError, match=r"unknown preset `c4` \(known: c3"):
        tailor.sim("c4")
    with pytest.raises(tailor.TailorError, match=r"unknown selector `nope`"):
        tailor.sim("c3", selectors=["nope"], **SMALL)
    with pytest.raises(tailor.TailorError, match=r"workload\.requests"):
        tailor.spec("c3", set={"workload.requests": -1})
    with pytest.raises(TypeError, match=r"unknown field `request`"):
        tailor.sim("c3", request=5)
    with pytest.raises(tailor.TailorError, match=r"spec file missing\.toml"):
        tailor.sim("missing.toml")


def test_nothing_measured_is_an_error_and_warnings_are_warnings():
    with pytest.warns(UserWarning, match="warm-up"):
        with pytest.raises(tailor.TailorError, match="every run measured 0 requests"):
            tailor.sim("c3", requests=1000, seeds=[1], selectors=["lor"], progress=False)
    with pytest.raises(tailor.TailorError, match="strict"):
        tailor.sim("c3", requests=1000, seeds=[1], selectors=["lor"], progress=False, strict=True)


def test_a_raising_selector_stops_the_run_with_its_error():
    class Broken(tailor.Selector):
        name = "py-broken"

        def __init__(self, env):
            self.calls = 0

        def select(self, now, req, replicas):
            self.calls += 1
            if self.calls > 3:
                raise ValueError("boom")
            return replicas[0]

    tailor.register(Broken)
    try:
        with pytest.raises(tailor.TailorError, match=r"py-broken: select raised boom") as err:
            tailor.sim("c3", selectors=["py-broken"], **SMALL)
        assert isinstance(err.value.__cause__, ValueError)
    finally:
        tailor.unregister("py-broken")


def test_bad_answers_are_named():
    class Outsider(tailor.Selector):
        name = "py-outsider"

        def select(self, now, req, replicas):
            return 10_000

    class Lost(tailor.LocalQueue):
        name = "py-lost"

        def push(self, now, job):
            pass

        def pop(self, now):
            return None

    tailor.register(Outsider)
    tailor.register(Lost)
    try:
        with pytest.raises(tailor.TailorError, match=r"select returned replica 10000, which is not one of"):
            tailor.sim("c3", selectors=["py-outsider"], **SMALL)
        with pytest.raises(tailor.TailorError, match=r"py-lost: pop raised pop returned nothing while 1 jobs wait"):
            tailor.sim("c3", selectors=["lor"], locals=["py-lost"], **SMALL)
    finally:
        tailor.unregister("py-outsider")
        tailor.unregister("py-lost")


def test_registration_checks_the_class():
    class NoName(tailor.Selector):
        def select(self, now, req, replicas):
            return replicas[0]

    with pytest.raises(tailor.TailorError, match="has no name"):
        tailor.register(NoName)
    with pytest.raises(tailor.TailorError, match="is a built-in selector"):
        tailor.register(NoName, name="lor")
    with pytest.raises(tailor.TailorError, match="invalid strategy name"):
        tailor.register(NoName, name="a b")

    class Nosy(tailor.Selector):
        name = "py-nosy"
        facts = ("queue_len", "mood")

        def select(self, now, req, replicas):
            return replicas[0]

    with pytest.raises(tailor.TailorError, match="unknown facts"):
        tailor.register(Nosy)
