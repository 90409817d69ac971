package fleet

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/mocker-server/mocker-server/internal/config"
)

// File is a fleet file: groups of workers, in order. Worker ids are
// assigned in this order (group 1's workers first).
type File struct {
	Workers []Group `json:"workers"`
}

// Group is count workers sharing one configuration.
type Group struct {
	// Count is the number of workers in the group (>= 1).
	Count int `json:"count"`
	// Config is a configuration file, with the meaning of serve --config
	// (a relative path is relative to the working directory). It replaces
	// the command line's --config for this group.
	Config string `json:"config,omitempty"`
	// Args are serve flags applied on top of the command line's flags.
	Args []string `json:"args,omitempty"`
}

// ReadFile reads and checks a fleet file. Unknown keys, duplicate keys
// and a count below 1 are errors.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fleet file: %w", err)
	}
	f, err := ParseFile(data)
	if err != nil {
		return nil, fmt.Errorf("fleet file %s: %w", path, err)
	}
	return f, nil
}

// ParseFile parses a fleet file's YAML (or JSON) text strictly.
func ParseFile(data []byte) (*File, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, yamlTerms(data, err)
	}
	if len(f.Workers) == 0 {
		return nil, fmt.Errorf("no worker groups (want workers: [{count: N, ...}, ...])")
	}
	for i, g := range f.Workers {
		if g.Count < 1 {
			return nil, fmt.Errorf("workers[%d].count must be >= 1, got %d", i, g.Count)
		}
	}
	return &f, nil
}

var (
	unknownFieldRE = regexp.MustCompile(`json: unknown field "([^"]*)"`)
	// The YAML library converts to JSON first and says so in its errors.
	jsonWrapperRE = regexp.MustCompile(`^error (?:converting YAML to JSON|unmarshaling JSON): (?:while decoding JSON: )?(?:json: )?`)
)

// groupKeys are the keys of a worker group, for suggestions.
var groupKeys = []string{"count", "config", "args"}

// yamlTerms says a parse error of a fleet file in the file's own terms:
// an unknown key with its line and a suggestion, not the JSON decoder's
// words about the JSON the YAML was converted to.
func yamlTerms(data []byte, err error) error {
	m := unknownFieldRE.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("%s", jsonWrapperRE.ReplaceAllString(err.Error(), ""))
	}
	key := m[1]
	msg := fmt.Sprintf("unknown key %q", key)
	keyRE := regexp.MustCompile(`^\s*(- )?["']?` + regexp.QuoteMeta(key) + `["']?\s*:`)
	for i, line := range strings.Split(string(data), "\n") {
		if keyRE.MatchString(line) {
			msg = fmt.Sprintf("line %d: %s", i+1, msg)
			break
		}
	}
	if s := config.Suggest(key, append([]string{"workers"}, groupKeys...)); s != "" {
		return fmt.Errorf("%s (did you mean %q?)", msg, s)
	}
	return fmt.Errorf("%s (a fleet file has workers:, each group count:, config: and args:)", msg)
}
