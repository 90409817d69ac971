package config

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// vLLM's `--config config.yaml` is a YAML file whose keys are `vllm serve`
// argument names (gpu_memory_utilization: 0.9, tensor-parallel-size: 2),
// each meaning what `--name value` means on the command line. The
// project's own format has the keys of Config instead. A --config file is
// read as vLLM's when one of its top-level keys (dashes read as
// underscores) is not a key of the project's format but is the name of a
// serve flag: the mock's own (num-gpu-blocks-override, disaggregation-mode)
// or one of vLLM's (tensor-parallel-size). Otherwise it is the project's
// format, whose unknown keys get a suggestion. Documented in
// docs/vllm-flags.md.

// projectKeys are the top-level keys of the project's format.
var projectKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range structFields(reflect.TypeOf(Config{})) {
		m[f.key] = true
	}
	for k := range legacyKeys {
		m[k] = true
	}
	return m
}()

// flagSpecs maps a flag name of flagTable to its spec.
var flagSpecs = func() map[string]flagSpec {
	m := make(map[string]flagSpec, len(flagTable))
	for _, s := range flagTable {
		m[s.name] = s
	}
	return m
}()

// isVLLMConfig applies the rule above to a file's top-level keys.
func isVLLMConfig(raw map[string]any) bool {
	fs := pflag.NewFlagSet("vllm-config", pflag.ContinueOnError)
	RegisterFlags(fs)
	for k := range raw {
		if projectKeys[strings.ReplaceAll(k, "-", "_")] {
			continue
		}
		if fs.Lookup(k) != nil {
			return true
		}
	}
	return false
}

// vllmConfigLayer reads a vLLM config file's keys as the flags they name:
// it returns the overlay they make (keyed like FlagOverlay), the origin of
// each of its keys (the file's spelling and line), the problems (an
// unknown argument, a bad value, a capability not built yet) and the
// warnings (arguments accepted with no effect).
func vllmConfigLayer(raw map[string]any, label, path string) (map[string]any, map[string]origin, []problem, []string) {
	var lines []string
	if data, err := os.ReadFile(path); err == nil {
		lines = strings.Split(string(data), "\n")
	}
	fs := pflag.NewFlagSet("vllm-config", pflag.ContinueOnError)
	RegisterFlags(fs)
	origins := map[string]origin{}
	// own holds the keys of the project's format that no flag spells
	// (sglang:, kv_model_shape:, admin_key): a vLLM file may carry them.
	own := map[string]any{}
	var probs []problem
	for _, k := range sortedKeys(raw) {
		o := origin{label: label, spelled: k, line: keyLine(lines, k)}
		f := fs.Lookup(k)
		if f == nil && projectKeys[strings.ReplaceAll(k, "-", "_")] {
			own[k] = raw[k]
			continue
		}
		if f == nil {
			msg := fmt.Sprintf("unknown vllm serve argument %q", k)
			if s := suggestFlag(fs, k); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", strings.TrimLeft(s, "-"))
			}
			probs = append(probs, problem{msg: o.where() + ": " + msg})
			continue
		}
		if s, ok := flagSpecs[f.Name]; ok {
			origins[s.key] = o
		}
		if err := setFromYAML(fs, f, raw[k]); err != nil {
			probs = append(probs, problem{msg: fmt.Sprintf("%s: %s: %v", o.where(), k, err)})
		}
	}
	for _, msg := range notYetVLLMFlags(fs) {
		probs = append(probs, problem{msg: label + ": " + msg})
	}
	var warns []string
	if ignored := NoEffectFlags(fs); len(ignored) > 0 {
		warns = append(warns, fmt.Sprintf("%s: accepted, no effect: %s", label, strings.Join(ignored, ", ")))
	}
	overlay := FlagOverlay(fs)
	if len(own) > 0 {
		for norm, o := range fileOrigins(own, label, path) {
			origins[norm] = o
		}
		mergeMaps(overlay, own)
	}
	return overlay, origins, probs, warns
}

// setFromYAML sets flag f as `--name value` would, from a YAML value: a
// list sets it once per item, an object is given as JSON text, true on a
// valueless flag is the bare flag, false its --no- form (or nothing, as
// vLLM's store_true).
func setFromYAML(fs *pflag.FlagSet, f *pflag.Flag, v any) error {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		for _, item := range v {
			text, err := yamlText(item)
			if err != nil {
				return err
			}
			if err := fs.Set(f.Name, text); err != nil {
				return err
			}
		}
		return nil
	case bool:
		if _, mine := f.Value.(*boolValue); mine {
			return fs.Set(f.Name, strconv.FormatBool(v))
		}
		if v {
			if f.NoOptDefVal != "" {
				return fs.Set(f.Name, f.NoOptDefVal)
			}
			return fs.Set(f.Name, "true")
		}
		if neg := fs.Lookup("no-" + f.Name); neg != nil {
			return fs.Set(neg.Name, neg.NoOptDefVal)
		}
		if f.NoOptDefVal != "" {
			return nil // store_true: false is its default
		}
		return fs.Set(f.Name, "false")
	}
	text, err := yamlText(v)
	if err != nil {
		return err
	}
	return fs.Set(f.Name, text)
}

// yamlText is a scalar's command-line text, or an object's JSON.
func yamlText(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	case bool:
		return strconv.FormatBool(v), nil
	case map[string]any, []any:
		b, err := json.Marshal(v)
		return string(b), err
	}
	return "", fmt.Errorf("unsupported value %v", v)
}
