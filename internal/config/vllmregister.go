package config

import (
	"fmt"
	"sort"

	"github.com/spf13/pflag"
)

// registerVLLMFlags registers on fs every flag of vllmFlagTable that fs
// does not have yet: the mock's own flags (flagTable, --config) keep their
// meaning, the others are hidden from --help and recorded when set.
func registerVLLMFlags(fs *pflag.FlagSet) {
	counter := new(int)
	for i := range vllmFlagTable {
		if fs.Lookup(vllmFlagTable[i].name) == nil {
			registerVLLMFlag(fs, &vllmFlagTable[i], counter)
		}
	}
}

// registerVLLMFlag registers f (and its --no- form) as a hidden flag of fs.
// counter orders the flags of fs by first use.
func registerVLLMFlag(fs *pflag.FlagSet, f *vllmFlag, counter *int) {
	usage := "vllm serve flag: accepted, no effect"
	if f.notYet != "" {
		usage = "vllm serve flag: not supported yet (needs " + f.notYet + ")"
	}
	use := &vllmUse{flag: f}
	add := func(name string, negative bool) {
		fs.Var(&vllmValue{use: use, negative: negative, counter: counter}, name, usage)
		fl := fs.Lookup(name)
		fl.Hidden = true
		if !f.kind.takesValue() || f.kind == vllmOptionalValue {
			fl.NoOptDefVal = bareFlag
		}
	}
	add(f.name, false)
	if f.kind == vllmBoolOptional {
		add("no-"+f.name, true)
	}
}

// vllmUses returns the vLLM flags set on a parsed fs in command-line order.
func vllmUses(fs *pflag.FlagSet) []*vllmUse {
	seen := map[*vllmUse]bool{}
	var uses []*vllmUse
	fs.VisitAll(func(fl *pflag.Flag) {
		v, ok := fl.Value.(*vllmValue)
		if !ok || !v.use.isSet || seen[v.use] {
			return
		}
		seen[v.use] = true
		uses = append(uses, v.use)
	})
	sort.Slice(uses, func(i, j int) bool { return uses[i].order < uses[j].order })
	return uses
}

// NoEffectFlags returns the `vllm serve` flags set on a parsed fs that the
// mock accepts with no effect, in command-line order, each as it would be
// written: "--tensor-parallel-size 2", "--trust-remote-code". serve prints
// them on one startup line.
func NoEffectFlags(fs *pflag.FlagSet) []string {
	var out []string
	for _, u := range vllmUses(fs) {
		if u.flag.notYet == "" || !u.enabled() {
			out = append(out, u.describe())
		}
	}
	for _, v := range simNoEffect(fs) {
		out = append(out, v.describe())
	}
	return out
}

// notYetVLLMFlags returns one "not supported yet" problem per vLLM flag set
// on fs that asks for a capability the mock does not have yet.
func notYetVLLMFlags(fs *pflag.FlagSet) []string {
	var out []string
	for _, u := range vllmUses(fs) {
		if u.flag.notYet != "" && u.enabled() {
			out = append(out, fmt.Sprintf("not supported yet: %s (needs %s)", u.describe(), u.flag.notYet))
		}
	}
	return append(out, notYetSimFlags(fs)...)
}
