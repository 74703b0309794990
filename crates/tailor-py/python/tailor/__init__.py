"""Tailor from Python: simulate request-scheduling strategies for replicated key-value stores,
get results as pandas DataFrames, and write new strategies in Python.

    import tailor
    res = tailor.sim("c3", requests=100_000, seeds=[1, 2, 3], selectors=["c3", "lor"])
    res.table()          # the command line's comparison table
    res.runs             # one row per run

Everything runs in the same Rust crates as the ``tailor`` command line (``tailor._native``):
the same spec and seed give the same bits from both.
"""

from ._native import TailorError, Request, Response, Facts, Env, Job, Send, Wait, Rng, __version__
from ._spec import spec, presets, strategies, overrides
from ._results import Results
from ._sim import sim, Shard, merge
from ._analysis import bound, report
from ._live import Cluster, experiment, reproduce
from ._strategies import Selector, LocalQueue, register, unregister, argmin_random_ties

__all__ = [
    "sim", "spec", "presets", "strategies", "overrides", "Results", "bound", "report",
    "Cluster", "experiment", "reproduce", "Shard", "merge",
    "Selector", "LocalQueue", "register", "unregister", "argmin_random_ties",
    "Request", "Response", "Facts", "Env", "Job", "Send", "Wait", "Rng",
    "TailorError", "__version__",
]
