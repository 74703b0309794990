"""Live runs from Python: a loopback cluster as a context manager, ``bench`` against it, and
``experiment`` (simulator and fresh live clusters, side by side)."""

import subprocess
import tempfile
import threading
import time
import warnings
from pathlib import Path

from . import _cli
from ._native import TailorError
from ._results import Results
from ._spec import overrides


def _warn_if_invalid(done, results_list):
    if done.returncode == _cli.INVALID_RUNS:
        names = sorted({r.experiment for r in results_list})
        warnings.warn(f"every live run of some strategy is INVALID in {', '.join(names)}: see "
                      "runs.valid and runs.invalid_reasons", stacklevel=3)


class Cluster:
    """A store cluster on loopback ports, as ``tailor cluster up`` starts it::

        with tailor.Cluster(nodes=3, selector="c3") as c:
            res = c.bench("live-c3", rate=500, duration=5)

    ``addresses`` are the nodes' client addresses (any Redis client talks to them). Leaving the
    block stops every node (``tailor cluster down``) and removes its directory, unless ``dir``
    was given.
    """

    def __init__(self, nodes=3, selector="c3", local="fcfs", replication=3, dir=None, start_timeout=60.0):
        self.env = _cli.python_env([selector, local])
        self.options = ["--nodes", str(nodes), "--selector", selector, "--local", local,
                        "--replication", str(replication)]
        self.nodes = nodes
        self._own_dir = dir is None
        self.dir = Path(dir) if dir else None
        self.start_timeout = start_timeout
        self.addresses = []
        self._process = None
        self._stderr = []

    def __enter__(self):
        if self.dir is None:
            self.dir = Path(tempfile.mkdtemp(prefix="tailor-py-cluster-"))
        self._process = subprocess.Popen([_cli.binary(), "cluster", "up", "--dir", str(self.dir), *self.options],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        deadline = time.monotonic() + self.start_timeout
        reader = threading.Thread(target=self._read_addresses, daemon=True)
        reader.start()
        reader.join(max(deadline - time.monotonic(), 0))
        if len(self.addresses) < self.nodes:
            self._stop()
            raise TailorError(f"tailor cluster up did not start {self.nodes} nodes: {_cli.error_text(''.join(self._stderr))}")
        return self

    def _read_addresses(self):
        for line in self._process.stdout:
            self.addresses.append(line.strip())
            if len(self.addresses) == self.nodes:
                return

    def _drain_stderr(self):
        for line in self._process.stderr:
            self._stderr.append(line)

    def bench(self, source=None, rate=None, load=None, duration=None, warmup=None, set=None, **fields):
        """Drive the cluster open loop with a spec's workload (``tailor bench``) and return its
        ``Results`` (engine ``live``; ``runs.valid`` says whether each run can be trusted)."""
        args = ["bench", "--nodes", ",".join(self.addresses), "--quiet"]
        if source is not None:
            args.append(str(source))
        for flag, value in (("--rate", rate), ("--load", load), ("--duration", duration), ("--warmup", warmup)):
            if value is not None:
                args += [flag, str(value)]
        with tempfile.TemporaryDirectory(prefix="tailor-py-bench-") as out:
            done = _cli.run(args + _cli.set_args(overrides(set=set, **fields)) + ["--out", out],
                            allowed=(0, _cli.INVALID_RUNS))
            results = Results.load(out)
        _warn_if_invalid(done, [results])
        return results

    def _stop(self):
        if self._process is None:
            return
        try:
            _cli.run(["cluster", "down", "--dir", str(self.dir)])
        finally:
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
            self._process = None

    def __exit__(self, *exc):
        self._stop()
        if self._own_dir and self.dir is not None:
            import shutil

            shutil.rmtree(self.dir, ignore_errors=True)
        return False


def experiment(source, engine="both", live_duration=None, set=None, sweep=None, **fields):
    """``tailor experiment``: the same spec in the simulator and on fresh live clusters. Returns
    ``{"sim": Results, "live": Results}`` (the engines run)."""
    args = ["experiment", str(source), "--engine", engine]
    # strategies written in Python named in the call: the command line and its nodes import
    # their modules (a spec file that names one needs TAILOR_PYTHON set by hand, docs/python.md)
    named = list(fields.get("selectors") or []) + list(fields.get("locals") or [])
    for path in ("compare.selectors", "compare.locals"):
        named += list((set or {}).get(path) or [])
    env = _cli.python_env(named)
    if live_duration is not None:
        args += ["--live-duration", str(live_duration)]
    with tempfile.TemporaryDirectory(prefix="tailor-py-experiment-") as out:
        done = _cli.run(args + _cli.set_args(overrides(set=set, sweep=sweep, **fields)) + ["--out", out],
                        allowed=(0, _cli.INVALID_RUNS), env=env)
        found = {}
        for engine_name in ("sim", "live"):
            path = Path(out) / f"results-{engine_name}.json"
            if path.is_file():
                found[engine_name] = Results.load(path)
    _warn_if_invalid(done, list(found.values()))
    return found


def reproduce(paper="all", quick=False):
    """``tailor reproduce``: each source's headline claims run in the simulator and judged. Returns
    a DataFrame, one row per claim (theirs beside ours and the verdict); its ``attrs["passed"]``
    says whether every verdict is at least the one the project claims."""
    import json

    import pandas as pd

    args = ["reproduce", paper, "--quiet"] + (["--quick"] if quick else [])
    with tempfile.TemporaryDirectory(prefix="tailor-py-reproduce-") as out:
        done = _cli.run(args + ["--out", out], allowed=(0, 1, 2))
        path = Path(out) / "reproduce.json"
        if not path.is_file():
            raise TailorError(f"tailor reproduce failed ({done.returncode}): {_cli.error_text(done.stderr)}")
        claims = json.loads(path.read_text())
    frame = pd.json_normalize(claims)
    frame.attrs["passed"] = done.returncode == 0
    return frame
