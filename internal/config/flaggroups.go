package config

import (
	"strings"

	"github.com/spf13/pflag"
)

// FlagGroup is the section of --help a flag is listed in.
type FlagGroup int

// The sections of --help, in the order they are printed. The zero value is
// no group: a flag of flagTable without one fails TestFlagTableGroups, so a
// new flag cannot be merged without being given its section.
const (
	GroupServer FlagGroup = iota + 1
	GroupEngine
	GroupKVCache
	GroupTiming
	GroupTokenizer
	GroupTools
	GroupLoRA
	GroupDisaggregation
	GroupObservability
	GroupFaults
	GroupVLLM
)

var groupTitles = map[FlagGroup]string{
	GroupServer:         "Server and API",
	GroupEngine:         "Engine and scheduler",
	GroupKVCache:        "KV cache",
	GroupTiming:         "Timing model",
	GroupTokenizer:      "Tokenizer and chat template",
	GroupTools:          "Tool calls",
	GroupLoRA:           "LoRA adapters",
	GroupDisaggregation: "Disaggregated prefill/decode",
	GroupObservability:  "Observability (metrics, logs, KV events, FPM)",
	GroupFaults:         "Rate limits and fault injection",
	GroupVLLM:           "vLLM compatibility",
}

// String returns the section's title as --help prints it.
func (g FlagGroup) String() string {
	if t, ok := groupTitles[g]; ok {
		return t
	}
	return "Other"
}

// FlagGroups returns every group in --help order.
func FlagGroups() []FlagGroup {
	gs := make([]FlagGroup, 0, len(groupTitles))
	for g := GroupServer; g <= GroupVLLM; g++ {
		gs = append(gs, g)
	}
	return gs
}

// GroupAnnotation is the pflag annotation that carries a flag's --help
// section title (FlagGroup.String, or a subcommand's own section).
const GroupAnnotation = "mocker-server/group"

// Scope is a set of subcommands a configuration flag means something to.
type Scope uint8

const (
	// ScopeServer: serve and fleet, which run servers.
	ScopeServer Scope = 1 << iota
	// ScopeReplay: replay, which simulates engines offline (no HTTP, no
	// ZMQ, no text: only what shapes the engine's schedule and timing).
	ScopeReplay

	// ScopeAll: every subcommand.
	ScopeAll = ScopeServer | ScopeReplay
)

// SetFlagGroup records the --help section of the flag name on fs.
func SetFlagGroup(fs *pflag.FlagSet, name, title string) {
	_ = fs.SetAnnotation(name, GroupAnnotation, []string{title})
}

// FlagGroupTitle returns the --help section recorded on f ("" = none).
func FlagGroupTitle(f *pflag.Flag) string {
	if t := f.Annotations[GroupAnnotation]; len(t) == 1 {
		return t[0]
	}
	return ""
}

// HideOutOfScope hides from --help the configuration flags on fs (and
// their --no- forms) that mean nothing to the subcommands of scope.
func HideOutOfScope(fs *pflag.FlagSet, scope Scope) {
	for _, s := range flagTable {
		if s.scope&scope != 0 {
			continue
		}
		_ = fs.MarkHidden(s.name)
		if s.negatable {
			_ = fs.MarkHidden("no-" + s.name)
		}
	}
}

// ChangedOutOfScope returns the configuration flags given on fs ("--name",
// as typed in canonical form) that mean nothing to the subcommands of scope.
func ChangedOutOfScope(fs *pflag.FlagSet, scope Scope) []string {
	var out []string
	for _, s := range flagTable {
		if s.scope&scope != 0 {
			continue
		}
		for _, name := range []string{s.name, "no-" + s.name} {
			if f := fs.Lookup(name); f != nil && f.Changed {
				out = append(out, "--"+name)
			}
		}
	}
	return out
}

// negationUsage is the --help text of a negatable flag: its own usage and
// how to turn it off (the --no- form itself is hidden, so that help never
// reads "--no-x  disable --x (default true)").
func negationUsage(s flagSpec) string {
	if !s.negatable || strings.Contains(s.usage, "--no-"+s.name) {
		return s.usage
	}
	return s.usage + " (--no-" + s.name + " turns it off)"
}
