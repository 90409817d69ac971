#!/usr/bin/env bash
# replay-vs-live.sh: one workload live and offline. Starts `serve` with
# CONFIG at --speedup-ratio 10 (pinned to CPU 0), drives it with
# mocker-bench (open loop, Poisson, CPU 1), then replays a synthetic workload
# with the same rate, prompt length (the server's mean prompt_tokens), output
# length and configuration, and prints the p50s side by side. Not part of
# `make test` (docs/BENCHMARKS.md, "Replay").
#
#   RATE=3 REQUESTS=150 MAX_TOKENS=16 PROMPT=512 scripts/replay-vs-live.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-3} REQUESTS=${REQUESTS:-150} MAX_TOKENS=${MAX_TOKENS:-16} PROMPT=${PROMPT:-512}
PORT=${PORT:-18431} OUT=${OUT:-/tmp/replay-vs-live}
ARGS=(--timing-model fixed --fixed-prefill-ms 2000 --fixed-decode-ms 300 --speedup-ratio 10)
mkdir -p "$OUT" bin
go build -o bin/mocker-server ./cmd/mocker-server
go build -o bin/mocker-bench ./cmd/mocker-bench
taskset -c 0 bin/mocker-server serve "${ARGS[@]}" --port "$PORT" --log-level warn &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
taskset -c 1 bin/mocker-bench --url "http://127.0.0.1:$PORT" --completions --rate "$RATE" --requests "$REQUESTS" \
  --concurrency 64 --prompt-tokens "$PROMPT" --max-tokens "$MAX_TOKENS" --no-progress --json "$OUT/live.json" >/dev/null
prompt=$(/usr/bin/python3 -c "import json;print(round(json.load(open('$OUT/live.json'))['prompt_tokens_mean']))")
bin/mocker-server replay "${ARGS[@]}" --requests "$REQUESTS" --rate "$RATE" --input-len "$prompt" \
  --output-len "$MAX_TOKENS" --no-progress --json > "$OUT/replay.json"
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
live, rep = json.load(open(out + "/live.json")), json.load(open(out + "/replay.json"))["summary"]
for name, lk, rk in (("TTFT", "ttft", "ttft_ms"), ("ITL", "itl", "inter_token_gap_ms"), ("E2E", "e2e", "e2e_ms")):
    l, r = live[lk]["p50_ms"], rep[rk]["p50"]
    print(f"{name} p50: replay {r:.3f} ms, live {l:.3f} ms ({100 * (l - r) / r:+.1f} %)")
PY
