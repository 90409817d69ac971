#!/usr/bin/env bash
# Benchmark driver for mocker-server + mocker-bench (docs/BENCHMARKS.md).
# Not part of `make test`: it takes several minutes and wants 2+ idle cores.
#
#   scripts/bench.sh [all|throughput|paced|hold|hold20k|engine|sse|floor]   (default: all)
#
# hold20k (not part of all) holds 20,000 streams (fewer under a lower
# ulimit -Hn) at a slow pace and reports errors and peak RSS.
# floor (not part of all) is the write floor: no server, only the syscall
# path that delivers one SSE chunk per connection per pass (mocker-bench
# floor-write pinned to SERVER_CPU, floor-read pinned to BENCH_CPU), for N in
# FLOOR_CONNS (default "1000 10000 20000"). FLOOR_WRITERS (default 1) writer
# goroutines; more than one only runs in parallel if SERVER_CPU lists more
# than one CPU. FLOOR_TICKS (default 50) measured ticks of FLOOR_INTERVAL
# (default 100ms) after 5 warm-up ticks, on FLOOR_ADDR (default
# 127.0.0.1:18090). Each process needs N + 64 descriptors: an N that does
# not fit under `ulimit -Hn` is lowered to the largest multiple of 100 that
# does (20000 becomes 19900 under a hard limit of 20000), and the output
# says so.
#
# Environment: RUNS (repetitions per scenario, default 3), SERVER_CPU and
# BENCH_CPU (taskset CPU lists, default 0 and 1), BENCH_NICE (the load
# tool's and floor-read's nice level, default 0: when they share the
# server's cores, 19 lets the server's writes go first), SERVER_ENV (extra server
# environment, e.g. GOGC=400), SERVER_ARGS (extra server flags, e.g.
# "--tokenizer DIR" for a model's real tokenizer), PORT (default 18080),
# OUT (directory for JSON results, default /tmp/mocker-bench-results).
# Loopback only; every run is bounded in time and request count.
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
SERVER_CPU=${SERVER_CPU:-0}
BENCH_CPU=${BENCH_CPU:-1}
PORT=${PORT:-18080}
OUT=${OUT:-/tmp/mocker-bench-results}
BIN=${BIN:-/tmp/mocker-bench-bin}
URL="http://127.0.0.1:${PORT}"
mkdir -p "$OUT" "$BIN"

# 10,000 streams need ~10k descriptors per process.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

echo "== machine"
echo "nproc: $(nproc)"
echo "cpu:   $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "go:    $(go version)"
echo "ulimit -n: $(ulimit -n)"

# The floor scenario needs no server.
[[ ${1:-all} == floor ]] || go build -o "$BIN/mocker-server" ./cmd/mocker-server
go build -o "$BIN/mocker-bench" ./cmd/mocker-bench

SERVER_PID=""
stop_server() {
	if [[ -n "$SERVER_PID" ]]; then
		kill "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
		SERVER_PID=""
	fi
}
trap stop_server EXIT

# start_server ARGS...: a fresh server pinned to SERVER_CPU.
start_server() {
	stop_server
	taskset -c "$SERVER_CPU" env ${SERVER_ENV:-} "$BIN/mocker-server" --port "$PORT" --log-level warn ${SERVER_ARGS:-} "$@" \
		>"$OUT/server.log" 2>&1 &
	SERVER_PID=$!
	for _ in $(seq 100); do
		curl -fs "$URL/health" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "server did not start:"; cat "$OUT/server.log"; exit 1
}

# VIEWERS (default 0) live-UI viewers (docs/ui.md) read GET /ui/stream during
# the paced scenario: one curl process holding VIEWERS streams (one process
# rather than VIEWERS keeps the client side light), pinned to BENCH_CPU.
VIEWER_PIDS=()
start_viewers() {
	local n=${VIEWERS:-0} args=()
	[[ $n -gt 0 ]] || return 0
	for _ in $(seq "$n"); do args+=(-o /dev/null "$URL/ui/stream?view=engine"); done
	taskset -c "$BENCH_CPU" curl -sN --parallel --parallel-immediate --parallel-max "$n" "${args[@]}" 2>/dev/null &
	VIEWER_PIDS+=($!)
}
stop_viewers() {
	for p in "${VIEWER_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	VIEWER_PIDS=()
}

