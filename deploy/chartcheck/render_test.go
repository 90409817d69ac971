package chartcheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// chartDir is the chart under test, relative to this package.
const chartDir = "../../charts/mocker-server"

// testNamespace is the namespace every test release is rendered into.
const testNamespace = "mocker"

// testKubeVersion is the cluster version the chart is rendered for. Helm's
// library defaults to v1.20 unless its build stamps the client-go version,
// which a plain `go test` does not; a real install uses the cluster's.
var testKubeVersion = chartutil.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"}

// valuesCase is one way of installing the chart: a release name, values
// files (relative to the chart) and values on top of them.
type valuesCase struct {
	name    string
	release string
	files   []string
	values  map[string]any
}

// monitorsOn enables both prometheus-operator monitors.
var monitorsOn = map[string]any{
	"serviceMonitor": map[string]any{"enabled": true},
	"podMonitor":     map[string]any{"enabled": true},
}

// valuesCases lists the default values, the defaults with the monitors on,
// and every example values file (found by glob, so a new example is tested
// without touching this list).
func valuesCases(t *testing.T) []valuesCase {
	t.Helper()
	cases := []valuesCase{
		{name: "defaults", release: "mocker-server"},
		{name: "monitors", release: "mocker-server", values: monitorsOn},
	}
	examples, err := filepath.Glob(filepath.Join(chartDir, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) == 0 {
		t.Fatalf("no example values files in %s/examples", chartDir)
	}
	for _, file := range examples {
		base := strings.TrimSuffix(filepath.Base(file), ".yaml")
		cases = append(cases, valuesCase{
			name:    "examples/" + base,
			release: base,
			files:   []string{filepath.Join("examples", filepath.Base(file))},
		})
	}
	return cases
}

// readValues merges a case's values files and values, later ones winning.
func readValues(vc valuesCase) (map[string]any, error) {
	merged := map[string]any{}
	for _, file := range vc.files {
		vals, err := chartutil.ReadValuesFile(filepath.Join(chartDir, file))
		if err != nil {
			return nil, fmt.Errorf("read values %s: %w", file, err)
		}
		merged = mergeValues(merged, vals)
	}
	return mergeValues(merged, vc.values), nil
}

// mergeValues merges src over dst the way repeated -f flags do: maps merge
// key by key, anything else replaces.
func mergeValues(dst, src map[string]any) map[string]any {
	out := maps.Clone(dst)
	for key, value := range src {
		srcMap, srcIsMap := value.(map[string]any)
		dstMap, dstIsMap := out[key].(map[string]any)
		if srcIsMap && dstIsMap {
			out[key] = mergeValues(dstMap, srcMap)
			continue
		}
		out[key] = value
	}
	return out
}

// loadChart loads the chart directory as `helm install` does.
func loadChart() (*chart.Chart, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	return chrt, nil
}

// renderChart renders the chart the way `helm install --dry-run` does
// without a cluster: values coalesced with the chart's defaults and checked
// against values.schema.json, the chart's kubeVersion checked against the
// default capabilities, then every template executed. It returns the
// rendered files keyed by template path.
func renderChart(vc valuesCase) (map[string]string, error) {
	chrt, err := loadChart()
	if err != nil {
		return nil, err
	}
	vals, err := readValues(vc)
	if err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = testKubeVersion
	if !chartutil.IsCompatibleRange(chrt.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion %s, capabilities have %s", chrt.Metadata.KubeVersion, caps.KubeVersion)
	}
	renderVals, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{
		Name: vc.release, Namespace: testNamespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	files, err := engine.Render(chrt, renderVals)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	return files, nil
}

// manifestDocs returns the YAML documents of the rendered manifests in
// template-path order, without NOTES.txt, partials and empty documents.
func manifestDocs(files map[string]string) ([]string, error) {
	var docs []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		base := path.Base(name)
		if base == "NOTES.txt" || strings.HasPrefix(base, "_") {
			continue
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(files[name])))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if isEmptyYAML(doc) {
				continue
			}
			docs = append(docs, strings.TrimLeft(string(doc), "\n"))
		}
	}
	return docs, nil
}

// isEmptyYAML reports whether a document holds only blank lines, comments
// and document markers.
func isEmptyYAML(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && line != "---" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}

// objects holds the rendered objects of one release, decoded strictly.
type objects struct {
	deployments     []*appsv1.Deployment
	services        []*corev1.Service
	serviceMonitors []*monitoringv1.ServiceMonitor
	podMonitors     []*monitoringv1.PodMonitor
	inferencePools  []*InferencePool
}

// decodeObjects decodes every document strictly into its Go type, chosen by
// apiVersion and kind: YAML to JSON with duplicate keys rejected, then JSON
// with unknown fields rejected. A kind the chart is not expected to render
// is an error too.
func decodeObjects(docs []string) (*objects, error) {
	var out objects
	for i, doc := range docs {
		raw, err := sigsyaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			err = decodeAppend(raw, &out.deployments)
		case "v1 Service":
			err = decodeAppend(raw, &out.services)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			err = decodeAppend(raw, &out.serviceMonitors)
		case "monitoring.coreos.com/v1 PodMonitor":
			err = decodeAppend(raw, &out.podMonitors)
		case "inference.networking.k8s.io/v1 InferencePool":
			err = decodeAppend(raw, &out.inferencePools)
		default:
			return nil, fmt.Errorf("document %d: unexpected object %s %s", i, head.APIVersion, head.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("document %d (%s %s): %w", i, head.APIVersion, head.Kind, err)
		}
	}
	return &out, nil
}

// decodeAppend decodes one object strictly and appends it to list.
func decodeAppend[T any](raw []byte, list *[]*T) error {
	obj := new(T)
	if err := decodeStrict(raw, obj); err != nil {
		return err
	}
	*list = append(*list, obj)
	return nil
}

// decodeStrict decodes exactly one JSON value into target, rejecting
// unknown fields and trailing data.
func decodeStrict(raw []byte, target any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(target); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the object")
	}
	return nil
}

// renderObjects renders a values case and decodes its objects strictly.
func renderObjects(t *testing.T, vc valuesCase) *objects {
	t.Helper()
	files, err := renderChart(vc)
	if err != nil {
		t.Fatalf("render %s: %v", vc.name, err)
	}
	docs, err := manifestDocs(files)
	if err != nil {
		t.Fatalf("split %s: %v", vc.name, err)
	}
	objs, err := decodeObjects(docs)
	if err != nil {
		t.Fatalf("decode %s: %v", vc.name, err)
	}
	return objs
}
