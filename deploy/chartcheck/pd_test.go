package chartcheck

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mocker-server/mocker-server/internal/config"
)

// TestExamples_PrefillDecodePairIsOnePoolWithTwoRoles installs the two
// halves of the P/D example as two releases and checks the llm-d layout:
// one Deployment per role, labelled llm-d.ai/role, and the decode release's
// InferencePool selecting the pods of both. Both roles start with vLLM's
// NixlConnector in kv_both, as llm-d starts them.
func TestExamples_PrefillDecodePairIsOnePoolWithTwoRoles(t *testing.T) {
	prefill := renderObjects(t, valuesCase{name: "pd-prefill", release: "pd-prefill", files: []string{"examples/pd-prefill.yaml"}})
	decode := renderObjects(t, valuesCase{name: "pd-decode", release: "pd-decode", files: []string{"examples/pd-decode.yaml"}})

	var pools []*InferencePool
	pools = append(pools, prefill.inferencePools...)
	pools = append(pools, decode.inferencePools...)
	if len(pools) != 1 {
		t.Fatalf("%d InferencePools across both releases, want 1", len(pools))
	}
	pool := pools[0]
	for _, half := range []struct {
		objs *objects
		role string
	}{{prefill, "prefill"}, {decode, "decode"}} {
		if len(half.objs.deployments) != 1 {
			t.Fatalf("%s: %d Deployments, want 1", half.role, len(half.objs.deployments))
		}
		d := half.objs.deployments[0]
		podLabels := d.Spec.Template.Labels
		if got := podLabels["llm-d.ai/role"]; got != half.role {
			t.Errorf("%s pods: llm-d.ai/role=%q", half.role, got)
		}
		if !selects(t, &metav1.LabelSelector{MatchLabels: pool.Spec.Selector.MatchLabels}, podLabels) {
			t.Errorf("pool selector %v misses the %s pods %v", pool.Spec.Selector.MatchLabels, half.role, podLabels)
		}
		cfg, _, err := serveConfig(d.Spec.Template.Spec.Containers[0], testPod)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.KVTransferConfig == nil || cfg.KVTransferConfig.KVConnector != "NixlConnector" ||
			!cfg.ServesPrefill() || !cfg.ServesDecode() || cfg.WorkerType != config.WorkerAggregated {
			t.Errorf("%s pods: kv_transfer_config %+v, worker type %q; want NixlConnector kv_both as llm-d starts vLLM",
				half.role, cfg.KVTransferConfig, cfg.WorkerType)
		}
	}
	if p, d := prefill.deployments[0].Name, decode.deployments[0].Name; p == d {
		t.Errorf("both roles render Deployment %q", p)
	}
}
