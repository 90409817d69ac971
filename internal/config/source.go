package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// readConfigFile reads a YAML or JSON file into a generic map. Files named
// *.json are parsed as strict JSON; other files are parsed as JSON when they
// start with "{" and have no .yaml/.yml extension, else as YAML.
func readConfigFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	ext := strings.ToLower(filepath.Ext(path))
	isJSON := ext == ".json" ||
		(ext != ".yaml" && ext != ".yml" && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")))
	if isJSON {
		return parseJSONObject(data)
	}
	return parseYAMLObject(data)
}

// parseYAMLObject converts a YAML document to a generic JSON map. Duplicate
// keys and a second document are errors.
func parseYAMLObject(data []byte) (map[string]any, error) {
	if hasSecondYAMLDocument(data) {
		return nil, errors.New("trailing data after the first YAML document")
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		if strings.Contains(err.Error(), "unsupported value") {
			// YAML .inf/.nan have no JSON form; "inf" (a string) is accepted.
			return nil, fmt.Errorf("%v (write infinity as the string \"inf\")", err)
		}
		return nil, err
	}
	return parseJSONObject(j)
}

// hasSecondYAMLDocument reports whether a "---" document marker follows
// content. yaml.v2 silently ignores every document after the first one.
func hasSecondYAMLDocument(data []byte) bool {
	seenContent := false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "---" || strings.HasPrefix(line, "--- ") || line == "..." {
			if seenContent {
				return true
			}
			continue
		}
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") && !strings.HasPrefix(line, "%") {
			seenContent = true
		}
	}
	return false
}

// parseJSONObject decodes exactly one JSON value, which must be an object (or
// null, meaning empty). Numbers are kept as json.Number; duplicate keys and
// trailing data are errors.
func parseJSONObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseJSONValue(dec)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty input, expected a JSON object")
		}
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after JSON value")
	}
	switch v := v.(type) {
	case map[string]any:
		return v, nil
	case nil:
		return map[string]any{}, nil
	default:
		return nil, fmt.Errorf("expected a JSON object, got %s", describe(v))
	}
}

func parseJSONValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			m := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("invalid JSON: %w", err)
				}
				k, _ := kt.(string)
				if _, dup := m[k]; dup {
					return nil, fmt.Errorf("duplicate field %q", k)
				}
				v, err := parseJSONValue(dec)
				if err != nil {
					return nil, unexpectedEOF(err)
				}
				m[k] = v
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, fmt.Errorf("invalid JSON: %w", unexpectedEOF(err))
			}
			return m, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := parseJSONValue(dec)
				if err != nil {
					return nil, unexpectedEOF(err)
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, fmt.Errorf("invalid JSON: %w", unexpectedEOF(err))
			}
			return a, nil
		}
		return nil, fmt.Errorf("invalid JSON: unexpected %q", tok)
	default:
		return tok, nil // string, json.Number, bool, nil
	}
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// normalizeKeys returns a copy of v in which every object key, at every
// nesting level, has "-" replaced by "_". Two keys that become equal are a
// problem.
func normalizeKeys(v any, path string, probs *[]problem) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range sortedKeys(v) {
			nk := strings.ReplaceAll(k, "-", "_")
			p := joinPath(path, nk)
			if _, dup := out[nk]; dup {
				*probs = append(*probs, problem{msg: fmt.Sprintf("duplicate field %q", p), keys: []string{p}})
				continue
			}
			out[nk] = normalizeKeys(v[k], p, probs)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalizeKeys(e, path, probs)
		}
		return out
	default:
		return v
	}
}

// mergeMaps overlays src onto dst (in place) and returns dst. Objects present
// in both merge per key, recursively; any other value in src replaces dst's.
func mergeMaps(dst, src map[string]any) map[string]any {
	for k, sv := range src {
		sm, sok := sv.(map[string]any)
		dm, dok := dst[k].(map[string]any)
		if sok && dok {
			dst[k] = mergeMaps(cloneMap(dm), sm)
			continue
		}
		if sok {
			dst[k] = cloneMap(sm)
			continue
		}
		dst[k] = sv
	}
	return dst
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if vm, ok := v.(map[string]any); ok {
			v = cloneMap(vm)
		}
		out[k] = v
	}
	return out
}

func joinPath(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// describe formats a decoded JSON value for error messages.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("string %q", v)
	case json.Number:
		return "number " + v.String()
	case bool:
		return fmt.Sprintf("boolean %t", v)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	default:
		return fmt.Sprintf("%v", v)
	}
}
