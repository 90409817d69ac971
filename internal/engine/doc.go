// Package engine simulates one data-parallel rank of an inference engine:
// requests wait, are admitted and preempted by a vLLM-style scheduler over a
// paged, prefix-cached KV pool (internal/kv), and each pass gets a modeled
// duration from a timing model. Core is the synchronous state machine;
// Engine drives it live on a real clock behind a mailbox, Simulator drives
// it in virtual time. Metrics and event publishers plug in through the
// Observer, KVEventSink and FPMSink interfaces defined here, so the package
// does no network or metrics I/O of its own. docs/ARCHITECTURE.md describes
// the pass loop, the KV path and how to add a scheduling policy.
package engine
