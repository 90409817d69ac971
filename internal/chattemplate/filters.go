package chattemplate

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/ardanlabs/jinja"
)

// raiseExceptionFunc is transformers' raise_exception global.
var raiseExceptionFunc = jinja.NewCallable("raise_exception", raiseException)

// builtinVariables are this package's replacements for what the engine
// prints, filters or operates on differently from Jinja2 (see
// prepareSource), handed to every render under their renamed names.
var builtinVariables = map[string]jinja.Value{
	printFuncName:            jinja.NewCallable(printFuncName, printValue),
	concatFuncName:           jinja.NewCallable("~", concatValues),
	addFuncName:              jinja.NewCallable("+", addValues),
	inFuncName:               jinja.NewCallable("in", containsValue),
	iterFuncName:             jinja.NewCallable("iter", iterable),
	refuseFuncName:           jinja.NewCallable("refuse", refuseMutation),
	mathFuncName:             jinja.NewCallable("arithmetic", arithmetic),
	strMethodFuncName:        jinja.NewCallable("str method", stringMethod),
	renamedPrefix + "length": jinja.NewCallable("length", filterLength),
	renamedPrefix + "count":  jinja.NewCallable("count", filterLength),
	renamedPrefix + "tojson": jinja.NewCallable("tojson", filterToJSON),
	renamedPrefix + "trim":   jinja.NewCallable("trim", filterTrim),
	renamedPrefix + "string": jinja.NewCallable("string", filterString),
	renamedPrefix + "join":   jinja.NewCallable("join", filterJoin),
}

func raiseException(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Value{}, fmt.Errorf("raise_exception() takes 1 argument, got %d", len(args))
	}
	return jinja.Value{}, &RaiseError{Message: pyStr(args[0])}
}

func printValue(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Value{}, fmt.Errorf("print takes 1 value, got %d", len(args))
	}
	if args[0].IsString() {
		return args[0], nil
	}
	return jinja.NewString(pyStr(args[0])), nil
}

// argument returns the positional argument at index, else the keyword
// argument name, else undefined; Python binds both ways.
func argument(args []jinja.Value, kwargs map[string]jinja.Value, index int, name string) jinja.Value {
	if index < len(args) {
		return args[index]
	}
	if val, ok := kwargs[name]; ok {
		return val
	}
	return jinja.Undefined()
}

// filterToJSON is transformers' tojson: json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False).
func filterToJSON(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Value{}, fmt.Errorf("tojson: no value")
	}
	var indent *string
	switch val := argument(args, kwargs, 2, "indent"); {
	case val.IsInt():
		text := strings.Repeat(" ", max(0, int(val.AsInt())))
		indent = &text
	case val.IsString():
		text := val.AsString()
		indent = &text
	case val.IsUndefined(), val.IsNone():
	default:
		return jinja.Value{}, fmt.Errorf("tojson: indent must be an int or a string, not %s", val.String())
	}
	opts := newDumpOptions(indent)
	opts.ensureASCII = argument(args, kwargs, 1, "ensure_ascii").IsTruthy()
	opts.sortKeys = argument(args, kwargs, 4, "sort_keys").IsTruthy()
	if seps := argument(args, kwargs, 3, "separators"); seps.IsList() {
		items := seps.AsList().Items
		if len(items) != 2 || !items[0].IsString() || !items[1].IsString() {
			return jinja.Value{}, fmt.Errorf("tojson: separators must be two strings")
		}
		opts.itemSep, opts.keySep = items[0].AsString(), items[1].AsString()
	} else if !seps.IsUndefined() && !seps.IsNone() {
		return jinja.Value{}, fmt.Errorf("tojson: separators must be two strings")
	}
	var b strings.Builder
	if err := writeJSON(&b, args[0], &opts, 0); err != nil {
		return jinja.Value{}, fmt.Errorf("tojson: %w", err)
	}
	return jinja.NewString(b.String()), nil
}

// filterTrim is Jinja2's trim: str(value).strip(chars).
func filterTrim(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Value{}, fmt.Errorf("trim: no value")
	}
	text := pyStr(args[0])
	chars := argument(args, kwargs, 1, "chars")
	if chars.IsUndefined() || chars.IsNone() {
		return jinja.NewString(strings.TrimFunc(text, isPythonSpace)), nil
	}
	return jinja.NewString(strings.Trim(text, pyStr(chars))), nil
}

// isPythonSpace is str.isspace for one character: Go's unicode.IsSpace
// plus the ASCII information separators Python also counts.
func isPythonSpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

// filterString is Jinja2's string filter: str(value).
func filterString(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Value{}, fmt.Errorf("string: no value")
	}
	return jinja.NewString(pyStr(args[0])), nil
}

// filterJoin is Jinja2's join(value, d=”, attribute=None): str() of each
// item (or of its attribute) joined with d.
func filterJoin(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Value{}, fmt.Errorf("join: no value")
	}
	var items []jinja.Value
	switch val := args[0]; {
	case val.IsList():
		items = val.AsList().Items
	case val.IsDict():
		for _, key := range val.AsDict().Keys {
			items = append(items, jinja.NewString(key))
		}
	case val.IsString():
		for _, r := range val.AsString() {
			items = append(items, jinja.NewString(string(r)))
		}
	case val.IsUndefined():
	default:
		return jinja.Value{}, fmt.Errorf("join: %s is not iterable", val.String())
	}
	sep := ""
	if d := argument(args, kwargs, 1, "d"); !d.IsUndefined() {
		sep = pyStr(d)
	}
	attribute := argument(args, kwargs, 2, "attribute")
	parts := make([]string, len(items))
	for i, item := range items {
		if !attribute.IsUndefined() && !attribute.IsNone() {
			item = attributeOf(item, pyStr(attribute))
		}
		parts[i] = pyStr(item)
	}
	return jinja.NewString(strings.Join(parts, sep)), nil
}

// attributeOf follows a dotted attribute path through dicts, as Jinja2's
// make_attrgetter does; a missing step is undefined.
func attributeOf(val jinja.Value, path string) jinja.Value {
	for _, step := range strings.Split(path, ".") {
		if !val.IsDict() {
			return jinja.Undefined()
		}
		next, ok := val.AsDict().Get(step)
		if !ok {
			return jinja.Undefined()
		}
		val = next
	}
	return val
}

// strftimeNowFunc is transformers' strftime_now(format):
// datetime.now().strftime(format), on the given clock.
func strftimeNowFunc(now func() time.Time) jinja.Value {
	return jinja.NewCallable("strftime_now", func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		format := argument(args, kwargs, 0, "format")
		if !format.IsString() {
			return jinja.Value{}, fmt.Errorf("strftime_now() needs a format string")
		}
		return jinja.NewString(strftime(now(), format.AsString())), nil
	})
}
