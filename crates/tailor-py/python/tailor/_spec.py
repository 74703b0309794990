"""Specs: presets, spec files and overrides, read by the same code as ``tailor sim --set``."""

import json
import math

import pandas as pd

from . import _native

# keyword shortcuts for the fields every experiment sets
SHORTCUTS = {
    "requests": "workload.requests",
    "seeds": "seeds",
    "selectors": "compare.selectors",
    "locals": "compare.locals",
    "load": "workload.load",
    "servers": "cluster.servers",
}


def _toml(value):
    """A Python value as the TOML literal an override reads."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = repr(value)
        return text if any(c in text for c in ".en") else text + ".0"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple, range)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"cannot put a {type(value).__name__} in a spec: use a number, a string, a bool or a list")


def overrides(set=None, sweep=None, **fields):
    """The ``path=value`` overrides of keyword fields (see ``SHORTCUTS``), a ``set`` mapping of
    dotted paths and a ``sweep`` mapping of dotted paths to lists of values."""
    sets = []
    for key, value in fields.items():
        if key not in SHORTCUTS:
            known = ", ".join(SHORTCUTS)
            raise TypeError(f"unknown field `{key}` (known: {known}; other fields go in set={{'dotted.path': value}})")
        if value is not None:
            sets.append(f"{SHORTCUTS[key]}={_toml(value)}")
    for path, value in (set or {}).items():
        sets.append(f"{path}={_toml(value)}")
    for path, values in (sweep or {}).items():
        if not isinstance(values, (list, tuple, range)):
            raise TypeError(f"sweep `{path}` needs a list of values")
        sets.append(f"sweep.{path}={_toml(list(values))}")
    return sets


def spec(source, set=None, sweep=None, **fields):
    """The effective spec of a preset name or ``.toml`` file with overrides, as TOML text (what
    ``tailor sim SOURCE --set ... --print-spec`` prints)."""
    return _native.spec_toml(str(source), overrides(set=set, sweep=sweep, **fields))


def presets():
    """The built-in presets as a DataFrame (name, description)."""
    return pd.DataFrame(_native.presets(), columns=["name", "description"])


def strategies():
    """Every selector and local policy, built in or registered from Python, as a DataFrame."""
    return pd.DataFrame(_native.strategies(), columns=["kind", "name", "source"])
