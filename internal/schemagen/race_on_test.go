//go:build race

package schemagen

// timeScale stretches the wall-clock bounds of the budget tests under the
// race detector, which slows this code about tenfold.
const timeScale = 10
