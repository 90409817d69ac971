package faults

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Script is a parsed failure script: rules tried in order for each request,
// the first match deciding its fault. A request no rule matches falls
// through to the random failure rate. The grammar (docs/FAULTS.md):
//
//	script    = rule { (";" | newline) rule }     ("#" starts a comment)
//	rule      = selector ":" action | ("then" | "otherwise") action
//	selector  = "first" N | "next" N | "every" N["st"|"nd"|"rd"|"th"]
//	          | "requests" N "-" M | "from" DURATION ["to" DURATION]
//	action    = "ok" | fault            (a fault as Parse reads it)
//
// Requests are numbered 1, 2, 3, … in arrival order; "next N" continues
// where the previous first/next range ended; "every 10th" matches requests
// 10, 20, 30, …; "from 30s to 40s" matches requests arriving in [30 s, 40 s)
// after the script was installed; "then ACTION" matches every request and
// must be the last rule.
type Script struct {
	rules []rule
	text  string
}

type selectorKind uint8

const (
	selRange  selectorKind = iota // requests lo..hi (first, next, requests)
	selEvery                      // request number divisible by every
	selWindow                     // arrival time in [from, to)
	selAlways                     // then / otherwise
)

type rule struct {
	kind     selectorKind
	lo, hi   uint64
	every    uint64
	from, to time.Duration // to < 0: open-ended
	fault    Fault
}

// String returns the script's source text.
func (s *Script) String() string {
	if s == nil {
		return ""
	}
	return s.text
}

// ParseScript parses a failure script. An empty script (only blanks and
// comments) is valid and matches nothing.
func ParseScript(text string) (*Script, error) {
	s := &Script{text: text}
	var cursor uint64 // end of the last first/next range
	always := false
	for lineNo, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, clause := range strings.Split(line, ";") {
			clause = strings.TrimSpace(clause)
			if clause == "" {
				continue
			}
			if always {
				return nil, fmt.Errorf("failure script line %d: %q comes after a 'then' rule and can never match", lineNo+1, clause)
			}
			r, err := parseRule(clause, &cursor)
			if err != nil {
				return nil, fmt.Errorf("failure script line %d: %q: %w", lineNo+1, clause, err)
			}
			always = r.kind == selAlways
			s.rules = append(s.rules, r)
		}
	}
	return s, nil
}

func parseRule(clause string, cursor *uint64) (rule, error) {
	lower := strings.ToLower(clause)
	for _, kw := range []string{"then", "otherwise"} {
		if rest, ok := strings.CutPrefix(lower, kw+" "); ok && !strings.Contains(rest, ":") {
			f, err := parseAction(rest)
			return rule{kind: selAlways, fault: f}, err
		}
	}
	sel, action, ok := strings.Cut(clause, ":")
	if !ok {
		return rule{}, fmt.Errorf("want 'SELECTOR: ACTION' or 'then ACTION'")
	}
	f, err := parseAction(action)
	if err != nil {
		return rule{}, err
	}
	words := strings.Fields(strings.ToLower(sel))
	if len(words) == 0 {
		return rule{}, fmt.Errorf("missing selector before ':'")
	}
	r := rule{fault: f}
	switch {
	case words[0] == "first" && len(words) == 2, words[0] == "next" && len(words) == 2:
		n, err := count(words[1])
		if err != nil {
			return rule{}, err
		}
		lo := uint64(1)
		if words[0] == "next" {
			lo = *cursor + 1
		}
		r.kind, r.lo, r.hi = selRange, lo, lo+n-1
		*cursor = r.hi
	case words[0] == "every" && len(words) == 2:
		n, err := count(ordinal(words[1]))
		if err != nil {
			return rule{}, err
		}
		r.kind, r.every = selEvery, n
	case words[0] == "requests" && len(words) == 2:
		a, b, ok := strings.Cut(words[1], "-")
		lo, err1 := count(a)
		hi, err2 := count(b)
		if !ok || err1 != nil || err2 != nil || hi < lo {
			return rule{}, fmt.Errorf("want 'requests N-M' with 1 <= N <= M, got %q", words[1])
		}
		r.kind, r.lo, r.hi = selRange, lo, hi
	case words[0] == "from" && (len(words) == 2 || len(words) == 4 && words[2] == "to"):
		from, err := duration(words[1])
		if err != nil {
			return rule{}, err
		}
		r.kind, r.from, r.to = selWindow, from, -1
		if len(words) == 4 {
			if r.to, err = duration(words[3]); err != nil {
				return rule{}, err
			}
			if r.to <= r.from {
				return rule{}, fmt.Errorf("window 'from %s to %s' is empty", words[1], words[3])
			}
		}
	default:
		return rule{}, fmt.Errorf("unknown selector %q (want first N, next N, every Nth, requests N-M, from T [to T])", strings.TrimSpace(sel))
	}
	return r, nil
}

func parseAction(s string) (Fault, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Fault{}, fmt.Errorf("missing action after ':' (a fault, or ok)")
	}
	if strings.Contains(s, "=") {
		// Script actions use the spaced form; the key=value form is the
		// header's, and would be ambiguous with ';' separating rules.
		return Fault{}, fmt.Errorf("write fault parameters as 'after 5', not 'after=5', in a script")
	}
	return Parse(s)
}

// ordinal strips an English ordinal suffix: 10th → 10, 1st → 1.
func ordinal(s string) string {
	for _, suf := range []string{"st", "nd", "rd", "th"} {
		if t, ok := strings.CutSuffix(s, suf); ok {
			return t
		}
	}
	return s
}

func count(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("want a positive whole number, got %q", s)
	}
	return n, nil
}

func duration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration with a unit (30s, 1m30s), got %q", s)
	}
	return d, nil
}

// Match returns the fault of the n-th request (1-based) arriving elapsed
// after the script was installed, and whether any rule matched.
func (s *Script) Match(n uint64, elapsed time.Duration) (Fault, bool) {
	if s == nil {
		return Fault{}, false
	}
	for i := range s.rules {
		r := &s.rules[i]
		var hit bool
		switch r.kind {
		case selRange:
			hit = n >= r.lo && n <= r.hi
		case selEvery:
			hit = n%r.every == 0
		case selWindow:
			hit = elapsed >= r.from && (r.to < 0 || elapsed < r.to)
		case selAlways:
			hit = true
		}
		if hit {
			return r.fault, true
		}
	}
	return Fault{}, false
}
