package chattemplate

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"

	"github.com/mocker-server/mocker-server/internal/pyrepr"
)

// dumpOptions are Python json.dumps' keyword arguments as transformers'
// tojson filter passes them (its ensure_ascii defaults to false).
type dumpOptions struct {
	ensureASCII bool
	// indent is nil for the compact form; otherwise the text repeated once
	// per nesting level (an int indent n is n spaces).
	indent          *string
	itemSep, keySep string
	sortKeys        bool
}

// newDumpOptions applies Python's defaults: ", " between items without an
// indent, "," with one, and ": " between key and value.
func newDumpOptions(indent *string) dumpOptions {
	opts := dumpOptions{indent: indent, itemSep: ", ", keySep: ": "}
	if indent != nil {
		opts.itemSep = ","
	}
	return opts
}

var errNotSerializable = errors.New("value is not JSON serializable")

// writeJSON writes val as Python's json.dumps does.
func writeJSON(b *strings.Builder, val jinja.Value, opts *dumpOptions, level int) error {
	switch {
	case val.IsNone():
		b.WriteString("null")
	case val.IsBool():
		b.WriteString(strconv.FormatBool(val.AsBool()))
	case val.IsInt():
		b.WriteString(strconv.FormatInt(val.AsInt(), 10))
	case val.IsFloat():
		switch s := pyrepr.Float(val.AsFloat()); s {
		case "nan":
			b.WriteString("NaN")
		case "inf":
			b.WriteString("Infinity")
		case "-inf":
			b.WriteString("-Infinity")
		default:
			b.WriteString(s)
		}
	case val.IsString():
		writeJSONString(b, val.AsString(), opts.ensureASCII)
	case val.IsList():
		items := val.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, item := range items {
			if i > 0 {
				b.WriteString(opts.itemSep)
			}
			writeJSONIndent(b, opts, level+1)
			if err := writeJSON(b, item, opts, level+1); err != nil {
				return err
			}
		}
		writeJSONIndent(b, opts, level)
		b.WriteByte(']')
	case val.IsDict():
		dict := val.AsDict()
		if dict.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := dict.Keys
		if opts.sortKeys {
			keys = append([]string(nil), keys...)
			sort.Strings(keys)
		}
		b.WriteByte('{')
		for i, key := range keys {
			if i > 0 {
				b.WriteString(opts.itemSep)
			}
			writeJSONIndent(b, opts, level+1)
			writeJSONString(b, key, opts.ensureASCII)
			b.WriteString(opts.keySep)
			if err := writeJSON(b, dict.Data[key], opts, level+1); err != nil {
				return err
			}
		}
		writeJSONIndent(b, opts, level)
		b.WriteByte('}')
	default:
		// Undefined and callables: Python raises TypeError.
		return errNotSerializable
	}
	return nil
}

func writeJSONIndent(b *strings.Builder, opts *dumpOptions, level int) {
	if opts.indent == nil {
		return
	}
	b.WriteByte('\n')
	for range level {
		b.WriteString(*opts.indent)
	}
}

// writeJSONString escapes like Python's json encoder: quote, backslash and
// control characters always; everything above ASCII only with ensureASCII
// (as \uXXXX, surrogate pairs beyond the BMP).
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			b.WriteString(`\u00`)
			writeHex(b, uint32(r), 2)
		case r < utf8.RuneSelf || !ensureASCII:
			b.WriteRune(r)
		case r < 0x10000:
			b.WriteString(`\u`)
			writeHex(b, uint32(r), 4)
		default:
			r -= 0x10000
			b.WriteString(`\u`)
			writeHex(b, uint32(0xd800+(r>>10)), 4)
			b.WriteString(`\u`)
			writeHex(b, uint32(0xdc00+(r&0x3ff)), 4)
		}
	}
	b.WriteByte('"')
}
