// Package calibrate measures a live OpenAI-compatible endpoint with a
// designed set of streamed /v1/completions experiments and fits the mock's
// interpolated timing profile to them *through* the engine: every candidate
// profile is run in the engine's virtual-time Simulator on the same requests,
// sent at the same instants, and the profile is adjusted (Gauss-Newton on the
// pass durations the simulator attributes to each measured interval) until
// the simulated TTFTs and inter-token gaps match the measured ones.
//
// The package does no flag parsing and writes no files itself: the command
// (cmd/mocker-server, calibrate.go) builds Options, calls Run and writes the
// profile and reports. See docs/calibration.md.
package calibrate