# bench NAME ARGS...: one mocker-bench run pinned to BENCH_CPU, JSON to $OUT/NAME.json.
bench() {
	local name=$1; shift
	taskset -c "$BENCH_CPU" nice -n "${BENCH_NICE:-0}" "$BIN/mocker-bench" --url "$URL" --no-progress --json "$OUT/$name.json" "$@" \
		>"$OUT/$name.txt" || { cat "$OUT/$name.txt"; return 1; }
}

# lag_quantile Q: quantile of mocker_token_delivery_lag_seconds from /metrics
# (histogram_quantile-style linear interpolation inside the bucket), in ms.
lag_quantile() {
	curl -fs "$URL/metrics" | awk -v q="$1" '
		/^mocker_token_delivery_lag_seconds_bucket/ {
			match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5)
			n++; les[n] = (le == "+Inf") ? 1e9 : le + 0; cnt[n] = $NF + 0
		}
		END {
			total = cnt[n]; if (total == 0) { print "nan"; exit }
			rank = q * total; prevle = 0; prevc = 0
			for (i = 1; i <= n; i++) {
				if (cnt[i] >= rank) {
					if (les[i] == 1e9) { printf "%.3f\n", prevle * 1000; exit }
					printf "%.3f\n", (prevle + (les[i] - prevle) * (rank - prevc) / (cnt[i] - prevc)) * 1000; exit
				}
				prevle = les[i]; prevc = cnt[i]
			}
		}'
}

# model_e2e_mean_ms: the mean e2e the engine itself modeled (arrival at the
# handler to the pass that finished the request, on the engine clock:
# vllm:e2e_request_latency_seconds sum / count), in ms. The client's mean e2e
# minus this is what the HTTP path and the client added.
model_e2e_mean_ms() {
	curl -fs "$URL/metrics" | awk '
		/^vllm:e2e_request_latency_seconds_sum/ {s += $NF}
		/^vllm:e2e_request_latency_seconds_count/ {c += $NF}
		END {if (c > 0) printf "%.1f\n", s / c * 1000; else print "nan"}'
}

lag_count() { curl -fs "$URL/metrics" | awk '/^mocker_token_delivery_lag_seconds_count/ {print $NF}'; }

# server_cpu_s: CPU seconds (user + system) the server has used so far.
server_cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f\n", ($14 + $15) / hz}' "/proc/$SERVER_PID/stat"; }

rss_mib() { awk '/VmRSS/ {printf "%.0f\n", $2 / 1024}' "/proc/$SERVER_PID/status"; }

# start_rss_sampler FILE: sample the server's RSS every 0.5 s into FILE;
# stop_rss_sampler FILE: stop it and set RSS_PEAK to the peak (MiB).
RSS_SAMPLER=""
start_rss_sampler() {
	( while kill -0 "$SERVER_PID" 2>/dev/null; do rss_mib; sleep 0.5; done ) >"$1" 2>/dev/null &
	RSS_SAMPLER=$!
}
stop_rss_sampler() {
	kill "$RSS_SAMPLER" 2>/dev/null || true; wait "$RSS_SAMPLER" 2>/dev/null || true
	RSS_PEAK=$(sort -n "$1" | tail -1)
}

# median of the numbers on stdin
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

jf() { jq -r "$2" "$OUT/$1.json"; }

# 1. Zero-latency streaming throughput.
scenario_throughput() {
	echo; echo "== 1. zero-latency streaming: --speedup-ratio inf, 256 streams x 1000 tokens, 10 s"
	local tps=()
	for r in $(seq "$RUNS"); do
		start_server --speedup-ratio inf --max-num-seqs 256
		bench "s1-$r" --concurrency 256 --duration 10s --max-tokens 1000 --prompt-tokens 32
		tps+=("$(jf "s1-$r" .output_tokens_per_second)")
		printf "run %d: %.0f tok/s, %.1f req/s, errors %s\n" "$r" "${tps[-1]}" \
			"$(jf "s1-$r" .requests_per_second)" "$(jf "s1-$r" .errors)"
	done
	printf "median: %.0f output tokens/s\n" "$(printf '%s\n' "${tps[@]}" | median)"
}

