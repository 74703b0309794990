#!/usr/bin/env bash
# Checks the README's TLS steps with unmodified tools: certificates made with openssl, one
# `tailor node` with TLS and mutual TLS, `redis-cli --tls` SET/GET with a client certificate,
# and a client without one refused. Needs openssl and redis-cli (redis-tools) built with TLS.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${CARGO_TARGET_DIR:-target}/release/tailor
[ -x "$bin" ] || cargo build --release -p tailor
bin=$(realpath "$bin")
help=$(redis-cli --help 2>&1 || true)
grep -q -- --tls <<<"$help" || { echo "redis-cli has no --tls: skipped"; exit 0; }
dir=$(mktemp -d)
cd "$dir"
make_cert() { # name subject-alt-names: a key and a certificate signed by ca
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$1.key" -out "$1.csr" 2>/dev/null
  printf 'subjectAltName=%s\n' "$2" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca -keyout ca.key -out ca.pem 2>/dev/null
make_cert server "DNS:localhost,IP:127.0.0.1"
make_cert client "DNS:client"
port=$((10000 + RANDOM % 22000)) # below the ephemeral range, where bind could find it taken
cat >node.toml <<EOF
data_dir = "$dir/data"
client_addr = "127.0.0.1:0"
tls_addr = "127.0.0.1:$port"
tls_cert_file = "server.pem"
tls_key_file = "server.key"
tls_ca_cert_file = "ca.pem"
tls_auth_clients = true
replication = 1
members = [{ id = 0, peer = "127.0.0.1:$((port + 1))" }]
EOF
"$bin" node --config node.toml >node.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
cli=(redis-cli -p "$port" --tls --cacert ca.pem)
for _ in $(seq 1 100); do
  "${cli[@]}" --cert client.pem --key client.key ping 2>/dev/null | grep -q PONG && break
  sleep 0.1
done
[ "$("${cli[@]}" --cert client.pem --key client.key set k over-tls)" = OK ] || { cat node.log; exit 1; }
[ "$("${cli[@]}" --cert client.pem --key client.key get k)" = over-tls ] || { cat node.log; exit 1; }
if "${cli[@]}" ping 2>&1 | grep -q PONG; then echo "a client without a certificate was served"; exit 1; fi
echo "redis-cli --tls: ok"
