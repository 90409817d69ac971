package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// decoder applies a generic, key-normalised map onto the json-tagged Config
// tree with strict typing. It never stops at the first problem.
type decoder struct {
	probs []problem
	warns []string
	bad   map[string]bool // JSON paths whose value failed to parse
}

func newDecoder() *decoder { return &decoder{bad: map[string]bool{}} }

func (d *decoder) fail(path, format string, args ...any) {
	d.probs = append(d.probs, problem{msg: fmt.Sprintf(format, args...), keys: []string{path}})
	d.bad[path] = true
}

type structField struct {
	key   string
	index int
}

// structFields lists the JSON-keyed fields of a struct type in declaration
// order. Fields tagged json:"-" are not configuration keys.
func structFields(t reflect.Type) []structField {
	var out []structField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || name == "" {
			continue
		}
		out = append(out, structField{key: name, index: i})
	}
	return out
}

// nearestKey returns the key of fields closest to typed, or "" when none is
// close (the rule of flag suggestions: at most one edit per four
// characters, between one and three).
func nearestKey(typed string, fields []structField) string {
	limit := min(max(len(typed)/4, 1), 3)
	best, bestDist := "", limit+1
	for _, f := range fields {
		if d := editDistance(typed, f.key); d < bestDist {
			best, bestDist = f.key, d
		}
	}
	return best
}

// decodeStruct decodes m onto the struct rv. Keys absent from m leave the
// current (default or lower-precedence) value.
func (d *decoder) decodeStruct(rv reflect.Value, m map[string]any, prefix string) {
	fields := structFields(rv.Type())
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		known[f.key] = true
	}
	for _, k := range sortedKeys(m) {
		if known[k] {
			continue
		}
		p := joinPath(prefix, k)
		if prefix == "" && legacyKeys[k] {
			if m[k] == nil {
				d.fail(p, "%s must not be null", p)
			} else if _, ok := m[k].(bool); !ok {
				d.fail(p, "%s must be a boolean (true or false), got %s", p, describe(m[k]))
			}
			continue
		}
		if s := nearestKey(k, fields); s != "" {
			d.fail(p, "unknown field %q (did you mean %q?)", p, joinPath(prefix, s))
			continue
		}
		d.fail(p, "unknown field %q", p)
	}
	for _, f := range fields {
		if v, ok := m[f.key]; ok {
			d.decodeValue(rv.Field(f.index), v, joinPath(prefix, f.key))
		}
	}
}

// decodeValue decodes one value onto fv, whose JSON path is path.
func (d *decoder) decodeValue(fv reflect.Value, v any, path string) {
	opt := fieldOpts[path]
	if v == nil {
		// Pointer fields are the optional ones: null means "unset".
		if fv.Kind() == reflect.Pointer {
			fv.SetZero()
			return
		}
		d.fail(path, "%s must not be null", path)
		return
	}
	switch fv.Kind() {
	case reflect.Pointer:
		nv := reflect.New(fv.Type().Elem())
		switch p := nv.Interface().(type) {
		case *ReasoningConfig:
			*p = DefaultReasoningConfig()
		case *KVEventsConfig:
			*p = DefaultKVEventsConfig()
		case *OffloadBandwidth:
			*p = DefaultOffloadBandwidth()
		case *UnfetchedMedia:
			*p = DefaultUnfetchedMedia()
		}
		before := len(d.probs)
		d.decodeValue(nv.Elem(), v, path)
		if len(d.probs) == before {
			fv.Set(nv)
		}

	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(path, "%s must be an object, got %s", path, describe(v))
			return
		}
		d.decodeStruct(fv, m, path)

	case reflect.String:
		s, ok := v.(string)
		if !ok {
			// A numeric hash seed is natural in YAML (hash_seed: 42).
			if n, isNum := v.(json.Number); isNum && path == "hash_seed" {
				if _, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
					fv.SetString(n.String())
					return
				}
			}
			d.fail(path, "%s must be a string, got %s", path, describe(v))
			return
		}
		if e := opt.enum; e != nil {
			canon, ok := e.lookup(s)
			switch {
			case ok:
				s = canon
			case e.fallback != "":
				d.warns = append(d.warns, fmt.Sprintf("unknown %s '%s', using '%s'", path, s, e.fallback))
				s = e.fallback
			default:
				d.fail(path, "%s", e.invalidMsg(path, s))
				return
			}
		}
		fv.SetString(s)

	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.fail(path, "%s must be a boolean (true or false), got %s", path, describe(v))
			return
		}
		fv.SetBool(b)

	case reflect.Int, reflect.Int64:
		n, msg := parseInteger(v, opt.hr)
		if msg != "" {
			d.fail(path, "%s %s", path, msg)
			return
		}
		if fv.OverflowInt(n) {
			d.fail(path, "%s is out of range, got %d", path, n)
			return
		}
		fv.SetInt(n)

	case reflect.Uint32:
		n, msg := parseInteger(v, opt.hr)
		if msg != "" {
			d.fail(path, "%s %s", path, msg)
			return
		}
		if n < 0 || n > math.MaxUint32 {
			d.fail(path, "%s must be between 0 and %d, got %d", path, uint32(math.MaxUint32), n)
			return
		}
		fv.SetUint(uint64(n))

	case reflect.Float64:
		f, msg := parseFloat(v, opt.inf)
		if msg != "" {
			d.fail(path, "%s %s", path, msg)
			return
		}
		fv.SetFloat(f)

	case reflect.Slice:
		if fv.Type().Elem().Kind() == reflect.Float64 {
			d.decodeFloats(fv, v, path)
			return
		}
		var items []string
		switch v := v.(type) {
		case string:
			items = []string{v}
		case []any:
			items = make([]string, 0, len(v))
			for i, e := range v {
				s, ok := e.(string)
				if !ok {
					d.fail(path, "%s[%d] must be a string, got %s", path, i, describe(e))
					return
				}
				items = append(items, s)
			}
		default:
			d.fail(path, "%s must be a list of strings, got %s", path, describe(v))
			return
		}
		fv.Set(reflect.ValueOf(items))

	case reflect.Map:
		// A free-form object (kv_connector_extra_config): kept as given,
		// for the consumer that knows its keys to read.
		if !reflect.TypeFor[map[string]any]().ConvertibleTo(fv.Type()) {
			d.fail(path, "%s has an unsupported type %s", path, fv.Type())
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(path, "%s must be an object, got %s", path, describe(v))
			return
		}
		fv.Set(reflect.ValueOf(m).Convert(fv.Type()))

	default:
		d.fail(path, "%s has an unsupported type %s", path, fv.Type())
	}
}

