// Package kv is the KV cache of one DP rank, without requests or time: the
// paged block pool (reference counts, an O(1) LRU free list with leaf-first
// eviction, an index from sequence hash to resident blocks), the block
// hashes that identify cached prefixes, and the engine-neutral KV event
// records the pool produces. The engine's KV manager drives it; see
// docs/ARCHITECTURE.md for the path from scheduler to pool,
// docs/kv-hashing.md for the hashes and docs/kv-events.md for the events.
package kv
