#!/usr/bin/env bash
# Soak test (not part of `make test`): starts mocker-server with injected
# faults and KV events, drives it for DURATION (default 10m) with
# CONCURRENCY (default 1000) concurrent requests — streamed chat, schema-constrained chat,
# Responses and Messages streams, embeddings — random disconnects, a slow
# KV-event subscriber and a stuck reader (scripts/soak/main.go), samples
# RSS, goroutines, open fds, /load and KV usage every 10 s and fails on
# growth. Usage: scripts/soak.sh [path/to/mocker-server]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-bin/mocker-server}
DURATION=${DURATION:-10m}
CONCURRENCY=${CONCURRENCY:-1000}
LOG=${LOG:-soak.log}
GO=${GO:-go}

[[ -x "$BIN" ]] || "$GO" build -o "$BIN" ./cmd/mocker-server
"$GO" build -o bin/soak ./scripts/soak
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HTTP_PORT=$(free_port)
KV_PORT=$(free_port)

"$BIN" serve --host 127.0.0.1 --port "$HTTP_PORT" --log-level warn --seed 1 \
	--speedup-ratio 1 --timing-model fixed --fixed-prefill-ms 20 --fixed-decode-ms 50 \
	--max-num-seqs 1100 --zmq-kv-events-port "$KV_PORT" \
	--failure-rate 0.05 \
	--failure-types 'rate_limit,server_error,unavailable,truncate;after=3,stream_error;after=2,stall;after=2;for=200ms,reset;after=1,slow_first_token;for=100ms' \
	2>"$LOG.server" &
PID=$!
trap 'kill -TERM $PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$HTTP_PORT/health" >/dev/null && break
	sleep 0.1
done

status=0
bin/soak -url "http://127.0.0.1:$HTTP_PORT" -pid "$PID" -kv "tcp://127.0.0.1:$KV_PORT" \
	-duration "$DURATION" -concurrency "$CONCURRENCY" | tee "$LOG" || status=$?
kill -TERM "$PID"
wait "$PID" || { echo "soak: server exited with $?"; status=1; }
trap - EXIT
exit $status
