package config

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// origin says where the value of one configuration key came from, so that
// a problem names what the user wrote: the flag (--zmq-replay-port) when it
// came from the command line, the key as spelled in the file
// (max-model-len) and the file and line when it came from a file.
type origin struct {
	flag    bool   // set by a command-line flag
	label   string // the source as error lines name it: "--config FILE"
	spelled string // the key as written in the file (dotted for nested keys)
	line    int    // 1-based line of the key in the file; 0 = unknown
}

// keyFlags maps a JSON key of flagTable to its flag ("--name").
var keyFlags = func() map[string]string {
	m := make(map[string]string, len(flagTable))
	for _, s := range flagTable {
		m[s.key] = "--" + s.name
	}
	return m
}()

// spellings maps every normalised key path of raw (dashes become
// underscores, as normalizeKeys does) to the path as written.
func spellings(raw map[string]any, normPrefix, rawPrefix string, out map[string]string) map[string]string {
	if out == nil {
		out = map[string]string{}
	}
	// In sorted order, so that when two spellings normalise to one key the
	// later one wins: the one normalizeKeys reports as the duplicate
	// (deterministically, not by map order).
	for _, k := range sortedKeys(raw) {
		v := raw[k]
		np, rp := joinPath(normPrefix, strings.ReplaceAll(k, "-", "_")), joinPath(rawPrefix, k)
		out[np] = rp
		if m, ok := v.(map[string]any); ok {
			spellings(m, np, rp, out)
		}
	}
	return out
}

// fileOrigins returns the origin of every key of a file source: its
// spelling and the line it starts on.
func fileOrigins(raw map[string]any, label, path string) map[string]origin {
	var lines []string
	if path != "" {
		if data, err := os.ReadFile(path); err == nil {
			lines = strings.Split(string(data), "\n")
		}
	}
	out := map[string]origin{}
	for norm, spelled := range spellings(raw, "", "", nil) {
		out[norm] = origin{label: label, spelled: spelled, line: keyLine(lines, spelled)}
	}
	return out
}

// keyLine finds the line of a (dotted) key in a YAML or JSON file: each
// segment is searched for after the line of its parent. 0 = not found.
func keyLine(lines []string, dotted string) int {
	from := 0
	line := 0
	for _, seg := range strings.Split(dotted, ".") {
		re := regexp.MustCompile(`^\s*(- )?["']?` + regexp.QuoteMeta(seg) + `["']?\s*:`)
		found := false
		for i := from; i < len(lines); i++ {
			if re.MatchString(lines[i]) {
				line, from, found = i+1, i+1, true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}

// where is the prefix of a problem about a key from this origin:
// "--config FILE:LINE" (or without the line when unknown).
func (o origin) where() string {
	if o.line > 0 {
		return o.label + ":" + strconv.Itoa(o.line)
	}
	return o.label
}

// userTerms rewrites a problem's message so that the keys it names read as
// the user wrote them, and returns the source to prefix it with ("" for the
// command line or when no key of the problem was set). Keys set on the
// command line become flags; keys from a file keep the file's spelling; a
// key no source set takes the style of the problem's first set key (a flag
// when that came from the command line).
func userTerms(p problem, origins map[string]origin) (msg, where string) {
	msg = p.msg
	var primary *origin
	for _, k := range p.keys {
		if o, ok := origins[k]; ok {
			primary = &o
			break
		}
	}
	if primary == nil {
		return msg, ""
	}
	if !primary.flag {
		where = primary.where()
	}
	keys := slices.Clone(p.keys)
	// Longer keys first, so that "dp_size" inside "dp_size_x" cannot be
	// replaced by a shorter one.
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	for _, k := range keys {
		spelled := ""
		o, set := origins[k]
		switch {
		case set && o.flag || !set && primary.flag:
			spelled = keyFlags[k]
		case set:
			spelled = o.spelled
		case strings.Contains(primary.spelled, "-"):
			// The file spells keys with dashes: so does the key to add.
			spelled = strings.ReplaceAll(k, "_", "-")
		}
		if spelled != "" && spelled != k {
			msg = replaceKey(msg, k, spelled)
		}
	}
	return msg, where
}

// replaceKey replaces the whole-word occurrences of key in msg: not inside
// a longer name, not a parent of a nested path ("key.child"), not after
// "--" (already a flag).
func replaceKey(msg, key, with string) string {
	isName := func(c byte) bool {
		return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		j := strings.Index(msg[i:], key)
		if j < 0 {
			b.WriteString(msg[i:])
			break
		}
		j += i
		end := j + len(key)
		before := j == 0 || !isName(msg[j-1]) && msg[j-1] != '.'
		after := end == len(msg) || !isName(msg[end]) && !(msg[end] == '.' && end+1 < len(msg) && isName(msg[end+1]))
		b.WriteString(msg[i:j])
		if before && after {
			b.WriteString(with)
		} else {
			b.WriteString(key)
		}
		i = end
	}
	return b.String()
}
