#!/usr/bin/env bash
# Fleet scale benchmark (docs/BENCHMARKS.md, "Fleet"): a fleet of WORKERS
# workers (default 256) in its own process pinned to SERVER_CPU, driven by
# the paced load of internal/fleet's TestFleetScale256 (4 streams × 50
# tokens per worker at 20 ms per pass) pinned to BENCH_CPU. Not part of
# `make test`: it wants two idle cores. RUNS repetitions (default 3).
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
SERVER_CPU=${SERVER_CPU:-0}
BENCH_CPU=${BENCH_CPU:-1}
PORT=${PORT:-18000}
WORKERS=${WORKERS:-256}
BIN=${BIN:-/tmp/mocker-fleet-bench}
mkdir -p "$BIN"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

go build -o "$BIN/mocker-server" ./cmd/mocker-server
go test -c -o "$BIN/fleet.test" ./internal/fleet

for run in $(seq 1 "$RUNS"); do
	log="$BIN/server-$run.log"
	taskset -c "$SERVER_CPU" "$BIN/mocker-server" fleet --workers "$WORKERS" --base-port "$PORT" \
		--admin-port -1 --timing-model fixed --fixed-prefill-ms 0 --fixed-decode-ms 20 >"$log" 2>&1 &
	pid=$!
	for _ in $(seq 1 600); do
		grep -q "fleet started" "$log" && break
		sleep 0.1
	done
	echo "== run $run: $(grep -o 'fleet started.*' "$log")"
	sleep 1
	echo "idle $(grep VmRSS "/proc/$pid/status")"
	ticks0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	start=$(date +%s.%N)
	MOCKER_FLEET_SCALE=1 MOCKER_FLEET_WORKERS="$WORKERS" MOCKER_FLEET_BASE_PORT="$PORT" \
		taskset -c "$BENCH_CPU" "$BIN/fleet.test" -test.run 'TestFleetScale256$' -test.v | grep FLEET || true
	ticks1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	end=$(date +%s.%N)
	echo "server used $(echo "($ticks1 - $ticks0) / $(getconf CLK_TCK) / ($end - $start)" | bc -l | cut -c1-4) cores"
	kill -INT "$pid"
	wait "$pid" || true
done
