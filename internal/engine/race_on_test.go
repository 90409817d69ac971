//go:build race

package engine

// raceSlowdown is how many times slower the race detector makes the
// engine's hot paths; the complexity guards of cancel_test.go scale their
// limits by it.
const raceSlowdown = 10
