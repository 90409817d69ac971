package faults

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// kindsOf runs a script over requests 1..n arriving at elapsed(i) and
// returns the kind each one got ("" = no rule matched).
func kindsOf(t *testing.T, text string, n int, elapsed func(i int) time.Duration) []Kind {
	t.Helper()
	s, err := ParseScript(text)
	if err != nil {
		t.Fatalf("ParseScript(%q): %v", text, err)
	}
	out := make([]Kind, n)
	for i := range n {
		if f, ok := s.Match(uint64(i+1), elapsed(i)); ok {
			out[i] = f.Kind
		}
	}
	return out
}

func atZero(int) time.Duration { return 0 }

func TestScript_TheDocumentedFormsWorkAsWritten(t *testing.T) {
	got := kindsOf(t, "first 3: rate_limit; then ok", 6, atZero)
	want := []Kind{RateLimit, RateLimit, RateLimit, None, None, None}
	if !slices.Equal(got, want) {
		t.Errorf("first 3 = %v, want %v", got, want)
	}

	s, _ := ParseScript("every 10th: truncate after 5")
	for n := uint64(1); n <= 30; n++ {
		f, ok := s.Match(n, 0)
		if ok != (n%10 == 0) || ok && (f.Kind != Truncate || f.After != 5) {
			t.Errorf("every 10th: request %d = %+v, %v", n, f, ok)
		}
	}

	got = kindsOf(t, "from 30s to 40s: unavailable", 5, func(i int) time.Duration {
		return []time.Duration{29 * time.Second, 30 * time.Second, 35 * time.Second, 39999 * time.Millisecond, 40 * time.Second}[i]
	})
	want = []Kind{"", Unavailable, Unavailable, Unavailable, ""}
	if !slices.Equal(got, want) {
		t.Errorf("from 30s to 40s = %v, want %v", got, want)
	}
}

func TestScript_RulesAreTriedInOrderAndNextContinuesTheRange(t *testing.T) {
	text := `# a file with comments
first 2: server_error
next 2: rate_limit retry_after 2s   # requests 3-4
requests 7-8: stall after 1 for 10ms
every 5th: reset after 0
otherwise ok`
	got := kindsOf(t, text, 10, atZero)
	want := []Kind{ServerError, ServerError, RateLimit, RateLimit, Reset, None, Stall, Stall, None, Reset}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// Without a then rule, unmatched requests fall through ("").
	got = kindsOf(t, "first 1: timeout", 2, atZero)
	if !slices.Equal(got, []Kind{Timeout, ""}) {
		t.Errorf("fall-through: %v", got)
	}
	got = kindsOf(t, "from 1m: unavailable", 2, func(i int) time.Duration { return time.Duration(i) * 2 * time.Minute })
	if !slices.Equal(got, []Kind{"", Unavailable}) {
		t.Errorf("open window: %v", got)
	}
}

func TestScript_RejectsMalformedScriptsNamingTheLine(t *testing.T) {
	tests := []struct{ text, want string }{
		{"first three: rate_limit", `line 1: "first three: rate_limit": want a positive whole number, got "three"`},
		{"first 0: rate_limit", "want a positive whole number"},
		{"ok\nevery 2nd rate_limit", `line 1: "ok": want 'SELECTOR: ACTION'`},
		{"first 2: truncate after=5", "write fault parameters as 'after 5'"},
		{"first 2:", "missing action"},
		{"sometimes: rate_limit", `unknown selector "sometimes"`},
		{"from 40s to 30s: unavailable", "is empty"},
		{"from soon: unavailable", "want a duration with a unit"},
		{"then ok; first 2: rate_limit", "comes after a 'then' rule and can never match"},
		{"requests 5-2: ok", "want 'requests N-M'"},
		{"first 2: explode", `unknown fault "explode"`},
	}
	for _, tt := range tests {
		_, err := ParseScript(tt.text)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseScript(%q) error = %v, want %q", tt.text, err, tt.want)
		}
	}
	if s, err := ParseScript("  # only a comment\n\n"); err != nil {
		t.Errorf("empty script: %v", err)
	} else if _, ok := s.Match(1, 0); ok {
		t.Error("an empty script matched")
	}
}
