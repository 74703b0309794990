#!/bin/bash
# Usage: scripts/measure-author-loop.sh [REPO]  (times in $OUT/times.txt, default /tmp/tailor-author-loop)
# Measures the strategy author's loop on a clean clone (issue 31, items 2, 3 and 9).
set -e
out=${OUT:-/tmp/tailor-author-loop}; mkdir -p $out; log=$out/build.log
: > $log
t() { local s=$(date +%s.%N); "$@" >> $log 2>&1; local e=$(date +%s.%N); printf "%-60s %6.1f s  load %s\n" "$*" "$(echo "$e - $s" | bc)" "$(cut -d' ' -f1-3 /proc/loadavg)" >> $out/times.txt; }
: > $out/times.txt
src=${1:-$(git rev-parse --show-toplevel)}; rm -rf $out/clone && git clone -q "$src" $out/clone && cd $out/clone
echo "commit $(git rev-parse --short HEAD)" >> $out/times.txt
t cargo build --profile quick -p tailor
t ./target/quick/tailor new selector least-wait
t ./target/quick/tailor new local edf
t cargo build --profile quick -p tailor
git status --short >> $out/times.txt
wc -l crates/tailor-core/src/selector/least_wait.rs crates/tailor-core/src/local/edf.rs >> $out/times.txt
git diff --stat >> $out/times.txt
t cargo test --profile quick -p tailor-core least_wait
t cargo test --profile quick -p tailor-core edf
# a behaviour edit of the new selector, then the rebuild and the first result
sed -i 's/queue\[r as usize\] as f64)/queue[r as usize] as f64 + r as f64 * 0.5)/' crates/tailor-core/src/selector/least_wait.rs
git diff --stat crates/tailor-core/src/selector/least_wait.rs >> $out/times.txt
t cargo build --profile quick -p tailor
t ./target/quick/tailor sim c3 --set compare.selectors=c3,least-wait --set compare.locals=fcfs,edf --set workload.requests=200000 --set seeds=[1] --out $out/sim
cat $out/sim/results.csv | head -3 >> $out/times.txt || true
echo done >> $out/times.txt
