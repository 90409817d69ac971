# browser-deps.sh: sourced by the headless-browser checks (check-ui.sh,
# check-replay-html.sh). Sets $chromium; skips the check (exit 0) when
# Chromium or node is missing, except under CI=true, where that fails; and
# installs the npm packages the checks use — puppeteer-core (no browser
# download: Debian's chromium is driven) and openai (the SDK the UI check
# sends requests through) — into .cache/npm, ignored by git.
#
#   . scripts/browser-deps.sh NAME      (from the repository root)
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ] || ! command -v node >/dev/null 2>&1; then
  if [ "${CI:-}" = "true" ]; then
    echo "$1: $chromium or node is missing (scripts/ensure-deps.sh --browser installs them)" >&2
    exit 1
  fi
  echo "$1: skipped: no $chromium or node (scripts/ensure-deps.sh --browser installs them)" >&2
  exit 0
fi
if [ ! -d .cache/npm/node_modules/puppeteer-core ] || [ ! -d .cache/npm/node_modules/openai ]; then
  mkdir -p .cache/npm
  (cd .cache/npm && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --silent puppeteer-core@24 openai@6 >/dev/null)
fi
