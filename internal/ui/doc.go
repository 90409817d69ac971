// Package ui is the live browser view of a running server: a Hub per worker
// that implements engine.Inspector and keeps what the pages show (the KV
// pool, the queues, recent passes, latency percentiles, a bounded ring of
// recent requests with their timelines), and the HTTP handlers that serve
// the embedded pages and one coalesced SSE stream per viewer. See
// docs/ui.md.
//
// The engine never waits for a viewer: the Hub's per-pass work does not
// depend on how many viewers there are, and each viewer pulls encoded
// snapshots at its own pace (at most MaxRate per second). A viewer whose
// connection stops draining is dropped after Options.StallTimeout.
package ui
