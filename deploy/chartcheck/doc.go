// Package chartcheck holds the tests of the Helm chart (charts/mocker-server),
// the plain manifests (deploy/kubernetes) and the compose fleet
// (docker-compose.fleet.yml): the chart is rendered with Helm's own Go
// library, linted with Helm's linter, every rendered object is decoded
// strictly into the Kubernetes, prometheus-operator and Gateway API Inference
// Extension types, and the worker container's args are parsed by the
// server's own configuration loader.
//
// It is a separate Go module so that Helm's and Kubernetes' dependencies stay
// out of the server's go.mod; `make chart-test` (part of `make test`) runs it.
package chartcheck
