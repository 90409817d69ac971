package chartcheck

import (
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// TestChart_HelmLintIsClean runs Helm's linter (what `helm lint` runs:
// Chart.yaml, values and schema, template rendering and the rendered YAML)
// with each values case and fails on any warning or error.
func TestChart_HelmLintIsClean(t *testing.T) {
	for _, vc := range valuesCases(t) {
		t.Run(vc.name, func(t *testing.T) {
			vals, err := readValues(vc)
			if err != nil {
				t.Fatal(err)
			}
			result := lint.AllWithKubeVersion(chartDir, vals, testNamespace, &testKubeVersion)
			for _, msg := range result.Messages {
				if msg.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", msg.Error())
				} else {
					t.Logf("helm lint: %s", msg.Error())
				}
			}
		})
	}
}