// decodeFloats decodes a JSON array of numbers onto a []float64 field.
func (d *decoder) decodeFloats(fv reflect.Value, v any, path string) {
	arr, ok := v.([]any)
	if !ok {
		d.fail(path, "%s must be a list of numbers, got %s", path, describe(v))
		return
	}
	out := make([]float64, len(arr))
	for i, e := range arr {
		f, msg := parseFloat(e, false)
		if msg != "" {
			d.fail(path, "%s[%d] %s", path, i, msg)
			return
		}
		out[i] = f
	}
	fv.Set(reflect.ValueOf(out))
}

// parseInteger converts a decoded JSON value to an integer. JSON numbers must
// have no fractional part (1e3 and 32.0 are fine); strings are accepted only
// for HR fields. msg is empty on success, else the problem after the key.
func parseInteger(v any, hr bool) (n int64, msg string) {
	want := "must be an integer"
	if hr {
		want = `must be an integer or a size such as "32k" or "32K"`
	}
	switch v := v.(type) {
	case json.Number:
		s := v.String()
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, ""
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, "is out of range, got " + s
		}
		if f != math.Trunc(f) {
			return 0, want + ", got " + s
		}
		if f < -(1<<63) || f >= 1<<63 {
			return 0, "is out of range, got " + s
		}
		return int64(f), ""
	case string:
		if hr {
			if i, ok := parseHumanInt(v); ok {
				return i, ""
			}
		}
	}
	return 0, want + ", got " + describe(v)
}

var humanIntRE = regexp.MustCompile(`^([+-]?[0-9]+(?:\.[0-9]+)?)([kKmMgG]?)$`)

// parseHumanInt parses an integer with an optional size suffix: k = ×1000,
// K = ×1024, m = ×1e6, M = ×2^20, g = ×1e9, G = ×2^30. A fractional mantissa
// is allowed when the product is a whole number ("1.5k" = 1500).
func parseHumanInt(s string) (int64, bool) {
	m := humanIntRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(m[1])
	if !ok {
		return 0, false
	}
	mult := map[string]int64{"": 1, "k": 1000, "K": 1 << 10, "m": 1000000, "M": 1 << 20, "g": 1000000000, "G": 1 << 30}[m[2]]
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

// parseFloat converts a decoded JSON value to a float. With allowInf the
// strings "inf", "+inf", "infinity" and "+infinity" (any case) mean +Inf.
func parseFloat(v any, allowInf bool) (float64, string) {
	want := "must be a number"
	if allowInf {
		want = `must be a number or "inf"`
	}
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(v.String(), 64)
		if err != nil {
			return 0, "is out of range, got " + v.String()
		}
		return f, ""
	case string:
		if allowInf {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "inf", "+inf", "infinity", "+infinity":
				return math.Inf(1), ""
			}
		}
	}
	return 0, want + ", got " + describe(v)
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
