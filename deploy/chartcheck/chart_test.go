package chartcheck

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// extraCases are value sets beyond the defaults and the examples that the
// structural and args checks must also hold for.
//
// Their values are YAML text, read the way `helm install -f` reads a file
// (numbers become float64), so that the chart's number formatting is
// exercised as it is in real use.
var extraCases = []valuesCase{
	{
		// Three data-parallel ranks: every ZMQ port exists once per rank.
		name: "data-parallel-zmq", release: "dp",
		values: yamlValues(`
server: {dataParallelSize: 3, startupTime: 12.5}
kvEvents: {enabled: true, port: 5557, replayPort: 5600, topic: "kv@$(POD_IP)@mocker-model"}
fpm: {enabled: true, port: 5700}
`),
	},
	{
		// Every structured server value set at once.
		name: "all-server-values", release: "all",
		values: yamlValues(`
server:
  model: Qwen/Qwen3-8B
  servedModelName: [qwen3, qwen3-8b]
  port: 9000
  engineType: trtllm
  blockSize: 16
  numGpuBlocks: 1000000
  maxModelLen: 32k
  maxNumSeqs: 512
  maxNumBatchedTokens: 16K
  enablePrefixCaching: false
  prefixCachingHashAlgo: sha256_cbor
  seed: 7
  metricsFamily: both
  logLevel: debug
  timing: {model: fixed, speedupRatio: inf, decodeSpeedupRatio: 2.5, fixedPrefillMs: 0.5, fixedDecodeMs: 12}
  apiKeySecret: {name: mocker-api-key}
service: {port: 80}
`),
	},
}

// yamlValues reads values from YAML text as Helm reads a values file.
func yamlValues(text string) map[string]any {
	vals, err := chartutil.ReadValues([]byte(text))
	if err != nil {
		panic(fmt.Sprintf("values %q: %v", text, err))
	}
	return vals
}

func allCases(t *testing.T) []valuesCase {
	return append(valuesCases(t), extraCases...)
}

func TestChart_RendersStrictlyDecodableObjects(t *testing.T) {
	for _, vc := range allCases(t) {
		t.Run(vc.name, func(t *testing.T) {
			objs := renderObjects(t, vc)
			if len(objs.deployments) != 1 {
				t.Fatalf("%d Deployments, want 1", len(objs.deployments))
			}
			checkDeployment(t, objs)
			checkServices(t, objs)
			checkMonitors(t, objs)
		})
	}
}

func TestChart_MonitorsAreOffByDefaultAndRenderWhenEnabled(t *testing.T) {
	off := renderObjects(t, valuesCase{name: "defaults", release: "mocker-server"})
	if len(off.serviceMonitors)+len(off.podMonitors)+len(off.inferencePools) != 0 {
		t.Errorf("defaults render %d ServiceMonitors, %d PodMonitors, %d InferencePools; want none",
			len(off.serviceMonitors), len(off.podMonitors), len(off.inferencePools))
	}
	on := renderObjects(t, valuesCase{name: "monitors", release: "mocker-server", values: monitorsOn})
	if len(on.serviceMonitors) != 1 || len(on.podMonitors) != 1 {
		t.Errorf("monitors on: %d ServiceMonitors, %d PodMonitors; want 1 each", len(on.serviceMonitors), len(on.podMonitors))
	}
}

