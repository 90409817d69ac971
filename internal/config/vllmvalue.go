package config

import (
	"errors"
	"strings"
)

// bareFlag is the NoOptDefVal of flags that take no value (or an optional
// one): pflag passes it to Set for "--x", so "--x=VALUE" is told apart.
const bareFlag = "\x00bare"

// vllmUse records how the command line set one accepted-no-effect or
// not-yet vLLM flag.
type vllmUse struct {
	flag    *vllmFlag
	spelled string   // the form last used: "--enforce-eager" or "--no-enforce-eager"
	values  []string // the value (last one wins) or, for lists, every value
	order   int      // position of the first use among all vLLM flags
	isSet   bool
	negated bool // --no-x was the last form used
}

// vllmValue is the pflag.Value of a vLLM flag. A BooleanOptionalAction flag
// has two: --x and --no-x share one vllmUse.
type vllmValue struct {
	use      *vllmUse
	negative bool
	counter  *int // shared by the flags of one FlagSet: order of first use
}

func (v *vllmValue) Set(text string) error {
	f := v.use.flag
	switch f.kind {
	case vllmStoreTrue, vllmBoolOptional:
		if text != bareFlag {
			return errors.New("takes no value")
		}
	case vllmOptionalValue:
		if text == bareFlag {
			text = ""
		}
	default:
		if err := checkVLLMValue(f, f.kind, text); err != nil {
			return err
		}
	}
	u := v.use
	if !u.isSet {
		*v.counter++
		u.order = *v.counter
		u.isSet = true
	}
	u.negated = v.negative
	u.spelled = "--" + f.name
	if v.negative {
		u.spelled = "--no-" + f.name
	}
	switch {
	case f.kind == vllmList || f.kind == vllmAppend:
		u.values = append(u.values, text)
	case f.kind.takesValue() && text != "":
		u.values = []string{text}
	default:
		u.values = nil
	}
	return nil
}

func (v *vllmValue) String() string { return strings.Join(v.use.values, " ") }

// Type names the value in pflag's error messages.
func (v *vllmValue) Type() string {
	switch v.use.flag.kind {
	case vllmStoreTrue, vllmBoolOptional:
		return "bool"
	case vllmInt, vllmHumanInt, vllmIntChoice:
		return "int"
	case vllmFloat:
		return "float"
	case vllmJSON, vllmJSONObject, vllmJSONOrString:
		return "json"
	case vllmList, vllmAppend:
		return "strings"
	}
	return "string"
}

// describe renders the use for the startup line: "--tensor-parallel-size 2",
// "--trust-remote-code", "--cudagraph-capture-sizes 1 2 4".
func (u *vllmUse) describe() string {
	parts := []string{u.spelled}
	for _, v := range u.values {
		if u.flag.secret {
			parts = append(parts, "<redacted>")
			continue
		}
		parts = append(parts, shellQuote(v))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes an argument the way a POSIX shell command line would
// need it ('{"a": 1}'), and leaves plain words alone.
func shellQuote(arg string) string {
	if arg != "" && !strings.ContainsAny(arg, " \t\n\"'\\$`*?[]{}()<>|&;#~!") {
		return arg
	}
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
}

// enabled reports whether the use turns its capability on: a negated
// boolean ("--no-enable-lora") or a "None" value asks for nothing.
func (u *vllmUse) enabled() bool {
	if u.negated {
		return false
	}
	if u.flag.nullable && len(u.values) == 1 && isNoneText(u.values[0]) {
		return false
	}
	return true
}

func isNoneText(s string) bool { return s == "" || s == "None" }