# 2. 1000 paced streams x 50 tokens at 20 ms per pass: ideal e2e 1.000 s.
scenario_paced() {
	echo; echo "== 2. 1000 streams x 50 tokens, fixed 0 ms prefill / 20 ms decode (ideal e2e 1000 ms)"
	local p50s=() p99s=() lags=()
	for r in $(seq "$RUNS"); do
		start_server --timing-model fixed --fixed-prefill-ms 0 --fixed-decode-ms 20 --max-num-seqs 1024
		start_viewers
		bench "s2-$r" --concurrency 1000 --requests 5000 --max-tokens 50 --prompt-tokens 32 --ramp 1s
		stop_viewers
		p50s+=("$(jf "s2-$r" .e2e.p50_ms)"); p99s+=("$(jf "s2-$r" .e2e.p99_ms)")
		lags+=("$(lag_quantile 0.99)")
		printf "run %d: e2e p50 %.1f ms p99 %.1f ms max %.1f ms, mean %.1f ms vs the engine's modeled mean %s ms, ttft p50 %.1f ms, itl p50 %.2f ms p99 %.2f ms, errors %s, lag p50 %s ms p99 %s ms (%s obs), server cpu %s s\n" \
			"$r" "${p50s[-1]}" "${p99s[-1]}" "$(jf "s2-$r" .e2e.max_ms)" "$(jf "s2-$r" .e2e.mean_ms)" "$(model_e2e_mean_ms)" \
			"$(jf "s2-$r" .ttft.p50_ms)" \
			"$(jf "s2-$r" .itl.p50_ms)" "$(jf "s2-$r" .itl.p99_ms)" "$(jf "s2-$r" .errors)" \
			"$(lag_quantile 0.5)" "${lags[-1]}" "$(lag_count)" "$(server_cpu_s)"
	done
	printf "median: e2e p50 %.1f ms (%+.1f %%), p99 %.1f ms (%+.1f %%), lag p99 %.2f ms\n" \
		"$(printf '%s\n' "${p50s[@]}" | median)" "$(echo "($(printf '%s\n' "${p50s[@]}" | median) - 1000) / 10" | bc -l)" \
		"$(printf '%s\n' "${p99s[@]}" | median)" "$(echo "($(printf '%s\n' "${p99s[@]}" | median) - 1000) / 10" | bc -l)" \
		"$(printf '%s\n' "${lags[@]}" | median)"
}

# 3. 10,000 streams held open: long outputs at a slow pace.
scenario_hold() {
	echo; echo "== 3. 10,000 concurrent streams, 200 tokens at 100 ms per pass (20 s each), 1 request per stream"
	local rss=() lags=() p99s=()
	for r in $(seq "$RUNS"); do
		start_server --timing-model fixed --fixed-prefill-ms 0 --fixed-decode-ms 100 --max-num-seqs 16384 \
			--num-gpu-blocks-override 65536 --max-num-batched-tokens 1000000
		local peak=0
		start_rss_sampler "$OUT/s3-$r.rss"
		bench "s3-$r" --concurrency 10000 --requests 10000 --max-tokens 200 --prompt-tokens 16 --ramp 2s
		lags+=("$(lag_quantile 0.99)")
		stop_rss_sampler "$OUT/s3-$r.rss"; peak=$RSS_PEAK
		rss+=("$peak"); p99s+=("$(jf "s3-$r" .e2e.p99_ms)")
		printf "run %d: %s ok, %s errors, peak RSS %s MiB, e2e p50 %.0f ms p99 %.0f ms (ideal 20000), mean %.0f ms vs the engine's modeled mean %s ms, itl p99 %.1f ms, lag p50 %s ms p99 %s ms, server cpu %s s\n" \
			"$r" "$(jf "s3-$r" .requests)" "$(jf "s3-$r" .errors)" "$peak" "$(jf "s3-$r" .e2e.p50_ms)" \
			"${p99s[-1]}" "$(jf "s3-$r" .e2e.mean_ms)" "$(model_e2e_mean_ms)" "$(jf "s3-$r" .itl.p99_ms)" \
			"$(lag_quantile 0.5)" "${lags[-1]}" "$(server_cpu_s)"
	done
	printf "median: peak RSS %s MiB, lag p99 %.2f ms, e2e p99 %.0f ms\n" "$(printf '%s\n' "${rss[@]}" | median)" \
		"$(printf '%s\n' "${lags[@]}" | median)" "$(printf '%s\n' "${p99s[@]}" | median)"
}

