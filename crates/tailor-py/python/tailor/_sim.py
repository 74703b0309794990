"""``tailor.sim``: the simulator with a progress bar, its results as a ``Results``."""

import sys
import warnings

from . import _native
from ._results import Results
from ._spec import overrides


class _Progress:
    """A tqdm bar (in notebooks too) when tqdm is installed; else a line every 10 s on stderr."""

    def __init__(self, name, enabled):
        self.name = name
        self.enabled = enabled
        self.bar = None
        self.last_line = 0.0
        self.started = None
        try:
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = None
        self.tqdm = tqdm

    def __call__(self, runs_done, runs, done, total):
        if not self.enabled:
            return
        if self.tqdm is not None:
            if self.bar is None:
                self.bar = self.tqdm(total=total, desc=self.name, unit="req", unit_scale=True, leave=False)
            self.bar.set_postfix_str(f"{runs_done}/{runs} runs", refresh=False)
            self.bar.update(done - self.bar.n)
            return
        import time

        now = time.monotonic()
        if self.started is None:
            self.started = now
        if now - self.last_line >= 10 or done == total:
            self.last_line = now
            print(f"{self.name}: {runs_done}/{runs} runs, {done} of {total} requests, "
                  f"{now - self.started:.0f} s", file=sys.stderr)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def sim(source, set=None, sweep=None, progress=True, strict=False, shard=None, per_request=False, **fields):
    """Simulate a preset or spec file with overrides on every core and return its ``Results``.

    ``tailor.sim("c3", requests=300_000, seeds=[1, 2, 3], selectors=["c3", "lor"])`` runs what
    ``tailor sim c3 --set workload.requests=300000 --set seeds=[1,2,3] --set
    compare.selectors=c3,lor`` runs, with the same bits. Other fields go in ``set`` by dotted
    path, swept ones in ``sweep``. The spec's warnings are Python warnings (errors with
    ``strict``); a bad spec raises ``TailorError`` with the command line's message.

    ``per_request=True`` keeps every measured request's times for ``Results.requests()``
    (``report.per_request``; results files do not hold them).

    ``shard=(i, n)`` (or ``"i/n"``, 0-based) runs only the runs at positions p % n == i of the
    sweep and returns a ``Shard`` (``tailor sim --shard i/n``); ``tailor.merge`` puts shards
    back together, byte for byte a single run's results (docs/sweeps.md).
    """
    sets = overrides(set=set, sweep=sweep, **fields)
    if per_request:
        sets.append("report.per_request=true")
    source = str(source)
    found = _native.lint(source, sets)
    if strict and found:
        raise _native.TailorError(f"{len(found)} warning(s) and strict: " + "; ".join(found))
    for w in found:
        warnings.warn(w, stacklevel=2)
    if isinstance(shard, (tuple, list)):
        shard = f"{shard[0]}/{shard[1]}"
    bar = _Progress(source if shard is None else f"{source} shard {shard}", progress)
    try:
        text, requests = _native.simulate(source, sets, bar, shard)
    finally:
        bar.close()
    if shard is not None:
        return Shard(text)
    results = Results(text)
    results._requests = requests
    return results


class Shard:
    """One shard of a sweep (``tailor.sim(..., shard=(i, n))``): its runs as ``results`` and
    the shard file's text as ``json``; ``save(dir)`` writes ``results.shard-I-of-N.json``."""

    def __init__(self, json_text):
        import json

        self.json = json_text
        raw = json.loads(json_text)
        self.index = raw["shard"]["index"]
        self.count = raw["shard"]["count"]
        self.results = Results(json.dumps(raw["results"]))

    @property
    def file_name(self):
        return f"results.shard-{self.index}-of-{self.count}.json"

    def save(self, directory):
        import os

        directory = os.fspath(directory)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, self.file_name)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(self.json)
        return path

    def __repr__(self):
        return f"<tailor.Shard {self.index}/{self.count}: {len(self.results.raw['runs'])} runs>"


def merge(*shards):
    """The whole sweep's ``Results`` from its shards: ``Shard`` objects, shard files or
    directories holding them (``tailor merge``). Refused, naming the shard, unless they come
    from one spec and one split, each shard exactly once."""
    import glob
    import os

    items = []
    for s in shards:
        if isinstance(s, Shard):
            items.append((s.file_name, s.json))
            continue
        path = os.fspath(s)
        files = sorted(glob.glob(os.path.join(path, "results.shard-*-of-*.json"))) if os.path.isdir(path) else [path]
        for f in files:
            with open(f, encoding="utf-8") as fh:
                items.append((f, fh.read()))
    return Results(_native.merge(items))
