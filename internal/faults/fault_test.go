package faults

import (
	"strings"
	"testing"
	"time"
)

func TestParse_AcceptsHeaderAndSpacedForms(t *testing.T) {
	tests := []struct {
		spec string
		want Fault
	}{
		{"truncate;after=5", Fault{Kind: Truncate, After: 5}},
		{"truncate after 5", Fault{Kind: Truncate, After: 5}},
		{"Truncate; after=0", Fault{Kind: Truncate, After: 0}},
		{"truncate", Fault{Kind: Truncate, After: DefaultAfter}},
		{"stall;after=3;for=250ms", Fault{Kind: Stall, After: 3, Duration: 250 * time.Millisecond}},
		{"stall after 3 for 2s", Fault{Kind: Stall, After: 3, Duration: 2 * time.Second}},
		{"stall", Fault{Kind: Stall, After: DefaultAfter, Duration: DefaultStall}},
		{"slow_first_token;for=40ms", Fault{Kind: SlowFirstToken, Duration: 40 * time.Millisecond}},
		{"slow-first-token", Fault{Kind: SlowFirstToken, Duration: DefaultFirstToken}},
		{"rate_limit;retry_after=3s", Fault{Kind: RateLimit, Duration: 3 * time.Second}},
		{"unavailable", Fault{Kind: Unavailable, Duration: DefaultRetryAfter}},
		{"server_error", Fault{Kind: ServerError}},
		{"context_length", Fault{Kind: ContextLength}},
		{"timeout", Fault{Kind: Timeout}},
		{"stream_error after 2", Fault{Kind: StreamError, After: 2}},
		{"reset;after=7", Fault{Kind: Reset, After: 7}},
		{"ok", Fault{Kind: None}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.spec)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.spec, got, err, tt.want)
		}
		// String renders a form Parse reads back to the same fault.
		if err == nil {
			again, err := Parse(got.String())
			if err != nil || again != got {
				t.Errorf("Parse(%q.String() = %q) = %+v, %v", tt.spec, got.String(), again, err)
			}
		}
	}
}

func TestParse_RejectsMalformedSpecsWithAClearMessage(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"", "empty fault specification"},
		{"explode", `unknown fault "explode"`},
		{"truncate;after=-1", "after must be a token count"},
		{"truncate;after=x", "after must be a token count"},
		{"truncate;after", `parameter "after" has no value`},
		{"stall;for=5", "for must be a duration with a unit"},
		{"stall;for=2h", "for must be a duration with a unit"},
		{"server_error;after=1", `fault server_error takes no parameter "after" (it takes none)`},
		{"truncate;for=1s", `fault truncate takes no parameter "for" (it takes: after)`},
		{"rate_limit;for=1s", `(it takes: retry_after)`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) error = %v, want it to contain %q", tt.spec, err, tt.want)
		}
	}
}
