#!/usr/bin/env bash
# check-ui.sh BIN: the live UI in headless Chromium (scripts/check-ui.js)
# against a real server (with --api-key and an admin port, so the test can
# pause it) and a 64-worker fleet. scripts/browser-deps.sh installs
# puppeteer-core and openai (the SDK the requests go through) from npm into
# .cache/npm and skips the check without a browser, except under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/mocker-server}
out=${OUT:-.cache/ui}
. scripts/browser-deps.sh check-ui
mkdir -p "$out"
logs=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$logs"' EXIT

# wait_for FILE REGEX: print the first capture of REGEX once FILE has it.
wait_for() {
  for _ in $(seq 100); do
    if m=$(grep -oE "$2" "$1" | head -1) && [ -n "$m" ]; then echo "$m"; return 0; fi
    sleep 0.1
  done
  echo "check-ui: no '$2' in $1:" >&2; cat "$1" >&2; return 1
}

# --output-len-mode max: the page checks need streams that run their whole
# max_tokens (300 or 1,000 tokens), not answers that end naturally early.
"$bin" serve --port 0 --admin-port 0 --api-key ui-test-key --block-size 16 --num-gpu-blocks-override 4096 \
  --output-len-mode max --log-level warn 2>"$logs/serve.log" & pids+=($!)
"$bin" fleet --workers 64 --base-port 0 --admin-port 0 --num-gpu-blocks-override 256 \
  --output-len-mode max --log-level warn 2>"$logs/fleet.log" & pids+=($!)
server=$(wait_for "$logs/serve.log" 'listening on http://[0-9.:]+' | sed 's/listening on //')
admin=$(wait_for "$logs/serve.log" 'admin API on http://[0-9.:]+' | sed 's/admin API on //')
fleet_admin=$(wait_for "$logs/fleet.log" 'admin API on http://[0-9.:]+' | sed 's/admin API on //')
for _ in $(seq 100); do
  [ "$(grep -c 'listening on' "$logs/fleet.log" || true)" -ge 64 ] && break
  sleep 0.1
done

NODE_PATH=.cache/npm/node_modules CHROMIUM="$chromium" node scripts/check-ui.js "$server" "$admin" ui-test-key "$fleet_admin" "$out"
