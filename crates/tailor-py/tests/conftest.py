"""Shared setup of the Python package's tests (run with pytest from a virtual environment
where `pip install ./crates/tailor-py` installed the package)."""

import pytest

import tailor
from tailor import ports

# small enough for a test, large enough that a rule that differs shows: the c3 setup at one
# fluctuation interval, 40,000 reads after a 100 ms warm-up, two seeds
SMALL = dict(
    requests=40_000,
    seeds=[1, 2],
    set={"workload.warmup_ms": 100.0},
    sweep={"cluster.fluctuation.interval_ms": [100.0]},
    progress=False,
)


@pytest.fixture(scope="session", autouse=True)
def registered_ports():
    ports.register_all()
    yield
    for cls in ports.ALL:
        tailor.unregister(cls.name)
