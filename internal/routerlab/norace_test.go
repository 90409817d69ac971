//go:build !race

package routerlab

const raceEnabled = false
