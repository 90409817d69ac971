// Package routerlab measures a router that sits in front of a fleet of
// simulated workers: it drives a workload (a Mooncake trace or replay's
// synthetic generator, with replay's prompt construction) through the
// router's OpenAI-compatible URL in real time, attributes every response to
// the worker that served it by the x-mocker-worker header the workers stamp
// (never by asking the router), samples the workers' load through the
// fleet's admin API, applies a scripted schedule of admin actions, and
// scores the router against offline replays of the very same requests on
// the identical fleet with each built-in routing policy (internal/replay),
// plus a clairvoyant bound on prefix-cache hits.
//
// The driver is the package's only clock user; the offline side is
// replay's virtual time and deterministic.
package routerlab
