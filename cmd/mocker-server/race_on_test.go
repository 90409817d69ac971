//go:build race

package main

// raceEnabled: the race detector slows everything several times, so
// millisecond timing checks only log (make check-pd-timing runs them
// without it).
const raceEnabled = true
