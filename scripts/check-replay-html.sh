#!/usr/bin/env bash
# check-replay-html.sh BIN: render a comparison HTML report with
# `BIN replay` and check it in headless Chromium (scripts/check-replay-html.js).
# puppeteer-core is installed from npm into .cache/npm (ignored by git).
# Without a browser the check is skipped, except under CI=true, where it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/mocker-server}
out=${OUT:-.cache/replay-html}
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ] || ! command -v node >/dev/null 2>&1; then
  if [ "${CI:-}" = "true" ]; then
    echo "check-replay-html: $chromium or node is missing (scripts/ensure-deps.sh --browser installs them)" >&2
    exit 1
  fi
  echo "check-replay-html: skipped: no $chromium or node (scripts/ensure-deps.sh --browser installs them)" >&2
  exit 0
fi
if [ ! -d .cache/npm/node_modules/puppeteer-core ]; then
  mkdir -p .cache/npm
  (cd .cache/npm && { [ -f package.json ] || npm init -y >/dev/null; } && npm install --no-audit --no-fund --silent puppeteer-core@24 >/dev/null)
fi
mkdir -p "$out"
# Two setups (default and small-cache) on 2 workers: CDFs, scatter, hit
# rate, and KV plus queue charts per setup = 9 charts.
"$bin" replay --workers 2 --router kv_aware --time-scale 0.25 --no-progress \
  --compare configs/fast-ci.yaml configs/small-cache.yaml testdata/mooncake-synthetic-head400.jsonl \
  --html "$out/report.html" > "$out/table.txt"
NODE_PATH=.cache/npm/node_modules CHROMIUM="$chromium" node scripts/check-replay-html.js "$out/report.html" "$out/report.png" 9
