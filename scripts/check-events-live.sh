#!/usr/bin/env bash
# check-events-live.sh: start a real mocker-server with Dynamo-style KV
# events and run the Python consumer check (scripts/check_kv_events.py)
# against it with Debian's python3 (python3-zmq + python3-msgpack).
set -euo pipefail
bin=${1:-bin/mocker-server}
port=$(( 20000 + RANDOM % 20000 ))
zport=$(( port + 1 ))
py=""
for cand in $(type -ap python3) /usr/bin/python3; do
  if "$cand" -c 'import zmq, msgpack' >/dev/null 2>&1; then py=$cand; break; fi
done
if [ -z "$py" ]; then
  echo "check-events-live: no python3 can import zmq and msgpack (apt-get install python3-zmq python3-msgpack)" >&2
  exit 1
fi
log=$(mktemp)
"$bin" --port "$port" --block-size 4 --num-gpu-blocks 1024 --speedup-ratio inf \
  --zmq-kv-events-port "$zport" >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.1
done
"$py" scripts/check_kv_events.py --endpoint "tcp://127.0.0.1:$zport" \
  --http "http://127.0.0.1:$port" --block-size 4 --requests 8 --max-tokens 8
