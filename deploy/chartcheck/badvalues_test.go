package chartcheck

import (
	"strings"
	"testing"
)

// TestChart_BadValuesFailToRenderWithAClearMessage checks that values the
// server or Kubernetes would reject stop `helm install` with a message that
// names the problem, instead of rendering pods that crash.
func TestChart_BadValuesFailToRenderWithAClearMessage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []string // substrings of the error
	}{
		{"negative replica count", map[string]any{"replicaCount": -1}, []string{"replicaCount", "minimum"}},
		{"unknown engine type", map[string]any{"server": map[string]any{"engineType": "tgi"}}, []string{"engineType", "vllm"}},
		{"engine type the server does not simulate yet", map[string]any{"server": map[string]any{"engineType": "sglang"}}, []string{"engineType", "trtllm"}},
		{"misspelt top-level key", map[string]any{"replicas": 3}, []string{"replicas", "not allowed"}},
		{"misspelt server key", map[string]any{"server": map[string]any{"numGPUBlocks": 10}}, []string{"numGPUBlocks", "not allowed"}},
		{"port out of range", map[string]any{"server": map[string]any{"port": 70000}}, []string{"/server/port", "maximum"}},
		{
			"data-parallel ranks collide with the replay port",
			map[string]any{"server": map[string]any{"dataParallelSize": 2}, "kvEvents": map[string]any{"enabled": true}},
			[]string{"port 5558 of kv-events-1 collides with kv-replay", "dataParallelSize 2"},
		},
		{
			"ZMQ port on the HTTP port",
			map[string]any{"fpm": map[string]any{"enabled": true, "port": 8000}},
			[]string{"port 8000 of fpm collides with http"},
		},
		{
			"inference pool without an endpoint picker",
			map[string]any{"inferencePool": map[string]any{"enabled": true}},
			[]string{"inferencePool.endpointPicker.name"},
		},
		{
			"pod label that the selector owns",
			map[string]any{"podLabels": map[string]any{"app.kubernetes.io/instance": "other"}},
			[]string{"podLabels.app.kubernetes.io/instance: the chart sets this label itself"},
		},
		{
			"service monitor without a service",
			map[string]any{"service": map[string]any{"enabled": false}, "serviceMonitor": map[string]any{"enabled": true}},
			[]string{"serviceMonitor.enabled needs service.enabled"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderChart(valuesCase{name: tc.name, release: "bad", values: tc.values})
			if err == nil {
				t.Fatalf("values %v rendered without error", tc.values)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}
