"""``Results``: one experiment's results file, as DataFrames."""

import json
import os
from functools import cached_property

import pandas as pd

from . import _native

# identify a run in the long frames (CDFs, per-server series)
_RUN_KEYS = ["selector", "local", "seed"]
# one server's queue figures (results.json's `queueing.servers[]`)
_QUEUE_FIGURES = ["mean_waiting", "mean_in_system", "utilisation", "arrivals", "completions", "mean_sojourn_ms"]


def _numeric(column):
    """A swept parameter's values as numbers when they all are."""
    try:
        return pd.to_numeric(column)
    except (ValueError, TypeError):
        return column


class Results:
    """The results of an experiment: ``results.json``'s text (``json``), its parsed form
    (``raw``), and frames built from it. ``Results.load(dir_or_file)`` reads what ``tailor sim``
    wrote; ``save(dir)`` writes the same two files."""

    def __init__(self, json_text):
        self.json = json_text
        self.raw = json.loads(json_text)
        self._requests = None

    @classmethod
    def load(cls, path):
        """Read a ``results.json`` (or the directory holding one)."""
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, "results.json")
        with open(path, encoding="utf-8") as f:
            return cls(f.read())

    @property
    def experiment(self):
        return self.raw["experiment"]

    @property
    def engine(self):
        return self.raw["engine"]

    @property
    def spec(self):
        """The effective spec, as TOML text."""
        return self.raw["spec"]

    @property
    def params(self):
        """The swept parameters' dotted paths."""
        runs = self.raw["runs"]
        return sorted(runs[0]["params"]) if runs else []

    @cached_property
    def runs(self):
        """One row per run: ``results.csv``'s columns, with one column per swept parameter
        (named by its dotted path) in place of ``params``."""
        frame = pd.DataFrame(_native.runs_columns(self.json))
        for p in self.params:
            frame[p] = _numeric(frame[p])
        return frame

    def table(self):
        """The command line's comparison: per swept point, selector and local policy, the median
        over seeds of each figure, with the p99's range over seeds."""
        keys = self.params + ["selector", "local"]
        runs = self.runs
        grouped = runs.groupby(keys, sort=False, dropna=False)
        figures = ["p50_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms", "throughput_rps", "stretch_p99"]
        if runs["bound_ratio"].notna().any():
            figures.append("bound_ratio")
        if runs["util_max"].notna().any():
            figures.append("util_max")
        out = grouped[figures].median()
        out.insert(3, "p99_min", grouped["p99_ms"].min())
        out.insert(4, "p99_max", grouped["p99_ms"].max())
        out["seeds"] = grouped.size()
        if self.engine != "sim":
            out["errors"] = grouped["errors"].sum()
            out["timeouts"] = grouped["timeouts"].sum()
            out["valid"] = grouped["valid"].all()
        return out.reset_index()

    def _long(self, columns, rows_of):
        rows = []
        for i, run in enumerate(self.raw["runs"]):
            ident = [i] + [run[k] for k in _RUN_KEYS] + [run["params"].get(p) for p in self.params]
            rows.extend(ident + list(r) for r in rows_of(run))
        frame = pd.DataFrame(rows, columns=["run"] + _RUN_KEYS + self.params + columns)
        for p in self.params:
            frame[p] = _numeric(frame[p])
        return frame

    def cdf(self, of="latency"):
        """The read latency CDF (``of="latency"``, ms) or the stretch CDF (``of="stretch"``) of
        every run, one row per point: value and fraction of reads at or below it."""
        if of not in ("latency", "stretch"):
            raise ValueError("cdf(of=...) is 'latency' or 'stretch'")
        name = "latency_ms" if of == "latency" else "stretch"
        return self._long([name, "fraction"], lambda run: run[f"{of}_cdf"])

    def load_series(self):
        """Requests served per server per window, one row per (run, server, window): the
        first seed of each combination keeps them (``time_ms`` is the window's start)."""

        def rows(run):
            w = run["window_ms"]
            for server, series in enumerate(run["per_server_load"]):
                for k, n in enumerate(series):
                    yield server, k * w, n

        return self._long(["server", "time_ms", "requests"], rows)

    def queueing(self):
        """Each server's queue figures over each simulated run's measured window, one row per
        (run, server): ``mean_waiting``, ``mean_in_system`` (L), ``utilisation``, ``arrivals``,
        ``completions`` and ``mean_sojourn_ms`` (W), with the window's length ``window_ms``.
        Live runs have none."""

        def rows(run):
            q = run.get("queueing")
            for server, f in enumerate(q["servers"] if q else []):
                yield [server, q["window_ms"]] + [f[k] for k in _QUEUE_FIGURES]

        return self._long(["server", "window_ms"] + _QUEUE_FIGURES, rows)

    def requests(self):
        """Every measured request of every run (``tailor.sim(..., per_request=True)``), one row
        each: the run's selector, local policy, seed and swept parameters, then ``request``,
        ``client``, ``key``, ``size``, ``op``, ``release_ms`` and ``latency_ms``."""
        if self._requests is None:
            raise ValueError("no per-request records: run tailor.sim(..., per_request=True)")
        frame = pd.DataFrame(self._requests)
        runs = pd.DataFrame([{"run": i, **{k: r[k] for k in _RUN_KEYS}, **{p: r["params"].get(p) for p in self.params}}
                             for i, r in enumerate(self.raw["runs"])])
        for p in self.params:
            runs[p] = _numeric(runs[p])
        out = runs.merge(frame, on="run", how="right")
        return out

    def save(self, directory):
        """Write ``results.json``, ``results.csv`` and ``results.parquet`` into ``directory`` as
        ``tailor sim`` does."""
        directory = os.fspath(directory)
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "results.json"), "w", encoding="utf-8", newline="") as f:
            f.write(self.json)
        with open(os.path.join(directory, "results.csv"), "w", encoding="utf-8", newline="") as f:
            f.write(_native.results_csv(self.json))
        with open(os.path.join(directory, "results.parquet"), "wb") as f:
            f.write(_native.results_parquet(self.json))
        return directory

    def report(self, out="report.html", title=None, png=False):
        """Write this experiment's HTML report (``tailor report``'s page) to ``out``."""
        from ._analysis import report

        return report(self, out=out, title=title, png=png)

    def to_arrow(self):
        """The runs frame as a ``pyarrow.Table`` (needs pyarrow)."""
        import pyarrow as pa

        return pa.Table.from_pandas(self.runs, preserve_index=False)

    def to_polars(self):
        """The runs frame as a ``polars.DataFrame`` (needs polars and pyarrow)."""
        import polars as pl

        return pl.from_pandas(self.runs)

    def __repr__(self):
        return f"<tailor.Results {self.experiment!r} ({self.engine}): {len(self.raw['runs'])} runs>"

    def _repr_html_(self):
        return f"<p><b>{self.experiment}</b> ({self.engine})</p>" + self.table()._repr_html_()
