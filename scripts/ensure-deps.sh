#!/usr/bin/env bash
# ensure-deps.sh: make sure the C library (libzmq, via pkg-config) that the
# cgo ZMQ binding needs is present, plus — with --python — Debian's Python
# ZMQ/msgpack modules used by the cross-language KV-event check.
# Installs through apt-get when running as root; otherwise prints one line
# saying what to install and fails.
set -euo pipefail

want=()
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists libzmq; then
  want+=(libzmq3-dev pkg-config)
fi
if [ "${1:-}" = "--python" ]; then
  if ! /usr/bin/python3 -c 'import zmq, msgpack' >/dev/null 2>&1; then
    want+=(python3 python3-zmq python3-msgpack)
  fi
fi
[ ${#want[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${want[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
  exit 0
fi
echo "missing system packages: run 'sudo apt-get install -y ${want[*]}' and retry" >&2
exit 1
