#!/usr/bin/env bash
# Benchmark (not a test): one Tailor node against Debian's redis-server, both on free loopback
# ports, driven by the same redis-benchmark run; prints GET/SET throughput and p50/p99 latency
# for each and the Tailor/Redis ratio. Both servers are stopped on exit (trap).
#
# Usage: scripts/bench-vs-redis.sh            (builds tailor in release mode if TAILOR is unset)
# Environment:
#   TAILOR=path/to/tailor         binary to run (default: cargo build --release -p tailor)
#   N=100000 C=50 D=1024          redis-benchmark requests, connections, value bytes
#   TAILOR_SELECTOR=c3            replica selector of the node (the node's default)
#   TAILOR_WORKERS=4              replica worker threads
#   TAILOR_DURABILITY=buffer      `buffer` (journal to OS buffers before the ack, like Redis's
#                                 default of no fsync per write) or `sync` (fdatasync per ack group)
# Choice: Redis runs with its defaults except `--save ''` (no RDB snapshot mid-run) and
# `--appendonly no`, so neither server fsyncs per write unless TAILOR_DURABILITY=sync.
set -euo pipefail

N=${N:-100000}
C=${C:-50}
D=${D:-1024}
TAILOR_SELECTOR=${TAILOR_SELECTOR:-c3}
TAILOR_WORKERS=${TAILOR_WORKERS:-4}
TAILOR_DURABILITY=${TAILOR_DURABILITY:-buffer}
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
cleanup() {
    for p in "${PIDS[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${PIDS[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# Set variable $1 to a loopback port nobody listens on (bash's /dev/tcp cannot connect to a
# free port) and that this script has not handed out yet (no subshell, so the list persists).
USED_PORTS=""
free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 40000))
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

free_port TAILOR_PORT
free_port PEER_PORT
free_port REDIS_PORT

cat >"$WORK/node.toml" <<EOF
id = 0
data_dir = "$WORK/tailor-data"
client_addr = "127.0.0.1:$TAILOR_PORT"
members = [{ id = 0, peer = "127.0.0.1:$PEER_PORT" }]
replication = 1
selector = "$TAILOR_SELECTOR"
workers = $TAILOR_WORKERS
durability = "$TAILOR_DURABILITY"
EOF
"$TAILOR" node --config "$WORK/node.toml" >"$WORK/tailor.log" 2>&1 &
TAILOR_PID=$!
PIDS+=("$TAILOR_PID")
redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no --daemonize no \
    --dir "$WORK" >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
PIDS+=("$REDIS_PID")
wait_ping "$TAILOR_PORT" "$WORK/tailor.log" "$TAILOR_PID"
wait_ping "$REDIS_PORT" "$WORK/redis.log" "$REDIS_PID"

# One redis-benchmark run; prints "TEST rps p50_ms p99_ms" lines (SET, GET). Its progress lines
# end in carriage returns, so split on them before picking the CSV rows.
bench() {
    redis-benchmark -h 127.0.0.1 -p "$1" -t set,get -n "$N" -c "$C" -d "$D" -q --csv 2>&1 |
        tr '\r' '\n' | tee "$WORK/bench-$1.csv" |
        awk -F'","' '/^"(SET|GET)"/ { gsub(/"/, "", $0); split($0, f, ","); print f[1], f[2], f[5], f[7] }'
}

echo "redis-benchmark -t set,get -n $N -c $C -d $D (tailor: selector $TAILOR_SELECTOR, $TAILOR_WORKERS workers, durability $TAILOR_DURABILITY)" >&2
echo "running against Tailor on port $TAILOR_PORT" >&2
T_OUT=$(bench "$TAILOR_PORT")
echo "running against Redis on port $REDIS_PORT" >&2
R_OUT=$(bench "$REDIS_PORT")
if [ -z "$T_OUT" ] || [ -z "$R_OUT" ]; then
    echo "could not parse redis-benchmark output:" >&2
    cat "$WORK"/bench-*.csv >&2
    exit 1
fi

field() { # field OUTPUT TEST COLUMN(2=rps,3=p50,4=p99)
    echo "$1" | awk -v t="$2" -v c="$3" '$1 == t { print $c }'
}

printf '%-10s %14s %14s %14s\n' "metric" "tailor" "redis" "tailor/redis"
for t in SET GET; do
    for col in 2:"rps" 3:"p50 ms" 4:"p99 ms"; do
        c=${col%%:*}
        name="$t ${col#*:}"
        tv=$(field "$T_OUT" "$t" "$c")
        rv=$(field "$R_OUT" "$t" "$c")
        ratio=$(awk -v a="$tv" -v b="$rv" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "-" }')
        printf '%-10s %14s %14s %14s\n' "$name" "$tv" "$rv" "$ratio"
    done
done
