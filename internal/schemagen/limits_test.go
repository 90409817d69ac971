package schemagen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// bombEnumNumbers is a 29 KB schema whose enum lists ~2,900 distinct
// decimals: every pairwise comparison parsed both sides as big.Rat, 114 s.
func bombEnumNumbers() []byte {
	var b strings.Builder
	b.WriteString(`{"type":"number","enum":[`)
	for i := 0; b.Len() < 29_000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d.%04de-%d", i%10, i, i%7)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// bombEnumStrings is a schema with a 20,000-value enum (over 300 s).
func bombEnumStrings() []byte {
	var b strings.Builder
	b.WriteString(`{"enum":[`)
	for i := range 20_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"v%d"`, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// bombAnyOf is a chain of k anyOf choices in one conjunction over a leaf
// no value satisfies: the generator's search backtracks through 2^k
// branch combinations before the schema is called unsatisfiable (19–58 s
// for 1–2.4 KB).
func bombAnyOf(k int) []byte {
	var b strings.Builder
	b.WriteString(`{"allOf":[`)
	for i := range k {
		fmt.Fprintf(&b, `{"anyOf":[{"type":"string","minLength":%d},{"type":"string","maxLength":%d}]},`, i, 100+i)
	}
	b.WriteString(`{"type":"string","minLength":5,"maxLength":3}]}`)
	return []byte(b.String())
}

func TestSchemaBombsStopFastWithTheBudgetError(t *testing.T) {
	cases := []struct {
		name   string
		schema []byte
		limit  Limit
	}{
		{"29 KB enum of numbers", bombEnumNumbers(), LimitEnum},
		{"20,000-value enum", bombEnumStrings(), LimitSchemaBytes}, // 169 KB: the first limit it meets
		{"20,000-value enum under a larger size limit", bombEnumStrings(), LimitEnum},
		{"nested anyOf over an unsatisfiable leaf, 1 KB", bombAnyOf(12), LimitSteps},
		{"nested anyOf over an unsatisfiable leaf, 2.4 KB", bombAnyOf(30), LimitSteps},
		{"100 KB schema", []byte(`{"description":"` + strings.Repeat("x", 100<<10) + `"}`), LimitSchemaBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			lim := Limits{}
			if strings.Contains(tc.name, "larger size") {
				lim.MaxSchemaBytes = 1 << 20
			}
			_, err := CompileContext(context.Background(), tc.schema, lim)
			took := time.Since(start)
			t.Logf("%d bytes: %v in %v", len(tc.schema), err, took)
			var be *BudgetError
			if !errors.Is(err, ErrBudget) || !errors.Is(err, ErrInvalidSchema) || !errors.As(err, &be) || be.Limit != tc.limit {
				t.Fatalf("error %v, want a %v budget error", err, tc.limit)
			}
			if took > 50*time.Millisecond*timeScale {
				t.Errorf("took %v, want < 50 ms", took)
			}
		})
	}
}

// TestLargeEnumsAreLinearWithoutTheirLimit lifts MaxEnum: a 20,000-value
// enum and the 29 KB enum compile (and generate, and validate) in linear
// time, because enum values are compared by a canonical key, not pairwise.
func TestLargeEnumsAreLinearWithoutTheirLimit(t *testing.T) {
	for _, schema := range [][]byte{bombEnumNumbers(), bombEnumStrings()} {
		start := time.Now()
		s, err := CompileContext(context.Background(), schema, Limits{MaxEnum: -1, MaxSchemaBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		out := s.Generate(7)
		if !s.Validate(out) {
			t.Errorf("generated %s does not validate", out)
		}
		if took := time.Since(start); took > 500*time.Millisecond*timeScale {
			t.Errorf("%d-byte enum schema: compile, generate and validate took %v", len(schema), took)
		}
	}
	// Numbers equal by value are the same enum value, however written.
	s, err := Compile([]byte(`{"enum":[1.50,2e0,{"a":[1,"x"],"b":null}],"uniqueItems":true}`))
	if err != nil {
		t.Fatal(err)
	}
	for doc, want := range map[string]bool{`1.5`: true, `15e-1`: true, `2`: true, `0.2e1`: true, `2.5`: false,
		`{"b":null,"a":[1.0,"x"]}`: true, `{"a":[1,"x"]}`: false, `"1.5"`: false} {
		if got := s.Validate([]byte(doc)); got != want {
			t.Errorf("Validate(%s) = %v, want %v", doc, got, want)
		}
	}
	u, err := Compile([]byte(`{"type":"array","uniqueItems":true}`))
	if err != nil {
		t.Fatal(err)
	}
	for doc, want := range map[string]bool{`[1,1.0]`: false, `[1,2,"1"]`: true, `[{"a":1,"b":2},{"b":2,"a":1}]`: false, `[-0,0]`: false} {
		if got := u.Validate([]byte(doc)); got != want {
			t.Errorf("uniqueItems Validate(%s) = %v, want %v", doc, got, want)
		}
	}
}

// TestSchemaWorkStopsWhenTheRequestIsGone runs the anyOf bomb with no step
// bound: it stops when its context is cancelled, with the context's error.
func TestSchemaWorkStopsWhenTheRequestIsGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := CompileContext(ctx, bombAnyOf(30), Limits{MaxSteps: -1})
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrBudget) {
		t.Fatalf("error %v, want the context's deadline", err)
	}
	if took > 200*time.Millisecond {
		t.Errorf("stopped %v after the start, the deadline was 30 ms", took)
	}
}

// TestGenerateAndValidateHaveTheirOwnBudget: a schema compiled under a
// small step budget refuses a validation that needs more, with ErrBudget,
// and GenerateContext reports a cancelled context.
func TestGenerateAndValidateHaveTheirOwnBudget(t *testing.T) {
	s, err := CompileContext(context.Background(), []byte(`{"type":"array","items":{"type":"integer"}}`), Limits{MaxSteps: 5000})
	if err != nil {
		t.Fatal(err)
	}
	big := "[" + strings.Repeat("1,", 20_000) + "1]"
	if ok, err := s.ValidateContext(context.Background(), []byte(big)); ok || !errors.Is(err, ErrBudget) {
		t.Errorf("ValidateContext of 20,001 items = %v, %v; want false and ErrBudget", ok, err)
	}
	if ok, err := s.ValidateContext(context.Background(), []byte(`[1,2,3]`)); !ok || err != nil {
		t.Errorf("ValidateContext([1,2,3]) = %v, %v", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	heavy, err := CompileContext(context.Background(), []byte(`{"type":"array","minItems":3000,"items":{"type":"string","minLength":10}}`), Limits{MaxSteps: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := heavy.GenerateContext(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("GenerateContext with a cancelled context: %v", err)
	}
	if a, b := heavy.Generate(3), heavy.Generate(3); string(a) != string(b) || !heavy.Validate(a) {
		t.Errorf("Generate(3) not deterministic or invalid")
	}
}
