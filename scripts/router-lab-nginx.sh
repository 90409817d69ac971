#!/usr/bin/env bash
# The router lab's worked example (docs/router-lab.md): a 4-worker fleet,
# nginx in front of it (round robin or least_conn), and `mocker-bench trace`
# through nginx, scored against the offline policies.
#
#   scripts/router-lab-nginx.sh [round_robin|least_conn] [extra mocker-bench trace flags]
#
# Needs nginx (Debian: apt-get install nginx-light). Everything listens on
# 127.0.0.1; the work directory is .cache/router-lab.
set -euo pipefail
balance=${1:-round_robin}
shift || true
cd "$(dirname "$0")/.."
work=.cache/router-lab
mkdir -p "$work/bin" "$work/nginx/logs"
go build -o "$work/bin/" ./cmd/mocker-server ./cmd/mocker-bench

base=18100 admin=19100 front=18080
"$work/bin/mocker-server" fleet --workers 4 --base-port $base --admin-port $admin \
  --enable-prompt-tokens-details --timing-model fixed --fixed-prefill-ms 100 --fixed-decode-ms 25 \
  --max-model-len 65536 >"$work/fleet.log" 2>&1 &
fleet=$!
nginx_pid=
cleanup() {
  [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null || true
  kill "$fleet" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT

method=""
[ "$balance" = least_conn ] && method="least_conn;"
cat >"$work/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $PWD/$work/nginx/nginx.pid;
error_log $PWD/$work/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  upstream fleet {
    $method
    server 127.0.0.1:$((base + 0));
    server 127.0.0.1:$((base + 1));
    server 127.0.0.1:$((base + 2));
    server 127.0.0.1:$((base + 3));
    keepalive 256;
  }
  server {
    listen 127.0.0.1:$front;
    client_max_body_size 64m;
    location / {
      proxy_pass http://fleet;
      proxy_http_version 1.1;          # keep-alive to the workers
      proxy_set_header Connection "";
      proxy_buffering off;             # SSE: every chunk as it comes
      proxy_read_timeout 600s;
    }
  }
}
CONF
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$admin/workers" >/dev/null && break; sleep 0.1; done
nginx -p "$PWD/$work/nginx" -c "$PWD/$work/nginx/nginx.conf" &
nginx_pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$front/health" >/dev/null && break; sleep 0.1; done

"$work/bin/mocker-bench" trace --url "http://127.0.0.1:$front" --fleet-admin "http://127.0.0.1:$admin" \
  --trace-block-size 512 --max-requests 120 --time-scale 0.5 \
  --csv "$work/$balance.csv" --html "$work/$balance.html" "$@" testdata/shared-prefix-synthetic.jsonl
