#!/usr/bin/env bash
# The transport floor of a prefill/decode handoff (docs/BENCHMARKS.md,
# "Disaggregated prefill/decode"): two servers with every modeled time zero,
# then 30 handoffs as a P/D proxy does them (a prefill with do_remote_decode and
# max_tokens 1, then the streamed decode with the returned kv_transfer_params),
# timed until the decode's first content chunk. What remains is HTTP and
# request handling, no model time.
#
#   scripts/pd-floor.sh [BIN]   (default bin/mocker-server; ports 18121-18122)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-bin/mocker-server}
ZERO=(--timing-model fixed --fixed-prefill-ms 0 --fixed-decode-ms 0 --kv-bytes-per-token 0 --block-size 16 --log-level warn)
NIXL='{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
"$BIN" --port 18121 "${ZERO[@]}" --kv-transfer-config "$NIXL" --worker-id prefill &
P=$!
"$BIN" --port 18122 "${ZERO[@]}" --kv-transfer-config "$NIXL" --worker-id decode &
D=$!
trap 'kill $P $D 2>/dev/null || true' EXIT
for port in 18121 18122; do
	for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
done
/usr/bin/python3 - <<'PY'
import http.client, json, statistics, time

def post(port, body):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"content-type": "application/json"})
    return conn, conn.getresponse()

times = []
for i in range(30):
    messages = [{"role": "user", "content": "Name a colour number %d please." % i}]
    start = time.perf_counter()
    conn, resp = post(18121, {"messages": messages, "max_tokens": 1, "kv_transfer_params": {"do_remote_decode": True}})
    params = json.loads(resp.read())["kv_transfer_params"]
    conn.close()
    conn, resp = post(18122, {"messages": messages, "max_tokens": 4, "stream": True, "kv_transfer_params": params})
    while True:
        line = resp.readline()
        if not line:
            raise SystemExit("decode stream ended without content")
        if line.startswith(b"data: {") and b'"content":"' in line and b'"content":""' not in line:
            break
    times.append((time.perf_counter() - start) * 1000)
    conn.close()
print("zero-model P/D TTFT: median %.3f ms, best %.3f ms (30 handoffs)" % (statistics.median(times), min(times)))
PY
