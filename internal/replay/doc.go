// Package replay runs a workload through a fleet of simulated engines in
// virtual time and reports what the fleet did: latencies per request and in
// summary, prefix-cache hits, preemptions and per-worker load over time.
//
// A workload is a Source of requests in arrival order: a Mooncake JSONL trace
// (MooncakeSource) or a synthetic generator (Synthetic). Run routes each
// arrival to one target (a DP rank of a worker) with a Router and drives one
// engine.Core per target on a single virtual clock, jumping from event to
// event: the next arrival or the earliest end of a pass. Nothing sleeps, so a
// run costs only the engine's own work. The kv_aware router learns what each
// target caches only from the KV event records the engines publish, as a real
// KV router would from ZMQ.
//
// The same workload, fleet and seed always give the same report.
package replay
