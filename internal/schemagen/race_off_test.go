//go:build !race

package schemagen

// timeScale stretches the wall-clock bounds of the budget tests under the
// race detector (see race_on_test.go).
const timeScale = 1
