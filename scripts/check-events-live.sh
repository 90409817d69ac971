#!/usr/bin/env bash
# check-events-live.sh: start a real mocker-server with Dynamo-style KV
# events and run the Python consumer check (scripts/check_kv_events.py)
# against it with Debian's python3 (python3-zmq + python3-msgpack).
#
# The HTTP port is chosen by the kernel (--port 0; the server prints it).
# The KV-event port must be known in advance, so a free one is picked: if
# another process takes it before the server binds it, the server exits at
# startup and another port is tried.
set -euo pipefail
bin=${1:-bin/mocker-server}
py=""
for cand in $(type -ap python3) /usr/bin/python3; do
  if "$cand" -c 'import zmq, msgpack' >/dev/null 2>&1; then py=$cand; break; fi
done
if [ -z "$py" ]; then
  echo "check-events-live: no python3 can import zmq and msgpack (apt-get install python3-zmq python3-msgpack)" >&2
  exit 1
fi
log=$(mktemp)
pid=""
trap '[ -n "$pid" ] && { kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; }; rm -f "$log"' EXIT
url=""
for attempt in 1 2 3 4 5; do
  zport=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$bin" --port 0 --block-size 4 --num-gpu-blocks 1024 --speedup-ratio inf \
    --enable-lora --max-loras 2 --lora-modules sql=/adapters/sql chat=/adapters/chat \
    --zmq-kv-events-port "$zport" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    url=$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$log")
    if [ -n "$url" ] || ! kill -0 $pid 2>/dev/null; then break; fi
    sleep 0.1
  done
  [ -n "$url" ] && break
  echo "check-events-live: server did not start (attempt $attempt):" >&2
  cat "$log" >&2
  kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; pid=""
done
if [ -z "$url" ]; then
  echo "check-events-live: giving up" >&2
  exit 1
fi
"$py" scripts/check_kv_events.py --endpoint "tcp://127.0.0.1:$zport" \
  --http "$url" --block-size 4 --requests 8 --max-tokens 8 --lora sql --lora chat