# 3b. As many streams as the descriptor limit allows (20,000, or fewer when
# ulimit -Hn is lower), held open at a slow pace: errors and peak RSS.
scenario_hold20k() {
	local hard n=20000
	hard=$(ulimit -Hn)
	if [[ $hard != unlimited ]] && ((n + 100 > hard)); then
		n=$(((hard - 100) / 100 * 100))
		echo "note: 20000 streams + 100 spare descriptors exceed ulimit -Hn = $hard: holding $n streams"
	fi
	echo; echo "== 3b. $n concurrent streams held open, 30 tokens at 500 ms per pass (15 s each), 1 request per stream"
	local rss=()
	for r in $(seq "$RUNS"); do
		start_server --timing-model fixed --fixed-prefill-ms 0 --fixed-decode-ms 500 --max-num-seqs 32768 \
			--num-gpu-blocks-override 131072 --max-num-batched-tokens 1000000
		start_rss_sampler "$OUT/s3b-$r.rss"
		bench "s3b-$r" --concurrency "$n" --requests "$n" --max-tokens 30 --prompt-tokens 16 --ramp 4s --timeout 120s || true
		stop_rss_sampler "$OUT/s3b-$r.rss"; rss+=("$RSS_PEAK")
		printf "run %d: %s ok, %s errors, peak RSS %s MiB, e2e p50 %.0f ms p99 %.0f ms (ideal 15000), lag p99 %s ms\n" \
			"$r" "$(jf "s3b-$r" .requests)" "$(jf "s3b-$r" .errors)" "${rss[-1]}" "$(jf "s3b-$r" .e2e.p50_ms)" \
			"$(jf "s3b-$r" .e2e.p99_ms)" "$(lag_quantile 0.99)"
	done
	printf "median: peak RSS %s MiB\n" "$(printf '%s\n' "${rss[@]}" | median)"
}

# 4. The engine alone in virtual time (no HTTP).
scenario_engine() {
	echo; echo "== 4. engine in virtual time: 100,000-request synthetic trace"
	taskset -c "$SERVER_CPU" go test -run '^$' -bench 'BenchmarkVirtualRun100k$' -benchtime 1x -count "$RUNS" ./internal/engine/ |
		grep -E '^Benchmark' | tee "$OUT/s4.txt"
	awk '{for (i = 1; i < NF; i++) if ($(i+1) == "sim_requests/s") print $i}' "$OUT/s4.txt" | median |
		xargs printf "median: %.0f simulated requests/s"
	awk '{for (i = 1; i < NF; i++) if ($(i+1) == "sim_tokens/s") print $i}' "$OUT/s4.txt" | median |
		xargs printf ", %.0f simulated tokens/s\n"
}

# The per-token SSE write path.
scenario_sse() {
	echo; echo "== SSE write path (ns and allocations per token)"
	taskset -c "$SERVER_CPU" go test -run '^$' -bench 'BenchmarkSSEWritePerToken' -benchmem -count "$RUNS" ./internal/api/ |
		grep -E '^Benchmark'
}