// checkDeployment checks what Kubernetes would refuse or what the chart
// promises: valid names, a selector that matches the pod template, unique
// valid port names, probes on /health, and the hardened security context.
func checkDeployment(t *testing.T, objs *objects) {
	t.Helper()
	d := objs.deployments[0]
	for _, msg := range validation.IsDNS1123Subdomain(d.Name) {
		t.Errorf("Deployment name %q: %s", d.Name, msg)
	}
	if !selects(t, d.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("Deployment selector %v does not match its pod labels %v", d.Spec.Selector, d.Spec.Template.Labels)
	}
	for key, value := range d.Spec.Template.Labels {
		for _, msg := range validation.IsQualifiedName(key) {
			t.Errorf("pod label key %q: %s", key, msg)
		}
		for _, msg := range validation.IsValidLabelValue(value) {
			t.Errorf("pod label %s=%q: %s", key, value, msg)
		}
	}
	pod := d.Spec.Template.Spec
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Error("pod securityContext.runAsNonRoot is not true")
	}
	if pod.SecurityContext == nil || pod.SecurityContext.SeccompProfile == nil ||
		pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod seccompProfile is not RuntimeDefault")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Error("container has no securityContext")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("container readOnlyRootFilesystem is not true")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("container allowPrivilegeEscalation is not false")
	case sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL":
		t.Errorf("container capabilities drop %v, want [ALL]", sc.Capabilities)
	}
	names, numbers := map[string]bool{}, map[int32]bool{}
	for _, p := range c.Ports {
		for _, msg := range validation.IsValidPortName(p.Name) {
			t.Errorf("container port name %q: %s", p.Name, msg)
		}
		if names[p.Name] || numbers[p.ContainerPort] {
			t.Errorf("container port %s/%d repeated", p.Name, p.ContainerPort)
		}
		names[p.Name], numbers[p.ContainerPort] = true, true
	}
	for kind, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != "/health" {
			t.Errorf("%s probe %+v does not GET /health", kind, probe)
		}
	}
}

// checkServices checks that every Service selects the worker pods and
// targets container ports that exist.
func checkServices(t *testing.T, objs *objects) {
	t.Helper()
	d := objs.deployments[0]
	c := d.Spec.Template.Spec.Containers[0]
	for _, svc := range objs.services {
		if !selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, d.Spec.Template.Labels) {
			t.Errorf("Service %s selector %v does not match the pods", svc.Name, svc.Spec.Selector)
		}
		for _, sp := range svc.Spec.Ports {
			if _, ok := containerPort(c, sp.TargetPort); !ok {
				t.Errorf("Service %s port %s targets %s, which the container does not have", svc.Name, sp.Name, sp.TargetPort.String())
			}
			if sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal != sp.Name {
				t.Errorf("Service %s port %s targets container port %s", svc.Name, sp.Name, sp.TargetPort.StrVal)
			}
		}
	}
}

// checkMonitors checks that the monitors select the Service / pods and
// scrape /metrics on the HTTP port.
func checkMonitors(t *testing.T, objs *objects) {
	t.Helper()
	d := objs.deployments[0]
	for _, sm := range objs.serviceMonitors {
		if len(objs.services) != 1 {
			t.Fatalf("ServiceMonitor without exactly one Service (%d)", len(objs.services))
		}
		svc := objs.services[0]
		if !selects(t, &sm.Spec.Selector, svc.Labels) {
			t.Errorf("ServiceMonitor selector %v does not match Service labels %v", sm.Spec.Selector, svc.Labels)
		}
		for _, ep := range sm.Spec.Endpoints {
			if ep.Port != "http" || ep.Path != "/metrics" {
				t.Errorf("ServiceMonitor endpoint %s%s, want port http path /metrics", ep.Port, ep.Path)
			}
		}
	}
	for _, pm := range objs.podMonitors {
		if !selects(t, &pm.Spec.Selector, d.Spec.Template.Labels) {
			t.Errorf("PodMonitor selector %v does not match the pods", pm.Spec.Selector)
		}
		for _, ep := range pm.Spec.PodMetricsEndpoints {
			if ep.Port == nil || *ep.Port != "http" || ep.Path != "/metrics" {
				t.Errorf("PodMonitor endpoint %v%s, want port http path /metrics", ep.Port, ep.Path)
			}
		}
	}
}

