package chattemplate

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// Python's semantics for the operators prepareSource routes here (see
// exprrewrite.go). Mixing types the way Python refuses is a render error
// here too, with Python's message.

// pyTypeName is type(value).__name__ in Python.
func pyTypeName(val jinja.Value) string {
	switch {
	case val.IsNone():
		return "NoneType"
	case val.IsBool():
		return "bool"
	case val.IsInt():
		return "int"
	case val.IsFloat():
		return "float"
	case val.IsString():
		return "str"
	case val.IsList():
		return "list"
	case val.IsDict():
		return "dict"
	case val.IsUndefined():
		return "Undefined"
	}
	return "function"
}

func typeErrorf(format string, args ...any) error {
	return fmt.Errorf("TypeError: "+format, args...)
}

// isIntLike is a Python int: bool is one too.
func isIntLike(val jinja.Value) bool { return val.IsInt() || val.IsBool() }

func asInt(val jinja.Value) int64 {
	if val.IsBool() {
		if val.AsBool() {
			return 1
		}
		return 0
	}
	return val.AsInt()
}

func asFloat(val jinja.Value) float64 {
	if val.IsFloat() {
		return val.AsFloat()
	}
	return float64(asInt(val))
}

// addValues is Python's a + b + …, folded from the left.
func addValues(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 2 {
		return jinja.Value{}, fmt.Errorf("+ takes 2 operands, got %d", len(args))
	}
	// The common case in chat templates: strings only, joined once.
	allStrings, size := true, 0
	for _, arg := range args {
		if !arg.IsString() {
			allStrings = false
			break
		}
		size += len(arg.AsString())
	}
	if allStrings {
		var b strings.Builder
		b.Grow(size)
		for _, arg := range args {
			b.WriteString(arg.AsString())
		}
		return jinja.NewString(b.String()), nil
	}
	acc := args[0]
	for _, next := range args[1:] {
		var err error
		if acc, err = add(acc, next); err != nil {
			return jinja.Value{}, err
		}
	}
	return acc, nil
}

func add(a, b jinja.Value) (jinja.Value, error) {
	switch {
	case a.IsUndefined() || b.IsUndefined():
		// Jinja2's Undefined refuses arithmetic (UndefinedError).
		return jinja.Value{}, fmt.Errorf("UndefinedError: an undefined value is an operand of '+'")
	case a.IsString() && b.IsString():
		return jinja.NewString(a.AsString() + b.AsString()), nil
	case isIntLike(a) && isIntLike(b):
		return jinja.NewInt(asInt(a) + asInt(b)), nil
	case (isIntLike(a) || a.IsFloat()) && (isIntLike(b) || b.IsFloat()):
		return jinja.NewFloat(asFloat(a) + asFloat(b)), nil
	case a.IsList() && b.IsList():
		items := make([]jinja.Value, 0, a.AsList().Len()+b.AsList().Len())
		items = append(items, a.AsList().Items...)
		return jinja.NewList(append(items, b.AsList().Items...)), nil
	case a.IsString() || a.IsList():
		return jinja.Value{}, typeErrorf("can only concatenate %s (not %q) to %s", pyTypeName(a), pyTypeName(b), pyTypeName(a))
	}
	return jinja.Value{}, typeErrorf("unsupported operand type(s) for +: '%s' and '%s'", pyTypeName(a), pyTypeName(b))
}

// containsValue is Python's item in container.
func containsValue(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 {
		return jinja.Value{}, fmt.Errorf("in takes 2 operands, got %d", len(args))
	}
	item, container := args[0], args[1]
	switch {
	case container.IsUndefined():
		return jinja.NewBool(false), nil // iterating Undefined yields nothing
	case container.IsString():
		if !item.IsString() {
			return jinja.Value{}, typeErrorf("'in <string>' requires string as left operand, not %s", pyTypeName(item))
		}
		return jinja.NewBool(strings.Contains(container.AsString(), item.AsString())), nil
	case container.IsList():
		for _, element := range container.AsList().Items {
			if pyEqual(item, element) {
				return jinja.NewBool(true), nil
			}
		}
		return jinja.NewBool(false), nil
	case container.IsDict():
		if item.IsList() || item.IsDict() {
			return jinja.Value{}, typeErrorf("unhashable type: '%s'", pyTypeName(item))
		}
		return jinja.NewBool(item.IsString() && container.AsDict().Has(item.AsString())), nil
	}
	return jinja.Value{}, typeErrorf("argument of type '%s' is not iterable", pyTypeName(container))
}

// iterable checks what a for loop iterates over, as Python's iter() does.
func iterable(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Value{}, fmt.Errorf("iter takes 1 value, got %d", len(args))
	}
	switch val := args[0]; {
	case val.IsNone(), val.IsBool(), val.IsInt(), val.IsFloat():
		return jinja.Value{}, typeErrorf("'%s' object is not iterable", pyTypeName(val))
	default:
		return val, nil
	}
}

// filterLength is Jinja2's length (count): len(value); Undefined has 0.
func filterLength(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Value{}, fmt.Errorf("length: no value")
	}
	switch val := args[0]; {
	case val.IsUndefined():
		return jinja.NewInt(0), nil
	case val.IsString():
		return jinja.NewInt(int64(utf8.RuneCountInString(val.AsString()))), nil
	case val.IsList():
		return jinja.NewInt(int64(val.AsList().Len())), nil
	case val.IsDict():
		return jinja.NewInt(int64(val.AsDict().Len())), nil
	default:
		return jinja.Value{}, typeErrorf("object of type '%s' has no len()", pyTypeName(val))
	}
}

// pyEqual is Python's ==: numbers (bool included) by value, containers by
// content.
func pyEqual(a, b jinja.Value) bool {
	aNum, bNum := isIntLike(a) || a.IsFloat(), isIntLike(b) || b.IsFloat()
	switch {
	case aNum && bNum:
		if isIntLike(a) && isIntLike(b) {
			return asInt(a) == asInt(b)
		}
		return asFloat(a) == asFloat(b)
	case a.IsList() && b.IsList():
		x, y := a.AsList().Items, b.AsList().Items
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !pyEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case a.IsDict() && b.IsDict():
		x, y := a.AsDict(), b.AsDict()
		if x.Len() != y.Len() {
			return false
		}
		for _, key := range x.Keys {
			other, ok := y.Get(key)
			if !ok || !pyEqual(x.Data[key], other) {
				return false
			}
		}
		return true
	}
	return a.Equals(b)
}

// refuseMutation is the sandbox's answer to obj.method(…) for a method that
// modifies obj.
func refuseMutation(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 {
		return jinja.Value{}, fmt.Errorf("refuse takes 2 values, got %d", len(args))
	}
	return jinja.Value{}, fmt.Errorf("SecurityError: access to attribute '%s' of '%s' object is unsafe", pyStr(args[1]), pyTypeName(args[0]))
}

// concatValues is Jinja2's a ~ b ~ …: str() of each, joined. (The engine
// prints None as "" and 2.0 as "2" there.)
func concatValues(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var b strings.Builder
	for _, arg := range args {
		b.WriteString(pyStr(arg))
	}
	return jinja.NewString(b.String()), nil
}