# The write floor: one ~280-byte write per connection per tick on loopback,
# nothing else running (see cmd/mocker-bench floor-write).
scenario_floor() {
	local hard writers=${FLOOR_WRITERS:-1} ticks=${FLOOR_TICKS:-50} interval=${FLOOR_INTERVAL:-100ms}
	local addr=${FLOOR_ADDR:-127.0.0.1:18090} ports
	hard=$(ulimit -Hn)
	ports=$(awk '{print $2 - $1 + 1}' /proc/sys/net/ipv4/ip_local_port_range)
	echo; echo "== write floor: one 280-byte write per connection every $interval, $ticks ticks, $writers writer(s); writer on CPU $SERVER_CPU, reader on CPU $BENCH_CPU"
	local flags=(--addr "$addr" --ticks "$ticks" --interval "$interval" --warmup 5 --chunk-bytes 280)
	for want in ${FLOOR_CONNS:-1000 10000 20000}; do
		local n=$want
		if [[ $hard != unlimited ]] && ((n + 64 > hard)); then
			n=$(((hard - 64) / 100 * 100))
			echo "note: $want connections + 64 spare descriptors exceed the hard limit ulimit -Hn = $hard: measuring N = $n instead"
		fi
		((n <= ports)) || echo "warning: N = $n exceeds the $ports ephemeral ports of ip_local_port_range"
		local us=() cpu=() lag=() wlag=()
		for r in $(seq "$RUNS"); do
			local name="floor-$n-$r"
			taskset -c "$SERVER_CPU" "$BIN/mocker-bench" floor-write "${flags[@]}" --conns "$n" --writers "$writers" \
				--json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 &
			local wpid=$!
			if ! taskset -c "$BENCH_CPU" nice -n "${BENCH_NICE:-0}" "$BIN/mocker-bench" floor-read "${flags[@]}" --conns "$n" \
				>"$OUT/$name-read.txt" 2>&1; then
				cat "$OUT/$name-read.txt"; wait "$wpid" || true; cat "$OUT/$name.txt"; return 1
			fi
			wait "$wpid" || { cat "$OUT/$name.txt"; return 1; }
			us+=("$(jf "$name" .write_us_p50)"); cpu+=("$(jf "$name" .cpu_us_per_write)"); lag+=("$(jf "$name" .floor_lag_p99_ms)")
			wlag+=("$(jf "$name" .write_lag_ms_p99)")
			printf "N=%d run %d: %.3f µs/write (p10 %.3f, p90 %.3f), cpu %.3f µs/write, tick write p50 %.2f ms p99 %.2f ms, %s overrun(s), floor lag p99 %.2f ms, measured write lag p50 %.2f ms p99 %.2f ms, gomaxprocs %s\n" \
				"$n" "$r" "${us[-1]}" "$(jf "$name" .write_us_p10)" "$(jf "$name" .write_us_p90)" "${cpu[-1]}" \
				"$(jf "$name" .tick_write_ms_p50)" "$(jf "$name" .tick_write_ms_p99)" "$(jf "$name" .overrun_ticks)" \
				"${lag[-1]}" "$(jf "$name" .write_lag_ms_p50)" "${wlag[-1]}" "$(jf "$name" .gomaxprocs)"
		done
		printf "N=%d median: %.3f µs/write, cpu %.3f µs/write, floor lag p99 %.2f ms, measured write lag p99 %.2f ms\n" "$n" \
			"$(printf '%s\n' "${us[@]}" | median)" "$(printf '%s\n' "${cpu[@]}" | median)" "$(printf '%s\n' "${lag[@]}" | median)" \
			"$(printf '%s\n' "${wlag[@]}" | median)"
	done
}

case "${1:-all}" in
	throughput) scenario_throughput ;;
	paced) scenario_paced ;;
	hold) scenario_hold ;;
	hold20k) scenario_hold20k ;;
	engine) scenario_engine ;;
	sse) scenario_sse ;;
	floor) scenario_floor ;;
	all) scenario_throughput; scenario_paced; scenario_hold; scenario_engine; scenario_sse ;;
	*) echo "usage: $0 [all|throughput|paced|hold|hold20k|engine|sse|floor]"; exit 2 ;;
esac
