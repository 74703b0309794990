#!/usr/bin/env bash
# Compare two builds of the scale bench on the same run, side by side: each round runs build A
# on one core and build B on the other at the same time (cores swapped every round), and prints
# B's speed over A's. On a shared 2-core machine one run's speed moves by up to 25 % with the
# host's load, which hides a 5 % change between runs made one after the other; two runs made at
# the same time see the same load. Measured with the same build on both sides, one round was
# within about 10 % and the mean of four within about 4 %: smaller changes do not show. Both
# runs share the last-level cache and memory bandwidth, so absolute figures are lower than
# alone: read ratios.
# The two cores need not be equally fast (another guest on one of them): a build runs on each
# core in turn, and the geometric mean over an even number of rounds cancels that out.
#
#   cargo bench -p tailor-sim --bench scale --no-run     # build A, then copy the printed binary
#   cp target/release/deps/scale-<hash> /tmp/scale-a     # ...change, rebuild, copy to /tmp/scale-b
#   scripts/pair-scale.sh /tmp/scale-a /tmp/scale-b random 4 [servers] [requests]
set -euo pipefail
if [ $# -lt 4 ]; then
    echo "usage: $0 BUILD_A BUILD_B SELECTOR ROUNDS [SERVERS=5000] [REQUESTS=10000000]" >&2
    exit 2
fi
a=$1 b=$2 selector=$3 rounds=$4 servers=${5:-5000} requests=${6:-10000000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
speed() { tail -1 "$1" | awk '{print $6}'; }
logs=0
for round in $(seq 1 "$rounds"); do
    core_a=$(( round % 2 )) core_b=$(( (round + 1) % 2 ))
    TAILOR_SCALE_CHILD=$servers,$requests,$selector taskset -c "$core_a" "$a" >"$out/a" 2>&1 &
    TAILOR_SCALE_CHILD=$servers,$requests,$selector taskset -c "$core_b" "$b" >"$out/b" 2>&1 &
    wait
    sa=$(speed "$out/a") sb=$(speed "$out/b")
    awk -v r="$round" -v a="$sa" -v b="$sb" \
        'BEGIN { printf "round %d: A %d requests/s, B %d requests/s, B/A %.3f\n", r, a, b, b / a }'
    logs=$(awk -v l="$logs" -v a="$sa" -v b="$sb" 'BEGIN { print l + log(b / a) }')
done
awk -v l="$logs" -v n="$rounds" 'BEGIN { printf "B/A over %d rounds (geometric mean): %.3f\n", n, exp(l / n) }'
