package chartcheck

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Gateway API Inference Extension's Go module is not available from the
// module proxy, so these are the documented fields of its
// inference.networking.k8s.io/v1 InferencePool that the chart writes, with
// the documented JSON names. Decoding with unknown fields rejected makes a
// misspelt or invented field fail the tests.

// InferencePool is a pool of model-server pods behind an endpoint picker.
type InferencePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              InferencePoolSpec `json:"spec"`
}

// InferencePoolSpec selects the member pods and names their port and the
// endpoint picker.
type InferencePoolSpec struct {
	// Selector matches pod labels in the pool's namespace (matchLabels only).
	Selector LabelSelector `json:"selector"`
	// TargetPorts are the member pods' serving ports (1 to 8, unique).
	TargetPorts []Port `json:"targetPorts"`
	// AppProtocol is "http" (the default) or "kubernetes.io/h2c".
	AppProtocol string `json:"appProtocol,omitempty"`
	// EndpointPickerRef names the endpoint picker extension.
	EndpointPickerRef EndpointPickerRef `json:"endpointPickerRef"`
}

// LabelSelector is the pool's simplified selector: matchLabels only.
type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// Port is one serving port of the member pods.
type Port struct {
	Number int32 `json:"number"`
}

// EndpointPickerRef refers to the endpoint picker's Service.
type EndpointPickerRef struct {
	// Group is "" (the core group) by default.
	Group *string `json:"group,omitempty"`
	// Kind is "Service" by default.
	Kind string `json:"kind,omitempty"`
	// Name is required.
	Name string `json:"name"`
	// PortNumber defaults to 9002 for a Service.
	PortNumber *int32 `json:"portNumber,omitempty"`
	// FailureMode is FailOpen or FailClose (the default).
	FailureMode EndpointPickerFailureMode `json:"failureMode,omitempty"`
}

// EndpointPickerFailureMode says what the gateway does when the endpoint
// picker does not answer.
type EndpointPickerFailureMode string

// The documented failure modes.
const (
	EndpointPickerFailOpen  EndpointPickerFailureMode = "FailOpen"
	EndpointPickerFailClose EndpointPickerFailureMode = "FailClose"
)

// Validate applies the documented CRD validation of the fields above, which
// the API server would enforce and a JSON decoder does not.
func (p *InferencePool) Validate() error {
	var problems []error
	if p.APIVersion != "inference.networking.k8s.io/v1" || p.Kind != "InferencePool" {
		problems = append(problems, fmt.Errorf("apiVersion/kind %s/%s, want inference.networking.k8s.io/v1 InferencePool", p.APIVersion, p.Kind))
	}
	if len(p.Spec.Selector.MatchLabels) == 0 {
		problems = append(problems, errors.New("spec.selector.matchLabels is required"))
	}
	if n := len(p.Spec.TargetPorts); n < 1 || n > 8 {
		problems = append(problems, fmt.Errorf("spec.targetPorts has %d entries, want 1 to 8", n))
	}
	seen := map[int32]bool{}
	for i, port := range p.Spec.TargetPorts {
		if port.Number < 1 || port.Number > 65535 {
			problems = append(problems, fmt.Errorf("spec.targetPorts[%d].number %d is out of range", i, port.Number))
		}
		if seen[port.Number] {
			problems = append(problems, fmt.Errorf("spec.targetPorts[%d].number %d is repeated", i, port.Number))
		}
		seen[port.Number] = true
	}
	switch p.Spec.AppProtocol {
	case "", "http", "kubernetes.io/h2c":
	default:
		problems = append(problems, fmt.Errorf("spec.appProtocol %q is not http or kubernetes.io/h2c", p.Spec.AppProtocol))
	}
	ref := p.Spec.EndpointPickerRef
	if ref.Name == "" {
		problems = append(problems, errors.New("spec.endpointPickerRef.name is required"))
	}
	if ref.Kind != "" && ref.Kind != "Service" {
		problems = append(problems, fmt.Errorf("spec.endpointPickerRef.kind %q: this chart refers to Services only", ref.Kind))
	}
	if ref.PortNumber != nil && (*ref.PortNumber < 1 || *ref.PortNumber > 65535) {
		problems = append(problems, fmt.Errorf("spec.endpointPickerRef.portNumber %d is out of range", *ref.PortNumber))
	}
	switch ref.FailureMode {
	case "", EndpointPickerFailOpen, EndpointPickerFailClose:
	default:
		problems = append(problems, fmt.Errorf("spec.endpointPickerRef.failureMode %q is not FailOpen or FailClose", ref.FailureMode))
	}
	return errors.Join(problems...)
}
