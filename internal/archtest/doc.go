// Package archtest holds the tests that keep the documentation true to the
// code: docs/ARCHITECTURE.md's package table against the import graph that
// `go list` reports, and docs/scenarios.md against the scenario ids the
// tests use. It has no code of its own; its tests run in `go test ./...`.
package archtest
