#!/usr/bin/env bash
# Starts a 3-node Tailor cluster on loopback, runs `redis-benchmark -t set,get -n 20000 -q`
# against one node, and fails on any error reply or a missing result line.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/tailor
[ -x "$bin" ] || cargo build --release -p tailor
dir=$(mktemp -d)
log="$dir/cluster.log"
"$bin" cluster up --nodes 3 --dir "$dir/cluster" >"$log" 2>&1 &
pid=$!
cleanup() { "$bin" cluster down --dir "$dir/cluster" >/dev/null 2>&1 || true; kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
trap cleanup EXIT
addr=""
for _ in $(seq 1 300); do
  addr=$(grep -oE '127\.0\.0\.1:[0-9]+' "$log" | head -n1 || true)
  [ -n "$addr" ] && redis-cli -h 127.0.0.1 -p "${addr#*:}" ping 2>/dev/null | grep -q PONG && break
  addr=""
  sleep 0.1
done
[ -n "$addr" ] || { echo "cluster did not come up:"; cat "$log"; exit 1; }
# -q still draws progress with carriage returns: keep only the final lines
out=$(redis-benchmark -h 127.0.0.1 -p "${addr#*:}" -t set,get -n 20000 -q 2>&1 | tr '\r' '\n' | grep -v 'rps=' | grep -v '^ *$' || true)
echo "$out"
if echo "$out" | grep -qiE 'error|ERR'; then echo "redis-benchmark saw error replies"; exit 1; fi
echo "$out" | grep -q '^SET: ' && echo "$out" | grep -q '^GET: ' || { echo "missing SET/GET results"; exit 1; }
echo "redis-benchmark: ok"
