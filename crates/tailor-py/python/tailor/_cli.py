"""What runs in node processes (live clusters, bench, experiment, reproduce) goes through the
``tailor`` command line: a node is its own process, started from the ``tailor`` executable, so
the Python package drives that executable and reads the files it writes. Its failures are
``TailorError``s carrying the command line's own message."""

import os
import shutil
import subprocess
from pathlib import Path

from ._native import TailorError

# exit codes the command line gives for a result that is written but not trustworthy
INVALID_RUNS = 3


def binary():
    """The ``tailor`` executable: ``$TAILOR_BIN``, else ``tailor`` on the PATH."""
    found = os.environ.get("TAILOR_BIN") or shutil.which("tailor")
    if found and Path(found).is_file():
        return found
    raise TailorError(
        "live runs, bench, experiment and reproduce start the `tailor` command line: install it "
        "with `cargo install --path crates/tailor` (or set TAILOR_BIN to its path)"
    )


def error_text(stderr):
    """The command line's error message (its `Error: ...` lines), else the end of stderr."""
    lines = [l for l in stderr.strip().splitlines() if l.strip()]
    for i, line in enumerate(lines):
        if line.startswith("Error:") or line.startswith("error:"):
            return "\n".join(lines[i:]).split(":", 1)[1].strip()
    return "\n".join(lines[-5:]) or "no message"


def python_env(names):
    """The environment in which the command line, and the nodes it starts, load the Python
    strategies among ``names`` (each must be importable): ``TAILOR_PYTHON`` lists
    ``name=module:Class`` entries, ``PYTHONPATH`` this interpreter's path. Needs a ``tailor``
    built with ``--features python`` when any is given."""
    import sys

    from ._strategies import REGISTERED

    entries = []
    for name in names:
        if name not in REGISTERED:
            continue
        cls = REGISTERED[name][1]
        where = f"{cls.__module__}:{cls.__qualname__}"
        if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
            raise TailorError(
                f"strategy `{name}` is defined in {where.split(':')[0]} (a script, a notebook or a "
                "function): live nodes are processes of their own and import strategies, so "
                "define it at the top level of a module")
        entries.append(f"{name}={where}")
    env = dict(os.environ)
    if entries:
        env["TAILOR_PYTHON"] = ",".join(entries)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def run(args, allowed=(0,), env=None):
    """Run ``tailor ARGS``; raise ``TailorError`` with its message unless its exit code is
    allowed. Returns the completed process."""
    done = subprocess.run([binary(), *args], capture_output=True, text=True, env=env)
    if done.returncode not in allowed:
        raise TailorError(f"tailor {args[0]} failed ({done.returncode}): {error_text(done.stderr)}")
    return done


def set_args(sets):
    return [a for s in sets for a in ("--set", s)]
