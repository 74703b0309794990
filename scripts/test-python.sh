#!/usr/bin/env bash
# The Python package's tests, as a user would meet them: a fresh virtual environment, the
# README's `pip install`, then pytest (crates/tailor-py/tests) and the example notebook executed
# cell by cell (a failing cell fails the run). The wheel builds on the workspace's release
# artefacts, so after `cargo test --workspace --release` it takes well under a minute.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/python-venv
rm -rf "$venv"
python3 -m venv "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"
echo "== Python package: pip install ./crates/tailor-py in a fresh virtual environment"
pip install -q --upgrade pip
pip install -q "./crates/tailor-py[test,notebook]"

echo "== the command line with Python strategies (cargo build --release -p tailor --features python)"
# the identity test compares with the command line's files; the live tests start its nodes,
# which run Python strategies with this feature (on top of the release build: about 2 minutes)
cargo build --release -p tailor --features python 2>&1 | tail -1
export TAILOR_BIN="$PWD/target/release/tailor" TAILOR_REQUIRE_PYTHON_CLI=1

echo "== pytest crates/tailor-py/tests"
python -m pytest -q crates/tailor-py/tests

echo "== the example notebook, executed (examples/c3-fluctuation.ipynb)"
out=$(mktemp -d)
TAILOR_NOTEBOOK_QUICK=1 jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=600 \
  --output-dir "$out" examples/c3-fluctuation.ipynb
echo "executed notebook in $out"