func TestChart_WorkerArgsAreAcceptedByServe(t *testing.T) {
	for _, vc := range allCases(t) {
		t.Run(vc.name, func(t *testing.T) {
			objs := renderObjects(t, vc)
			for _, d := range objs.deployments {
				c := d.Spec.Template.Spec.Containers[0]
				cfg, warnings, err := serveConfig(c, testPod)
				if err != nil {
					t.Fatalf("args %q: %v", c.Args, err)
				}
				if len(warnings) > 0 {
					t.Errorf("args %q: startup warnings %q", c.Args, warnings)
				}
				checkPorts(t, c, cfg)
				for _, pool := range objs.inferencePools {
					if err := pool.Validate(); err != nil {
						t.Errorf("InferencePool %s: %v", pool.Name, err)
					}
					if got := pool.Spec.TargetPorts[0].Number; int(got) != cfg.Port {
						t.Errorf("InferencePool target port %d, server port %d", got, cfg.Port)
					}
					if !selects(t, &metav1.LabelSelector{MatchLabels: pool.Spec.Selector.MatchLabels}, d.Spec.Template.Labels) {
						t.Errorf("InferencePool selector %v does not match the pods %v", pool.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
					}
				}
			}
		})
	}
}

// checkPorts checks the container's ports and probes against the loaded
// server configuration: the "http" port is the server's port, the probes hit
// it, the startup probe outlasts --startup-time, and every ZMQ socket binds
// every interface on the port of the container port named after it (rank r
// on port + r).
func checkPorts(t *testing.T, c corev1.Container, cfg *config.Config) {
	t.Helper()
	httpPort, ok := containerPort(c, intstr.FromString("http"))
	if !ok || httpPort != cfg.Port {
		t.Errorf("container port http = %d (found %v), server port %d", httpPort, ok, cfg.Port)
	}
	switch cfg.Host {
	case "0.0.0.0", "::":
	default:
		t.Errorf("server host %q does not listen on the pod's interfaces", cfg.Host)
	}
	for kind, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if port, ok := containerPort(c, probe.HTTPGet.Port); !ok || port != cfg.Port {
			t.Errorf("%s probe port %s = %d, server port %d", kind, probe.HTTPGet.Port.String(), port, cfg.Port)
		}
	}
	budget := float64(c.StartupProbe.PeriodSeconds * c.StartupProbe.FailureThreshold)
	if budget <= cfg.StartupTime {
		t.Errorf("startup probe budget %.0f s does not cover --startup-time %g s", budget, cfg.StartupTime)
	}

	want := map[string]int{} // container port name -> port the server binds
	if k := cfg.KVEventsConfig; k != nil && k.EnableKVCacheEvents {
		addRankPorts(t, want, "kv-events", k.Endpoint, cfg.DPSize)
		if k.ReplayEndpoint != nil {
			addRankPorts(t, want, "kv-replay", *k.ReplayEndpoint, cfg.DPSize)
		}
		if strings.Contains(k.Topic, "$(") {
			t.Errorf("KV event topic %q was not expanded", k.Topic)
		}
	}
	if cfg.FPMEndpoint != "" {
		addRankPorts(t, want, "fpm", cfg.FPMEndpoint, cfg.DPSize)
	}
	for _, p := range c.Ports {
		if p.Name == "http" {
			continue
		}
		if port, ok := want[p.Name]; !ok || int32(port) != p.ContainerPort {
			t.Errorf("container port %s/%d: the server binds %d (configured %v)", p.Name, p.ContainerPort, port, ok)
		}
		delete(want, p.Name)
	}
	for name, port := range want {
		t.Errorf("the server binds %s on %d, but the container declares no port %s", name, port, name)
	}
}

// addRankPorts records the port every data-parallel rank binds for a
// tcp://*:<port> endpoint under the container port names name, name-1, ...
func addRankPorts(t *testing.T, want map[string]int, name, endpoint string, dpSize int) {
	t.Helper()
	var port int
	if _, err := fmt.Sscanf(endpoint, "tcp://*:%d", &port); err != nil || endpoint != fmt.Sprintf("tcp://*:%d", port) {
		t.Errorf("%s endpoint %q does not bind every interface (want tcp://*:<port>)", name, endpoint)
		return
	}
	for rank := range dpSize {
		key := name
		if rank > 0 {
			key = fmt.Sprintf("%s-%d", name, rank)
		}
		want[key] = port + rank
	}
}

