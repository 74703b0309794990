"""The lower bound and the HTML report, from Python."""

import os

from . import _native
from ._results import Results
from ._spec import overrides


def bound(source, requests=None, weighting=None, tolerance=1e-4, set=None, **fields):
    """The LP lower bound on the max weighted flow time of a spec's first requests (or of an
    instance ``.json``), as ``tailor bound`` computes it: a dict with ``lower_bound``,
    ``relaxation_upper``, ``requests``, ``machines``, the solver's effort and, for a spec, the
    first run's ``strategy``, its ``max_weighted_flow`` and their ``ratio``. ``weighting`` is
    ``"flow"`` (w = 1) or ``"stretch"`` (w = 1/p)."""
    return _native.bound(str(source), overrides(set=set, **fields), requests, weighting, tolerance)


def report(*items, out="report.html", title=None, png=False):
    """Write one HTML page (spec, tables, SVG plots; ``tailor report``'s page) for ``Results``
    objects and/or results files and directories; with ``png``, every plot as PNG into
    ``plots/`` beside it. Returns the page's path."""
    results, paths = [], []
    for i, item in enumerate(items):
        if isinstance(item, Results):
            results.append((f"{item.experiment} ({item.engine}, from Python #{i + 1})", item.json))
        else:
            paths.append(os.fspath(item))
    _native.report(results, paths, os.fspath(out), title, png)
    return out
