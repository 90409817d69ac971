#!/usr/bin/env bash
# check-replay-html.sh BIN: render a comparison HTML report with
# `BIN replay` and check it in headless Chromium (scripts/check-replay-html.js).
# scripts/browser-deps.sh installs puppeteer-core from npm into .cache/npm
# (ignored by git) and skips the check without a browser, except under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/mocker-server}
out=${OUT:-.cache/replay-html}
. scripts/browser-deps.sh check-replay-html
mkdir -p "$out"
# Two setups (default and small-cache) on 2 workers: CDFs, scatter, hit
# rate, KV per setup and one queue chart per worker and setup = 11 charts.
# The small cache rejects the sample's long prompts: the page must explain
# them.
"$bin" replay --workers 2 --router kv_aware --time-scale 0.25 --no-progress \
  --compare configs/fast-ci.yaml configs/small-cache.yaml testdata/mooncake-synthetic-head400.jsonl \
  --html "$out/report.html" > "$out/table.txt"
NODE_PATH=.cache/npm/node_modules CHROMIUM="$chromium" node scripts/check-replay-html.js "$out/report.html" "$out/report.png" 11
