#!/usr/bin/env bash
# The tests (the README's second command): every crate's with cargo, then the Python
# package's in a fresh virtual environment (scripts/test-python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --release
bash scripts/test-python.sh
