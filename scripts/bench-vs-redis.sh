#!/usr/bin/env bash
# Benchmark (not a test): Tailor against Debian's redis-server on the same machine, driven by the
# same redis-benchmark runs, interleaved (each Tailor run is followed by the matching Redis run,
# so machine noise hits both alike), with random keys (-r) and 1 KB values. Prints one table:
# throughput, p50 and p99 of SET and GET for every case, and the Tailor/Redis ratios.
#
# Cases (Tailor vs Redis):
#   sync   (ack after fdatasync, group commit)   vs  appendonly yes, appendfsync everysec
#   buffer (journal to OS buffers before ack)    vs  appendonly no
#   each with selector lor and c3, each at -P 1 and -P 16; plus a 3-node cluster (replication 3,
#   clients on node 0, buffer, lor) against Redis without AOF.
# Every server is stopped on exit (trap).
#
# Usage: scripts/bench-vs-redis.sh            (builds tailor in release mode if TAILOR is unset)
# Environment:
#   TAILOR=path/to/tailor         binary to run (default: cargo build --release -p tailor)
#   N=50000 C=50 D=1024 R=100000  requests per test, connections, value bytes, key space (-r)
#   WORKERS=4                     replica worker threads of each Tailor node
#   SELECTORS="lor c3"            selectors to run
#   PIPELINES="1 16"              -P values to run
#   DURABILITIES="sync buffer"    Tailor durabilities to run (Redis config follows)
#   REPEAT=3                      interleaved Tailor/Redis pairs per case; the table shows medians
#   CLUSTER=1                     also run the 3-node line (0: skip)
#   ROW_CACHE_MB=                 each Tailor node's row cache in MiB (unset: the node's default,
#                                 256; 0: off, every read from the storage engine)
#   ENGINE=1                      also print the storage engine's own write ceiling (fjall in
#                                 process, `cargo bench -p tailor-store --bench storage_set`)
#                                 beside Redis's SET -P16: how close any node on it could get
#                                 (0: skip; needs cargo)
set -euo pipefail

