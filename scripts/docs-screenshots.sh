#!/usr/bin/env bash
# docs-screenshots.sh BIN BENCH: retake the screenshots the docs show —
# docs/ui-engine.png (/ui of a server with the default 16,384-block pool
# under load from mocker-bench), docs/ui-fleet.png (the fleet page with
# workers killed, paused with /health failing, draining and slowed through
# the admin API) and docs/replay-compare.png (the first screen of the
# one-knob comparison report of docs/replay.md). Not part of `make test`:
# the checks behind the pictures are scripts/check-ui.js and
# scripts/check-replay-html.js.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/mocker-server}
bench=${2:-bin/mocker-bench}
. scripts/browser-deps.sh docs-screenshots
logs=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$logs"' EXIT
shot() { NODE_PATH=.cache/npm/node_modules CHROMIUM="$chromium" node scripts/docs-screenshots.js "$@"; }

# wait_for FILE REGEX: print the first capture of REGEX once FILE has it.
wait_for() {
  for _ in $(seq 100); do
    if m=$(grep -oE "$2" "$1" | head -1) && [ -n "$m" ]; then echo "$m"; return 0; fi
    sleep 0.1
  done
  echo "docs-screenshots: no '$2' in $1:" >&2; cat "$1" >&2; return 1
}

# /ui under load, default pool: 300 streams of 2,000-token prompts (4
# shared 500-word prefixes) and 300 output tokens.
"$bin" serve --port 0 --log-level warn 2>"$logs/serve.log" & pids+=($!)
server=$(wait_for "$logs/serve.log" 'listening on http://[0-9.:]+' | sed 's/listening on //')
"$bench" -url "$server" -concurrency 300 -prompt-tokens 2000 -max-tokens 300 -shared-prefix 500 -num-prefixes 4 \
  -duration 40s -no-progress >"$logs/bench.txt" 2>&1 & pids+=($!)
sleep 15
shot page "$server/ui" docs/ui-engine.png 1400 1250 1000

# The fleet page: 8 workers, 6 of them loaded; 1 killed, 2 paused with a
# failing /health, 3 draining, 4 slowed by 50 ms per pass.
"$bin" fleet --workers 8 --base-port 0 --admin-port 0 --log-level warn 2>"$logs/fleet.log" & pids+=($!)
admin=$(wait_for "$logs/fleet.log" 'admin API on http://[0-9.:]+' | sed 's/admin API on //')
for _ in $(seq 100); do
  [ "$(grep -c 'listening on' "$logs/fleet.log" || true)" -ge 8 ] && break
  sleep 0.1
done
for url in $(grep -oE 'listening on http://[0-9.:]+' "$logs/fleet.log" | sed 's/listening on //' | head -6); do
  "$bench" -url "$url" -concurrency 20 -prompt-tokens 500 -max-tokens 200 -duration 30s -no-progress >/dev/null 2>&1 & pids+=($!)
done
sleep 3
curl -fsS -X POST "$admin/workers/1/kill" >/dev/null
curl -fsS -X POST "$admin/workers/2/pause" -d '{"health":"fail"}' >/dev/null
curl -fsS -X POST "$admin/workers/3/drain" >/dev/null
curl -fsS -X POST "$admin/workers/4/slow" -d '{"extra_pass_delay_ms": 50}' >/dev/null
sleep 4
shot page "$admin/ui" docs/ui-fleet.png 1300 470 0

# The one-knob comparison of docs/replay.md.
"$bin" replay --requests 2000 --rate 20 --input-len 2000 --output-len 128 --prefix-groups 8 --prefix-len 1536 \
  --workers 2 --config configs/vllm-default.yaml --config configs/prefix-cache-off.yaml --no-progress \
  --html "$logs/compare.html" >/dev/null
shot file "$logs/compare.html" docs/replay-compare.png 1400 900
ls -l docs/ui-engine.png docs/ui-fleet.png docs/replay-compare.png
