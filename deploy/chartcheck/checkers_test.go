package chartcheck

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The checks above only mean something if they can fail: these feed them
// broken objects and args and expect the failure.

func TestDecodeObjects_RejectsUnknownFieldsAndKinds(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want string
	}{
		{"misspelt Deployment field", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n", `unknown field "replica"`},
		{"misspelt container field", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers: [{name: c, arg: [serve]}]\n", `unknown field "arg"`},
		{"ServiceMonitor field of another kind", "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec: {podMetricsEndpoints: []}\n", `unknown field "podMetricsEndpoints"`},
		{"InferencePool field of v1alpha2", "apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\nmetadata: {name: x}\nspec: {targetPortNumber: 8000}\n", `unknown field "targetPortNumber"`},
		{"InferencePool extensionRef of v1alpha2", "apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\nmetadata: {name: x}\nspec: {extensionRef: {name: epp}}\n", `unknown field "extensionRef"`},
		{"duplicate key", "apiVersion: v1\nkind: Service\nmetadata: {name: x, name: y}\n", "already set"},
		{"unexpected kind", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "unexpected object v1 ConfigMap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeObjects([]string{tc.doc})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("decodeObjects error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestInferencePoolValidate_RejectsWhatTheCRDRejects(t *testing.T) {
	port := int32(70000)
	pool := InferencePool{Spec: InferencePoolSpec{
		TargetPorts:       []Port{{Number: 8000}, {Number: 8000}},
		AppProtocol:       "grpc",
		EndpointPickerRef: EndpointPickerRef{PortNumber: &port, FailureMode: "Retry"},
	}}
	pool.APIVersion, pool.Kind = "inference.networking.k8s.io/v1alpha2", "InferencePool"
	err := pool.Validate()
	for _, want := range []string{"apiVersion/kind", "matchLabels is required", "repeated", "appProtocol", "name is required", "portNumber 70000", "failureMode"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want a problem mentioning %q", err, want)
		}
	}
}

func TestServeConfig_RejectsWhatServeRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"flag vLLM does not have either", []string{"serve", "--tensor-parallel-sise=2"}, "unknown flag: --tensor-parallel-sise"},
		{"vLLM flag with a bad value", []string{"serve", "--pipeline-parallel-size=two"}, `invalid argument "two" for "--pipeline-parallel-size" flag`},
		{"P/D connector without its name", []string{"serve", `--kv-transfer-config={"kv_role":"kv_both"}`}, "kv_transfer_config.kv_connector is required"},
		{"bad enum", []string{"serve", "--engine-type=tgi"}, "--engine-type"},
		{"no serve subcommand", []string{"--port=8000"}, "serve subcommand"},
		{"positional model", []string{"serve", "mocker-model"}, "positional"},
		{"undefined variable", []string{"serve", "--worker-id=$(NODE_NAME)"}, "does not define"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := serveConfig(corev1.Container{Name: "c", Args: tc.args}, testPod)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("serveConfig(%q) error %v, want one mentioning %q", tc.args, err, tc.want)
			}
		})
	}
}

func TestExpandKubernetes_FollowsTheKubeletRules(t *testing.T) {
	env := map[string]string{"POD_IP": "10.1.2.3", "MODEL": "m"}
	for _, tc := range []struct{ in, want string }{
		{"kv@$(POD_IP)@$(MODEL)", "kv@10.1.2.3@m"},
		{"$$(POD_IP)", "$(POD_IP)"},
		{"$(UNDEFINED)", "$(UNDEFINED)"},
		{"cost $5", "cost $5"},
		{"$(POD_IP", "$(POD_IP"},
		{"trailing $", "trailing $"},
	} {
		if got := expandKubernetes(tc.in, env); got != tc.want {
			t.Errorf("expandKubernetes(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
