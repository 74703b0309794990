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

    def __call__(self, runs_done, runs, done, total):
        if not self.enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None:
            if self.bar is None:
                self.bar = tqdm(total=total, desc=self.name, unit="req", unit_scale=True, leave=False)
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


def sim(source, set=None, sweep=None, progress=True, strict=False, **fields):
    """Simulate a preset or spec file with overrides on every core and return its ``Results``.

    ``tailor.sim("c3", requests=300_000, seeds=[1, 2, 3], selectors=["c3", "lor"])`` runs what
    ``tailor sim c3 --set workload.requests=300000 --set seeds=[1,2,3] --set
    compare.selectors=c3,lor`` runs, with the same bits. Other fields go in ``set`` by dotted
    path, swept ones in ``sweep``. The spec's warnings are Python warnings (errors with
    ``strict``); a bad spec raises ``TailorError`` with the command line's message.
    """
    sets = overrides(set=set, sweep=sweep, **fields)
    source = str(source)
    found = _native.lint(source, sets)
    if strict and found:
        raise _native.TailorError(f"{len(found)} warning(s) and strict: " + "; ".join(found))
    for w in found:
        warnings.warn(w, stacklevel=2)
    bar = _Progress(source, progress)
    try:
        text = _native.simulate(source, sets, bar)
    finally:
        bar.close()
    return Results(text)