// containerPort resolves a named or numbered port of a container.
func containerPort(c corev1.Container, port intstr.IntOrString) (int, bool) {
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return int(p.ContainerPort), true
		}
	}
	return 0, false
}

// selects reports whether a label selector matches a label set.
func selects(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return false // an empty selector would select everything
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Errorf("selector %v: %v", sel, err)
		return false
	}
	return s.Matches(labels.Set(set))
}

func TestChart_StartupProbeCoversStartupTime(t *testing.T) {
	for _, tc := range []struct {
		name        string
		startupTime any     // the value; nil = unset
		wantServer  float64 // the server's --startup-time
		wantBudget  int32   // periodSeconds (2) x failureThreshold
	}{
		{"no startup time", nil, 0, 2 * 15},
		{"fractional seconds round up", 7.5, 7.5, 2 * (4 + 15)},
		{"one minute", 60, 60, 2 * (30 + 15)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderObjects(t, valuesCase{name: tc.name, release: "startup", values: map[string]any{
				"server": map[string]any{"startupTime": tc.startupTime},
			}})
			c := objs.deployments[0].Spec.Template.Spec.Containers[0]
			if got := c.StartupProbe.PeriodSeconds * c.StartupProbe.FailureThreshold; got != tc.wantBudget {
				t.Errorf("startup probe budget %d s, want %d s", got, tc.wantBudget)
			}
			cfg, _, err := serveConfig(c, testPod)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.StartupTime != tc.wantServer {
				t.Errorf("server startup time %g, want %g", cfg.StartupTime, tc.wantServer)
			}
		})
	}
}

// TestChart_StructuredValuesReachTheServer checks that every structured
// server value becomes the server setting it names.
func TestChart_StructuredValuesReachTheServer(t *testing.T) {
	objs := renderObjects(t, extraCases[1])
	cfg, _, err := serveConfig(objs.deployments[0].Spec.Template.Spec.Containers[0], testPod)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		setting   string
		got, want any
	}{
		{"model", cfg.Model, "Qwen/Qwen3-8B"},
		{"served_model_name", strings.Join(cfg.ServedModelName, ","), "qwen3,qwen3-8b"},
		{"port", cfg.Port, 9000},
		{"engine_type", cfg.EngineType, engine.EngineTRTLLM},
		{"block_size", cfg.BlockSize, 16},
		{"num_gpu_blocks", cfg.NumGPUBlocks, 1000000},
		{"max_model_len", cfg.MaxModelLen, 32000},
		{"max_num_seqs", cfg.MaxNumSeqs, 512},
		{"max_num_batched_tokens", cfg.MaxNumBatchedTokens, 16384},
		{"enable_prefix_caching", cfg.EnablePrefixCaching, false},
		{"prefix_caching_hash_algo", cfg.PrefixCachingHashAlgo, config.HashAlgo("sha256_cbor")},
		{"seed", cfg.Seed, int64(7)},
		{"metrics_family", cfg.MetricsFamily, config.MetricsFamily("both")},
		{"log_level", cfg.LogLevel, config.LogLevel("debug")},
		{"timing_model", cfg.TimingModel, engine.TimingFixed},
		{"speedup_ratio", math.IsInf(cfg.SpeedupRatio, 1), true},
		{"decode_speedup_ratio", cfg.DecodeSpeedupRatio, 2.5},
		{"fixed_prefill_ms", cfg.FixedPrefillMs, 0.5},
		{"fixed_decode_ms", cfg.FixedDecodeMs, 12.0},
		{"api_key (from the Secret)", strings.Join(cfg.APIKey, ","), testPod.secret},
		{"worker_id (pod name)", cfg.WorkerID, testPod.name + ":9000"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.setting, tc.got, tc.want)
		}
	}
}
