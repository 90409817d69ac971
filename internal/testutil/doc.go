// Package testutil holds what the test files of several packages share:
// bounded polling (WaitFor, WaitUntil), loopback listeners and ZMQ endpoints
// whose ports the kernel chooses (Listen, BindZMQ), a retry loop for the
// few configurations that need runs of consecutive ports (WithPortRuns),
// the test side of ZMQ (NewZMQSub, NewZMQSocket), Prometheus scrapes
// (Scrape), golden files (Golden) and the external references (Python,
// npm packages). Test configurations are in the sub-package testcfg.
//
// It is imported only from _test.go files.
//
// Ports are never picked and released for a server to take later when that
// can be avoided: a listener or socket bound to port 0 (ZMQ: "*") keeps its
// port, and the test reads the bound address back from it. A port picked
// and released can be taken by anyone in between — on a machine shared with
// load tests, the kernel hands ephemeral ports to their client connections
// all the time.
package testutil