N=${N:-50000}
C=${C:-50}
D=${D:-1024}
R=${R:-100000}
WORKERS=${WORKERS:-4}
SELECTORS=${SELECTORS:-"lor c3"}
PIPELINES=${PIPELINES:-"1 16"}
DURABILITIES=${DURABILITIES:-"sync buffer"}
CLUSTER=${CLUSTER:-1}
REPEAT=${REPEAT:-3}
ENGINE=${ENGINE:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

need_apt=()
command -v redis-server >/dev/null || need_apt+=(redis-server)
command -v redis-benchmark >/dev/null || need_apt+=(redis-tools)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "installing ${need_apt[*]} with apt-get" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get install -y "${need_apt[@]}" >&2 || { $SUDO apt-get update >&2 && $SUDO apt-get install -y "${need_apt[@]}" >&2; }
fi

if [ -z "${TAILOR:-}" ]; then
    echo "building tailor (release)" >&2
    (cd "$ROOT" && cargo build --release -q -p tailor >&2)
    TAILOR="${CARGO_TARGET_DIR:-$ROOT/target}/release/tailor"
fi
[ -x "$TAILOR" ] || { echo "no tailor binary at $TAILOR" >&2; exit 1; }

WORK=$(mktemp -d -t tailor-vs-redis.XXXXXX)
PIDS=()
# Stop the servers whose pids are given (SIGTERM, then wait for them).
stop() {
    for p in "$@"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "$@"; do
        wait "$p" 2>/dev/null || true
    done
}
cleanup() {
    stop "${PIDS[@]}"
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# Set variable $1 to a loopback port nobody listens on (bash's /dev/tcp cannot connect to a
# free port) and that this script has not handed out yet (no subshell, so the list persists).
USED_PORTS=""
free_port() {
    local p
    while :; do
        # below the kernel's ephemeral range (32768-60999 by default): a port there may be the
        # local end of one of redis-benchmark's connections, which connect cannot see but bind
        # refuses
        p=$((10000 + RANDOM % 22000))
        case " $USED_PORTS " in *" $p "*) continue ;; esac
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            USED_PORTS="$USED_PORTS $p"
            printf -v "$1" '%s' "$p"
            return
        fi
    done
}

# Poll until the RESP server (pid $3) on port $1 answers PING, for at most 30 s.
wait_ping() {
    local deadline=$((SECONDS + 30))
    until [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = "PONG" ]; do
        if [ $SECONDS -ge $deadline ] || ! kill -0 "$3" 2>/dev/null; then
            echo "server on port $1 did not answer PING; log:" >&2
            cat "$2" >&2 || true
            exit 1
        fi
        sleep 0.1
    done
}

# Start NODES Tailor nodes (durability $2, selector $3, replication = nodes) in a fresh data
# directory; sets T_PORT (node 0's client port) and T_PIDS.
start_tailor() {
    local nodes=$1 durability=$2 selector=$3 i members="" dir
    local -a cports=() pports=()
    for ((i = 0; i < nodes; i++)); do
        free_port "cp$i"
        free_port "pp$i"
        cports+=("$(eval echo "\$cp$i")")
        pports+=("$(eval echo "\$pp$i")")
        members="$members{ id = $i, peer = \"127.0.0.1:${pports[$i]}\" },"
    done
    T_PIDS=()
    for ((i = 0; i < nodes; i++)); do
        dir="$WORK/tailor-$nodes-$durability-$selector-$i"
        mkdir -p "$dir"
        cat >"$dir/node.toml" <<EOF
id = $i
data_dir = "$dir/data"
client_addr = "127.0.0.1:${cports[$i]}"
members = [${members%,}]
replication = $nodes
selector = "$selector"
workers = $WORKERS
durability = "$durability"
${ROW_CACHE_MB:+row_cache_mb = $ROW_CACHE_MB}
EOF
        "$TAILOR" node --config "$dir/node.toml" >"$dir/tailor.log" 2>&1 &
        T_PIDS+=($!)
        PIDS+=($!)
    done
    for ((i = 0; i < nodes; i++)); do
        wait_ping "${cports[$i]}" "$WORK/tailor-$nodes-$durability-$selector-$i/tailor.log" "${T_PIDS[$i]}"
    done
    T_PORT=${cports[0]}
}

# Start redis-server with AOF policy $1 (`everysec` or `no`); sets R_PORT and R_PID.
start_redis() {
    local dir="$WORK/redis-$1"
    mkdir -p "$dir"
    free_port R_PORT
    local aof=(--appendonly no)
    [ "$1" = "everysec" ] && aof=(--appendonly yes --appendfsync everysec)
    redis-server --bind 127.0.0.1 --port "$R_PORT" --save '' "${aof[@]}" --daemonize no \
        --dir "$dir" >"$dir/redis.log" 2>&1 &
    R_PID=$!
    PIDS+=("$R_PID")
    wait_ping "$R_PORT" "$dir/redis.log" "$R_PID"
}

# One redis-benchmark run against port $1 with -P $2; prints "TEST rps p50_ms p99_ms" lines
# (SET, GET). Its progress lines end in carriage returns, so split on them first.
bench() {
    redis-benchmark -h 127.0.0.1 -p "$1" -t set,get -n "$N" -c "$C" -d "$D" -r "$R" -P "$2" -q --csv 2>&1 |
        tr '\r' '\n' | tee -a "$WORK/bench-$1.csv" |
        awk -F'","' '/^"(SET|GET)"/ { gsub(/"/, "", $0); split($0, f, ","); print f[1], f[2], f[5], f[7] }'
}

field() { # field OUTPUT TEST COLUMN(2=rps,3=p50,4=p99)
    echo "$1" | awk -v t="$2" -v c="$3" '$1 == t { print $c }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }

ROWS=()
# Median of the numbers given as arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Run -P $3 against Tailor (port T_PORT) then Redis (R_PORT), REPEAT times interleaved; add rows
# labelled $1 (Tailor) / $2 (Redis) with the median of every figure.
compare() {
    local label=$1 rlabel=$2 p=$3 i t_outs=() r_outs=() t
    echo "  $label vs $rlabel, -P $p" >&2
    for ((i = 0; i < REPEAT; i++)); do
        t_outs+=("$(bench "$T_PORT" "$p")")
        r_outs+=("$(bench "$R_PORT" "$p")")
        if [ -z "${t_outs[$i]}" ] || [ -z "${r_outs[$i]}" ]; then
            echo "could not parse redis-benchmark output:" >&2
            cat "$WORK"/bench-*.csv >&2
            exit 1
        fi
    done
    for t in SET GET; do
        local c cols=()
        for c in 2 3 4; do
            local tv=() rv=() o
            for o in "${t_outs[@]}"; do tv+=("$(field "$o" "$t" "$c")"); done
            for o in "${r_outs[@]}"; do rv+=("$(field "$o" "$t" "$c")"); done
            cols+=("$(median "${tv[@]}")" "$(median "${rv[@]}")")
        done
        ROWS+=("$(printf '%-22s %-18s %-3s %3s %10.0f %10.0f %6s %7.3f %7.3f %7.3f %7.3f' "$label" "$rlabel" "$t" "$p" \
            "${cols[0]}" "${cols[1]}" "$(ratio "${cols[0]}" "${cols[1]}")" "${cols[2]}" "${cols[3]}" "${cols[4]}" "${cols[5]}")")
    done
}

echo "redis-benchmark -t set,get -n $N -c $C -d $D -r $R; tailor $WORKERS workers, row cache ${ROW_CACHE_MB:-default} MiB; medians of $REPEAT runs" >&2
for dur in $DURABILITIES; do
    case $dur in
        sync) aof=everysec rlabel="redis aof everysec" ;;
        *) aof=no rlabel="redis no aof" ;;
    esac
    start_redis "$aof"
    for sel in $SELECTORS; do
        start_tailor 1 "$dur" "$sel"
        for p in $PIPELINES; do
            compare "tailor $dur $sel" "$rlabel" "$p"
        done
        stop "${T_PIDS[@]}"
    done
    stop "$R_PID"
