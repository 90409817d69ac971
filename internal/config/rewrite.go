package config

import "strings"

// flagArity is how many command-line arguments a flag reads after its name.
type flagArity int

const (
	arityNone     flagArity = iota // --x
	arityOne                       // --x VALUE
	arityMany                      // --x V1 V2 ... (argparse nargs="+")
	arityOptional                  // --x or --x VALUE (argparse nargs="?")
	arityBool                      // --x, or --x true|false (pflag reads only --x=true)
)

// arityOf returns the arity of a canonical flag name; unknown names read
// nothing (pflag reports them).
func arityOf(name string) flagArity {
	switch name {
	case FlagConfig, FlagExtraEngineArgs:
		return arityOne
	}
	for _, s := range flagTable {
		if s.name != name {
			continue
		}
		switch {
		case s.kind == flagBool:
			return arityNone
		case s.kind == flagList && vllmFlagByName[name] != nil && vllmFlagByName[name].kind == vllmList:
			// vLLM reads these with nargs="+": --served-model-name a b c.
			return arityMany
		}
		return arityOne
	}
	if f := vllmFlagByName[name]; f != nil {
		switch f.kind {
		case vllmStoreTrue, vllmBoolOptional:
			return arityNone
		case vllmList:
			return arityMany
		case vllmOptionalValue:
			return arityOptional
		}
		return arityOne
	}
	if f := simFlagByName[name]; f != nil && f.kind == simBool {
		// llm-d-inference-sim's guides write --enable-kvcache true; its
		// pflag parser leaves the "true" as an ignored argument, which
		// here would be the positional MODEL.
		return arityBool
	}
	return arityNone
}

// RewriteArgs turns vLLM's command-line forms that pflag cannot read into
// equivalent ones it can. It must run before cobra/pflag parse args.
//
//   - Single-dash names of two or more letters (-tp 2, -dp=4, -asc 2) and
//     vLLM's one-letter names (-n, -r, -q) become their long names: pflag
//     would read "-tp" as the shorthand group "-t -p".
//
//   - -O3, -O=3 and -O 3 become --optimization-level 3.
//
//   - A flag vLLM reads with nargs="+" takes every following argument up to
//     the next flag (--served-model-name a b c); each becomes one repeat of
//     the flag.
//
//   - A flag with an optional value (--hf-token [TOKEN]) takes the next
//     argument when it is not a flag (a negative number is a value).
//
//   - JSON keys given one by one (--compilation-config.mode 3,
//     --kv-events-config.enable_kv_cache_events=true, --x.list+ a,b) are
//     merged into one JSON object per flag, passed as --x=<object> after the
//     other arguments (dottedArgs).
//
// Arguments after "--" and values of flags that take one are left alone.
func RewriteArgs(args []string) []string {
	out := make([]string, 0, len(args))
	dotted := newDottedArgs()
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(append(out, dotted.flags()...), args[i:]...)
		}
		if dotted.take(args, &i) {
			continue
		}
		a = expandSingleDash(a, args[i+1:])
		if !strings.HasPrefix(a, "--") || strings.Contains(a, "=") {
			out = append(out, a)
			continue
		}
		out = append(out, a)
		switch arityOf(canonicalFlagName(a[2:])) {
		case arityOne:
			if i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
		case arityMany:
			if i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
			for i+1 < len(args) && isListValue(args[i+1]) {
				i++
				out = append(out, a, args[i])
			}
		case arityOptional:
			if i+1 < len(args) && isListValue(args[i+1]) {
				i++
				out[len(out)-1] = a + "=" + args[i]
			}
		case arityBool:
			if i+1 < len(args) && (strings.EqualFold(args[i+1], "true") || strings.EqualFold(args[i+1], "false")) {
				i++
				out[len(out)-1] = a + "=" + args[i]
			}
		}
	}
	return append(out, dotted.flags()...)
}

// expandSingleDash returns the long form of a single-dash vLLM name (with
// its "=VALUE" if any), or arg unchanged. rest is what follows arg.
func expandSingleDash(arg string, rest []string) string {
	if !strings.HasPrefix(arg, "-") || strings.HasPrefix(arg, "--") || len(arg) < 2 {
		return arg
	}
	if strings.HasPrefix(arg, "-O") {
		switch {
		case arg != "-O":
			return "--optimization-level=" + strings.TrimPrefix(arg[2:], "=")
		case len(rest) > 0 && len(rest[0]) == 1 && strings.Contains("0123", rest[0]):
			return "--optimization-level"
		}
		return arg
	}
	name, value, hasValue := strings.Cut(arg[1:], "=")
	long, ok := vllmShortNames[name]
	if !ok {
		return arg
	}
	if hasValue {
		return "--" + long + "=" + value
	}
	return "--" + long
}

// isListValue reports whether an argument after a nargs="+" flag's first
// value, or after a nargs="?" flag, is a value: anything but a flag
// (argparse takes negative numbers as values).
func isListValue(arg string) bool {
	return !strings.HasPrefix(arg, "-") || numericRE.MatchString(arg)
}
