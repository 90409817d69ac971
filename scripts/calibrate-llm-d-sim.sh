#!/usr/bin/env bash
# Calibrate mocker-server against llm-d-inference-sim, a server we did not
# write, with its load-dependent latency settings; prints the report and
# writes the profile and HTML report under $OUT (default /tmp/llm-d-sim-cal).
#
#   scripts/calibrate-llm-d-sim.sh [BUDGET]
#
# The simulator binary: $LLMD_SIM if set, else built from source:
#   go install github.com/llm-d/llm-d-inference-sim/cmd/llm-d-inference-sim@latest
# or, where the module proxy refuses that module (it answered 403 "This module
# version is not available" for it and for github.com/llm-d/llm-d-router when
# this was written), from checkouts: LLMD_SRC=/path/to/llm-d-inference-sim and
# LLMD_ROUTER_SRC=/path/to/llm-d-router (a go.mod replace is added to the copy).
# Not run in CI: it builds a large dependency tree.
set -euo pipefail
BUDGET=${1:-2m}
OUT=${OUT:-/tmp/llm-d-sim-cal}
PORT=${PORT:-18799}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [[ -z "${LLMD_SIM:-}" ]]; then
  LLMD_SIM="$OUT/bin/llm-d-inference-sim"
  if [[ ! -x "$LLMD_SIM" ]]; then
    if [[ -n "${LLMD_SRC:-}" ]]; then
      rm -rf "$OUT/src" && cp -r "$LLMD_SRC" "$OUT/src"
      if [[ -n "${LLMD_ROUTER_SRC:-}" ]]; then
        (cd "$OUT/src" && go mod edit -replace "github.com/llm-d/llm-d-router=$LLMD_ROUTER_SRC" && go mod tidy)
      fi
      (cd "$OUT/src" && go build -o "$LLMD_SIM" ./cmd/llm-d-inference-sim)
    else
      GOBIN="$OUT/bin" go install github.com/llm-d/llm-d-inference-sim/cmd/llm-d-inference-sim@latest
    fi
  fi
fi
(cd "$ROOT" && go build -o "$OUT/mocker-server" ./cmd/mocker-server)

# Per-token prefill (15 ms + 20 µs a token), 8 ms a token of decode, and
# the load factor: latencies grow up to 2× as the 64 request slots fill.
# A 32768-token context and a 262144-token KV cache (16384 blocks of 16), as
# the cache_config_info it publishes tells calibrate (its KV cache is not
# enabled, so it never limits anything).
"$LLMD_SIM" --port "$PORT" --model calib-model --mode random \
  --latency-calculator per-token --prefill-overhead 15ms --prefill-time-per-token 20us \
  --inter-token-latency 8ms --time-factor-under-load 2 --max-num-seqs 64 \
  --max-model-len 32768 --kv-cache-size 16384 --block-size 16 \
  >"$OUT/llm-d-sim.log" 2>&1 &
SIM_PID=$!
trap 'kill $SIM_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break
  sleep 0.1
done
"$OUT/mocker-server" calibrate --url "http://127.0.0.1:$PORT" --out "$OUT/profile.json" \
  --html "$OUT/report.html" --budget "$BUDGET" --max-concurrency 64 | tee "$OUT/report.txt"