done
if [ "$CLUSTER" != 0 ]; then
    start_redis no
    start_tailor 3 buffer lor
    for p in $PIPELINES; do
        compare "tailor 3 nodes buf lor" "redis no aof" "$p"
    done
    stop "${T_PIDS[@]}" "$R_PID"
fi

printf '%-22s %-18s %-3s %3s %10s %10s %6s %7s %7s %7s %7s\n' "tailor" "redis" "op" "-P" \
    "tailor/s" "redis/s" "ratio" "t p50" "r p50" "t p99" "r p99"
printf '%s\n' "${ROWS[@]}"

# The engine's ceiling: fjall in process with one writer thread and 16 writes per batch, against
# the median Redis SET -P16 without AOF measured above (when that line ran).
if [ "$ENGINE" != 0 ] && command -v cargo >/dev/null; then
    redis_set16=$(printf '%s\n' "${ROWS[@]}" | awk '$1 == "tailor" && $2 == "buffer" && $7 == "SET" && $8 == 16 { print $10; exit }')
    echo "engine ceiling (cargo bench -p tailor-store --bench storage_set), against redis no aof SET -P16${redis_set16:+ ($redis_set16/s)}:"
    (cd "$ROOT" && cargo bench -q -p tailor-store --bench storage_set 2>/dev/null) | awk -v r="${redis_set16:-0}" '
        /writes\/s/ { next }
        NF >= 3 && $(NF - 1) ~ /^[0-9]+$/ {
            label = $1; for (i = 2; i <= NF - 2; i++) label = label " " $i
            printf "%-52s %10d/s %6s  %5.2f CPU us/write\n", label, $(NF - 1), (r > 0 ? sprintf("%.2f", $(NF - 1) / r) : "-"), $NF
        }'
fi
