package chartcheck

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite deploy/kubernetes from a fresh render of the chart")

// manifestsDir holds the plain manifests, relative to this package.
const manifestsDir = "../kubernetes"

// plainManifests lists the files of deploy/kubernetes and how each is
// rendered: the chart with its default values (release "mocker-server"),
// keeping only some kinds.
var plainManifests = []struct {
	file   string
	values map[string]any
	kinds  []string // object kinds kept, in this order
	what   string   // the header's description
}{
	{
		file:  "mocker-server.yaml",
		kinds: []string{"Deployment", "Service"},
		what:  "mocker-server workers (Deployment) and their Service",
	},
	{
		file:   "servicemonitor.yaml",
		values: map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
		kinds:  []string{"ServiceMonitor"},
		what:   "Optional: a prometheus-operator ServiceMonitor that scrapes the workers' /metrics",
	},
}

// TestPlainManifests_MatchAFreshRenderOfTheChart keeps deploy/kubernetes
// equal to the chart rendered with its defaults, so the plain manifests
// never drift from the chart. `make manifests` rewrites them.
func TestPlainManifests_MatchAFreshRenderOfTheChart(t *testing.T) {
	for _, pm := range plainManifests {
		t.Run(pm.file, func(t *testing.T) {
			files, err := renderChart(valuesCase{name: pm.file, release: "mocker-server", values: pm.values})
			if err != nil {
				t.Fatal(err)
			}
			docs, err := manifestDocs(files)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			b.WriteString("# " + pm.what + ".\n")
			b.WriteString("# Generated from charts/mocker-server with its default values (release name\n")
			b.WriteString("# mocker-server) by `make manifests`; do not edit: a test fails when this file\n")
			b.WriteString("# differs from a fresh render. Apply with kubectl apply -n <namespace> -f <file>.\n")
			for _, kind := range pm.kinds {
				found := false
				for _, doc := range docs {
					if strings.Contains(doc, "\nkind: "+kind+"\n") {
						b.WriteString("---\n" + strings.TrimPrefix(doc, "---\n"))
						found = true
					}
				}
				if !found {
					t.Fatalf("the render has no %s", kind)
				}
			}
			want := b.String()
			path := filepath.Join(manifestsDir, pm.file)
			if *update {
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run `make manifests`)", err)
			}
			if string(got) != want {
				t.Errorf("%s differs from a fresh render of the chart; run `make manifests`.\n--- fresh render:\n%s", path, want)
			}
			// The committed file must itself decode strictly.
			fileDocs, err := manifestDocs(map[string]string{pm.file: string(got)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := decodeObjects(fileDocs); err != nil {
				t.Errorf("%s: %v", path, err)
			}
		})
	}
}
