//go:build race

package routerlab

// raceEnabled: the race detector slows the live side several times over,
// so latency agreement is not checked under it (routing and hits are).
const raceEnabled = true
