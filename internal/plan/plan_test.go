package plan

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/tokenizer"
	"github.com/zeebo/xxh3"
)

// s18Prompt is the prompt of scenario S18: chat [{"role":"user","content":"Hello!"}].
func s18Prompt(t testing.TB) []uint32 {
	t.Helper()
	p := tokenizer.Encode(tokenizer.RenderChat([]tokenizer.Message{{Role: "user", Content: "Hello!"}}, nil, true, false))
	want := []uint32{1, 94002, 18, 38422, 35354, 2, 18, 1, 120736, 33288, 18}
	if !slices.Equal(p, want) {
		t.Fatalf("S18 prompt = %v, want %v", p, want)
	}
	return p
}

func s18Seed(t testing.TB) uint64 { return RequestSeed(nil, 0, s18Prompt(t)) }

func text(r *Result) string { return string(r.AppendText(nil, len(r.IDs))) }

func TestMix64(t *testing.T) {
	if Mix64(0) != 0 {
		t.Error("Mix64(0) != 0")
	}
	// First output of SplitMix64 seeded with 0.
	if got := Mix64(Phi); got != 0xE220A8397B1DCDAF {
		t.Errorf("Mix64(φ) = %#x", got)
	}
}

func TestRequestSeed(t *testing.T) {
	for _, v := range []int64{0, 42, -1, -9223372036854775808} {
		if got := RequestSeed(&v, 7, []uint32{1, 2}); got != uint64(v) {
			t.Errorf("RequestSeed(%d) = %#x", v, got)
		}
	}
	ref := func(server int64, prompt []uint32) uint64 {
		b := make([]byte, 4*len(prompt))
		for i, id := range prompt {
			binary.LittleEndian.PutUint32(b[4*i:], id)
		}
		return xxh3.HashSeed(b, uint64(server))
	}
	for _, n := range []int{0, 1, 4, 255, 256, 257, 5000} {
		prompt := make([]uint32, n)
		for i := range prompt {
			prompt[i] = uint32(i*7919) % tokenizer.VocabSize
		}
		for _, server := range []int64{0, 1, -5} {
			if got, want := RequestSeed(nil, server, prompt), ref(server, prompt); got != want {
				t.Errorf("n=%d server=%d: %#x, want %#x", n, server, got, want)
			}
		}
	}
	if RequestSeed(nil, 0, []uint32{1, 2}) == RequestSeed(nil, 1, []uint32{1, 2}) {
		t.Error("server seed ignored")
	}
	prompt := s18Prompt(t)
	if n := testing.AllocsPerRun(100, func() { RequestSeed(nil, 0, prompt) }); n != 0 {
		t.Errorf("RequestSeed allocates %v", n)
	}
}

func TestTokenAtAlphabet(t *testing.T) {
	counts := map[string]int{}
	for pos := 0; pos < 100000; pos++ {
		id := TokenAt(12345, pos%3, pos)
		switch {
		case id == tokenizer.Period:
			counts["."]++
		case id == tokenizer.Comma:
			counts[","]++
		case id >= 1000 && id < 7400:
			counts["w"]++
		default:
			t.Fatalf("TokenAt = %d", id)
		}
	}
	// k = r mod 20: 1/20 each for "." and ",".
	if counts["."] < 4500 || counts["."] > 5500 || counts[","] < 4500 || counts[","] > 5500 {
		t.Errorf("distribution %v", counts)
	}
}

// Scenario S18: seed-0 chat "Hello!" with max_tokens 4 (the API's stream
// tests replay it byte for byte).
func TestGoldenS18(t *testing.T) {
	s := s18Seed(t)
	r := Plan(Params{Seed: s, MaxTokens: 4, SetsMax: true, Chat: true, Mode: ModeMax, NaturalOutputLen: 128})
	if !slices.Equal(r.IDs, []uint32{5398, 1152, 2165, 3225}) || text(&r) != " puzo bevi funa jita" ||
		r.FinishReason != "length" || r.StopReason.Kind != StopNone || r.NaturalEnd {
		t.Errorf("S18: %+v %q", r, text(&r))
	}
	for pos, want := range []string{" puzo", " bevi", " funa", " jita"} {
		if got, re := r.Segment(pos); got != want || re {
			t.Errorf("Segment(%d) = %q, %v", pos, got, re)
		}
	}

	seed := int64(42)
	r = Plan(Params{Seed: RequestSeed(&seed, 0, s18Prompt(t)), MaxTokens: 8, SetsMax: true, Chat: true})
	if got := text(&r); got != " nefu voko doke nipe robo vofe vuzi puzu" {
		t.Errorf("seed 42: %q", got)
	}
	r = Plan(Params{Seed: s, Choice: 1, MaxTokens: 4, SetsMax: true, Chat: true})
	if got := text(&r); got != " zulu jopi rozi mubu" {
		t.Errorf("choice 1: %q", got)
	}
	// Generated text re-tokenizes to the generated ids.
	r = Plan(Params{Seed: s, MaxTokens: 2000, SetsMax: true, Mode: ModeMax})
	if got := tokenizer.Encode(text(&r)); !slices.Equal(got, r.IDs) {
		t.Error("generated text does not re-tokenize to the generated ids")
	}
}

// Scenario S19: turn 2's prompt starts with turn 1's prompt + output.
func TestS19PrefixProperty(t *testing.T) {
	p1 := s18Prompt(t)
	r := Plan(Params{Seed: s18Seed(t), MaxTokens: 4, SetsMax: true, Chat: true})
	p2 := tokenizer.Encode(tokenizer.RenderChat([]tokenizer.Message{
		{Role: "user", Content: "Hello!"},
		{Role: "assistant", Content: text(&r)},
		{Role: "user", Content: "More"},
	}, nil, true, false))
	if len(p2) != 27 || !slices.Equal(p2[:15], append(slices.Clone(p1), r.IDs...)) {
		t.Errorf("turn 2 prompt (%d) = %v", len(p2), p2)
	}
}

// Scenario S15: reasoning framing.
func TestGoldenS15(t *testing.T) {
	s := s18Seed(t)
	plan := func(ratio float64) Result {
		return Plan(Params{Seed: s, MaxTokens: 10, SetsMax: true, Chat: true, Reasoning: &Reasoning{StartID: 3, EndID: 4, Ratio: ratio}})
	}
	r := plan(0.6)
	reasoning, content := r.Texts(len(r.IDs))
	if r.ThinkLen != 6 || !slices.Equal(r.IDs, []uint32{3, 1152, 2165, 3225, 1571, 4, 5451, 16, 5876, 3840}) ||
		reasoning != " bevi funa jita dife" || content != " rape. saze lama" || r.FinishReason != "length" {
		t.Errorf("ratio 0.6: think_len %d ids %v %q %q", r.ThinkLen, r.IDs, reasoning, content)
	}
	wantSeg := []struct {
		text      string
		reasoning bool
	}{{"", false}, {" bevi", true}, {" funa", true}, {" jita", true}, {" dife", true}, {"", false},
		{" rape", false}, {".", false}, {" saze", false}, {" lama", false}}
	for pos, w := range wantSeg {
		if got, re := r.Segment(pos); got != w.text || re != w.reasoning {
			t.Errorf("Segment(%d) = %q %v, want %q %v", pos, got, re, w.text, w.reasoning)
		}
	}
	if got := text(&r); got != " bevi funa jita dife rape. saze lama" {
		t.Errorf("completions text %q", got)
	}
	// Partial delivery (engine ended early).
	if re, co := r.Texts(3); re != " bevi funa" || co != "" {
		t.Errorf("Texts(3) = %q %q", re, co)
	}

	r = plan(0.1)
	reasoning, content = r.Texts(len(r.IDs))
	if r.ThinkLen != 2 || r.IDs[0] != 3 || r.IDs[1] != 4 || reasoning != "" || content != " funa jita dife jofa rape. saze lama" {
		t.Errorf("ratio 0.1: think_len %d ids %v %q %q", r.ThinkLen, r.IDs, reasoning, content)
	}
	r = plan(0.05)
	if r.ThinkLen != 0 || r.IDs[0] != 5398 {
		t.Errorf("ratio 0.05: think_len %d ids %v", r.ThinkLen, r.IDs)
	}
	// Boundary ids are never rendered, even when they are word ids.
	r = Plan(Params{Seed: s, MaxTokens: 10, SetsMax: true, Chat: true, Reasoning: &Reasoning{StartID: 1000, EndID: 1001, Ratio: 0.6}})
	if re, co := r.Texts(10); re != " bevi funa jita dife" || co != " rape. saze lama" {
		t.Errorf("word boundary ids rendered: %q %q", re, co)
	}
}

func TestThinkLen(t *testing.T) {
	tests := []struct {
		osl   int
		ratio float64
		want  int
	}{
		{0, 0.5, 0}, {1, 1, 0}, {2, 0.5, 2}, {2, 0.4, 0}, {10, 0.6, 6}, {10, 0.1, 2}, {10, 0.05, 0},
		{10, 1, 10}, {10, 0.99, 9}, {10, 0, 0}, {3, 0.34, 2}, {100, 0.29, 28}, // float64 floor(100×0.29) = 28
	}
	for _, tc := range tests {
		if got := ThinkLen(tc.osl, tc.ratio); got != tc.want {
			t.Errorf("ThinkLen(%d, %v) = %d, want %d", tc.osl, tc.ratio, got, tc.want)
		}
	}
}

// Scenario S12: completions, prompt [11,12,13,14], no max_tokens,
// max_model_len 8 → M = min(16, 8−4) = 4 exactly.
func TestGoldenS12(t *testing.T) {
	s := RequestSeed(nil, 0, []uint32{11, 12, 13, 14})
	r := Plan(Params{Seed: s, MaxTokens: 4, SetsMax: false, Chat: false, Mode: ModeMax, NaturalOutputLen: 128})
	if got := text(&r); got != " huvo baji neru fubu" || r.FinishReason != "length" || len(r.IDs) != 4 {
		t.Errorf("S12: %v %q %s", r.IDs, got, r.FinishReason)
	}
}

// Random mode draws the natural length uniformly from [1, 2 × natural
// length]: for the S18 prompt and a median of 8 that is 15, and the body
// is the unshortened plan's first 14 tokens followed by EOS.
func TestRandomModeExample(t *testing.T) {
	s := s18Seed(t)
	if l := NaturalLen(ModeRandom, s, 0, 8, 0); l != 15 {
		t.Fatalf("NaturalLen = %d, want 15", l)
	}
	want := []uint32{5398, 1152, 2165, 3225, 1571, 3250, 5451, 16, 5876, 3840, 2446, 4800, 1917, 6883, 0}
	for _, setsMax := range []bool{true, false} {
		for _, chat := range []bool{true, false} {
			r := Plan(Params{Seed: s, MaxTokens: 16, SetsMax: setsMax, Chat: chat, Mode: ModeRandom, NaturalOutputLen: 8})
			if !slices.Equal(r.IDs, want) || r.FinishReason != "stop" || r.StopReason.Kind != StopNone || !r.NaturalEnd {
				t.Errorf("random (setsMax %v chat %v): %v %s %v", setsMax, chat, r.IDs, r.FinishReason, r.StopReason)
			}
			if got, _ := r.Segment(14); got != "" {
				t.Errorf("EOS rendered %q", got)
			}
			if got := text(&r); got != tokenizer.Decode(want[:14]) {
				t.Errorf("text %q", got)
			}
		}
	}
	// ignore_eos → M.
	r := Plan(Params{Seed: s, MaxTokens: 16, Mode: ModeRandom, NaturalOutputLen: 8, IgnoreEOS: true})
	if len(r.IDs) != 16 || r.FinishReason != "length" || r.NaturalEnd {
		t.Errorf("random ignore_eos: %v %s", r.IDs, r.FinishReason)
	}
	// min_tokens: the natural end is at least token min_tokens + 1; at
	// min_tokens ≥ M − 1 it cannot come before the limit.
	for mt := 0; mt <= 16; mt++ {
		r := Plan(Params{Seed: s, MaxTokens: 16, Mode: ModeRandom, NaturalOutputLen: 8, MinTokens: mt})
		if r.NaturalEnd && (len(r.IDs) < mt+1 || len(r.IDs) >= 16 || r.IDs[len(r.IDs)-1] != 0) {
			t.Errorf("min_tokens %d: %v", mt, r.IDs)
		}
		if (mt >= 15) == r.NaturalEnd {
			t.Errorf("min_tokens %d: natural end %v: %v", mt, r.NaturalEnd, r.IDs)
		}
	}
	// Random honours the natural length: lengths spread over [2, 2 × 8].
	seen := map[int]bool{}
	for seed := uint64(0); seed < 2000; seed++ {
		r := Plan(Params{Seed: seed, MaxTokens: 1000, Mode: ModeRandom, NaturalOutputLen: 8})
		if !r.NaturalEnd || len(r.IDs) < 2 || len(r.IDs) > 16 {
			t.Fatalf("seed %d: %d tokens, natural %v", seed, len(r.IDs), r.NaturalEnd)
		}
		seen[len(r.IDs)] = true
	}
	if len(seen) != 15 {
		t.Errorf("lengths seen: %v", seen)
	}
}

// A natural length equal to M is not a natural end: the limit cuts the
// answer first (vLLM's check_stop tests the length before EOS), so the
// output is M tokens, finish length, no EOS.
func TestNaturalLenEqualsM(t *testing.T) {
	for s := uint64(0); s < 1000; s++ {
		if NaturalLen(ModeRandom, s, 0, 4, 0) != 8 {
			continue
		}
		r := Plan(Params{Seed: s, MaxTokens: 8, Mode: ModeRandom, NaturalOutputLen: 4})
		if len(r.IDs) != 8 || r.NaturalEnd || r.FinishReason != "length" || r.IDs[7] == 0 {
			t.Errorf("seed %d: %v %s", s, r.IDs, r.FinishReason)
		}
		return
	}
	t.Fatal("no seed with L_nat == M")
}

// Max mode: exactly the limit, unless a chat request sets no limit, which
// ends at its natural length (the natural mode's draw).
func TestMaxMode(t *testing.T) {
	s := s18Seed(t)
	for _, nol := range []int{1, 2, 5, 128} {
		m := 32768 - 11
		r := Plan(Params{Seed: s, MaxTokens: m, Chat: true, Mode: ModeMax, NaturalOutputLen: nol})
		l := max(NaturalLen(ModeNatural, s, 0, nol, DefaultNaturalSigma), 2)
		if len(r.IDs) != l || !r.NaturalEnd || r.IDs[l-1] != 0 || r.FinishReason != "stop" || r.StopReason.Kind != StopNone {
			t.Errorf("nol %d: len %d (L_nat %d) %s", nol, len(r.IDs), l, r.FinishReason)
		}
		n := Plan(Params{Seed: s, MaxTokens: m, Chat: true, SetsMax: true, Mode: ModeNatural, NaturalOutputLen: nol})
		if !slices.Equal(n.IDs, r.IDs) {
			t.Errorf("nol %d: max mode without a limit differs from natural mode", nol)
		}
		// Body tokens equal the unshortened plan's.
		full := Plan(Params{Seed: s, MaxTokens: l - 1, SetsMax: true, Chat: true, Mode: ModeMax})
		if !slices.Equal(r.IDs[:l-1], full.IDs) {
			t.Errorf("nol %d: body differs", nol)
		}
	}
	// Chat with max, chat with ignore_eos, completions without max: exactly M.
	for _, p := range []Params{
		{Seed: s, MaxTokens: 300, SetsMax: true, Chat: true, NaturalOutputLen: 1, Mode: ModeMax},
		{Seed: s, MaxTokens: 300, Chat: true, IgnoreEOS: true, NaturalOutputLen: 1, Mode: ModeMax},
		{Seed: s, MaxTokens: 300, Chat: true, IgnoreEOS: true, NaturalOutputLen: 1, Mode: ModeNatural},
		{Seed: s, MaxTokens: 300, Chat: true, IgnoreEOS: true, NaturalOutputLen: 1, Mode: ModeRandom},
		{Seed: s, MaxTokens: 16, Chat: false, NaturalOutputLen: 1, Mode: ModeMax},
		{Seed: s, MaxTokens: 300, SetsMax: true, Chat: false, NaturalOutputLen: 1, Mode: ModeMax},
	} {
		r := Plan(p)
		if len(r.IDs) != p.MaxTokens || r.FinishReason != "length" || r.NaturalEnd || slices.Contains(r.IDs, 0) {
			t.Errorf("%+v: len %d %s", p, len(r.IDs), r.FinishReason)
		}
	}
	// min_tokens pushes the natural end to token min_tokens + 1.
	r := Plan(Params{Seed: s, MaxTokens: 50, Chat: true, NaturalOutputLen: 2, MinTokens: 10, Mode: ModeMax})
	if len(r.IDs) != 11 || !r.NaturalEnd {
		t.Errorf("min_tokens 10, median 2: %d", len(r.IDs))
	}
	r = Plan(Params{Seed: s, MaxTokens: 50, Chat: true, NaturalOutputLen: 2, MinTokens: 49, Mode: ModeMax})
	if len(r.IDs) != 50 || r.NaturalEnd {
		t.Errorf("min_tokens 49 of 50: %d %v", len(r.IDs), r.NaturalEnd)
	}
	// M = 0 (prefill-only replay): empty plan.
	r = Plan(Params{Seed: s, MaxTokens: 0, Chat: true, NaturalOutputLen: 128, Mode: ModeRandom})
	if len(r.IDs) != 0 || r.FinishReason != "length" {
		t.Errorf("M = 0: %+v", r)
	}
}

// Natural end combined with reasoning: osl = B = L_nat − 1.
func TestNaturalEndWithReasoning(t *testing.T) {
	s := s18Seed(t)
	r := Plan(Params{Seed: s, MaxTokens: 16, Mode: ModeRandom, NaturalOutputLen: 8, Chat: true, Reasoning: &Reasoning{StartID: 3, EndID: 4, Ratio: 0.5}})
	// L_nat 15, B 14, think_len 7.
	if len(r.IDs) != 15 || r.ThinkLen != 7 || r.IDs[0] != 3 || r.IDs[6] != 4 || r.IDs[14] != 0 {
		t.Errorf("%v think_len %d", r.IDs, r.ThinkLen)
	}
}

func s18Ten(t *testing.T) Params {
	// ids 5398 1152 2165 3225 1571 3250 5451 16 5876 3840
	// text " puzo bevi funa jita dife jofa rape. saze lama"
	return Params{Seed: s18Seed(t), MaxTokens: 10, SetsMax: true, Chat: true}
}

func TestStopTokenIDs(t *testing.T) {
	p := s18Ten(t)
	p.StopTokenIDs = []uint32{99, 2165}
	r := Plan(p)
	if !slices.Equal(r.IDs, []uint32{5398, 1152, 2165}) || r.FinishReason != "stop" ||
		r.StopReason != (StopReason{Kind: StopTokenID, TokenID: 2165}) || text(&r) != " puzo bevi funa" {
		t.Errorf("stop id: %v %s %+v %q", r.IDs, r.FinishReason, r.StopReason, text(&r))
	}
	// min_tokens: positions < min_tokens are not checked ("." is at position 7).
	p.StopTokenIDs = []uint32{16}
	p.MinTokens = 7
	if r = Plan(p); len(r.IDs) != 8 || r.StopReason.TokenID != 16 {
		t.Errorf("min_tokens 7: %v %+v", r.IDs, r.StopReason)
	}
	p.MinTokens = 8
	if r = Plan(p); len(r.IDs) != 10 || r.FinishReason != "length" || r.StopReason.Kind != StopNone {
		t.Errorf("min_tokens 8: %v %+v", r.IDs, r.StopReason)
	}
	// Stop rules see the framed sequence: the end-of-thinking id can stop.
	p = s18Ten(t)
	p.Reasoning = &Reasoning{StartID: 3, EndID: 4, Ratio: 0.6}
	p.StopTokenIDs = []uint32{4}
	r = Plan(p)
	if re, co := r.Texts(len(r.IDs)); len(r.IDs) != 6 || r.StopReason.TokenID != 4 || re != " bevi funa jita dife" || co != "" {
		t.Errorf("stop on </think>: %v %q %q", r.IDs, re, co)
	}
	// EOS of a natural end listed in stop_token_ids: step 4 applies to it
	// (stop_reason 0); without it, stop_reason null.
	p = Params{Seed: s18Seed(t), MaxTokens: 16, Mode: ModeRandom, NaturalOutputLen: 8, StopTokenIDs: []uint32{0}}
	r = Plan(p)
	if len(r.IDs) != 15 || r.StopReason != (StopReason{Kind: StopTokenID, TokenID: 0}) || !r.NaturalEnd {
		t.Errorf("EOS listed: %v %+v", r.IDs, r.StopReason)
	}
}

func TestStopStrings(t *testing.T) {
	type want struct {
		n         int
		reason    string
		text      string
		segments  []string // segments from position 0
		reasoning string   // with the S15 framing only
	}
	tests := []struct {
		name    string
		stop    []string
		include bool
		minTok  int
		w       want
	}{
		{"cut before", []string{"funa"}, false, 0,
			want{3, "funa", " puzo bevi ", []string{" puzo", " bevi", " "}, ""}},
		{"include, ends at token end", []string{"funa"}, true, 0,
			want{3, "funa", " puzo bevi funa", []string{" puzo", " bevi", " funa"}, ""}},
		{"spanning tokens, cut before", []string{"bevi fu"}, false, 0,
			want{3, "bevi fu", " puzo ", []string{" puzo", " ", ""}, ""}},
		{"spanning tokens, include cuts newest token", []string{"bevi fu"}, true, 0,
			want{3, "bevi fu", " puzo bevi fu", []string{" puzo", " bevi", " fu"}, ""}},
		{"whole text from start", []string{" puzo"}, false, 0,
			want{1, " puzo", "", []string{""}, ""}},
		{"punctuation", []string{". s"}, false, 0,
			want{9, ". s", " puzo bevi funa jita dife jofa rape", nil, ""}},
		{"earliest position wins", []string{"lama", "jita", "funa"}, false, 0,
			want{3, "funa", " puzo bevi ", nil, ""}},
		{"same position: list order wins", []string{"a j", "jit"}, false, 0,
			want{4, "a j", " puzo bevi fun", []string{" puzo", " bevi", " fun", ""}, ""}},
		{"same position: list order wins (reversed)", []string{"jit", "a j"}, false, 0,
			want{4, "jit", " puzo bevi funa ", []string{" puzo", " bevi", " funa", " "}, ""}},
		{"min_tokens skips earlier occurrence", []string{"bevi"}, false, 2,
			want{10, "", " puzo bevi funa jita dife jofa rape. saze lama", nil, ""}},
		{"min_tokens: occurrence ending at min_tokens counts", []string{"bevi f"}, false, 2,
			want{3, "bevi f", " puzo ", nil, ""}},
		{"no match", []string{"xyz", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"}, false, 0,
			want{10, "", " puzo bevi funa jita dife jofa rape. saze lama", nil, ""}},
		{"empty stop string ignored", []string{""}, false, 0,
			want{10, "", " puzo bevi funa jita dife jofa rape. saze lama", nil, ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := s18Ten(t)
			p.Stop = tc.stop
			p.IncludeStopStrInOutput = tc.include
			p.MinTokens = tc.minTok
			r := Plan(p)
			if len(r.IDs) != tc.w.n || text(&r) != tc.w.text {
				t.Errorf("got %d tokens %q, want %d %q", len(r.IDs), text(&r), tc.w.n, tc.w.text)
			}
			if tc.w.reason == "" {
				if r.FinishReason != "length" || r.StopReason.Kind != StopNone {
					t.Errorf("finish %s %+v", r.FinishReason, r.StopReason)
				}
			} else if r.FinishReason != "stop" || r.StopReason != (StopReason{Kind: StopString, String: tc.w.reason}) {
				t.Errorf("finish %s %+v", r.FinishReason, r.StopReason)
			}
			for pos, w := range tc.w.segments {
				if got, _ := r.Segment(pos); got != w {
					t.Errorf("Segment(%d) = %q, want %q", pos, got, w)
				}
			}
			if !slices.Equal(r.IDs, Plan(s18Ten(t)).IDs[:len(r.IDs)]) {
				t.Error("ids are not a prefix of the unstopped plan")
			}
		})
	}
}

// Stop strings with reasoning framing: the visible text is reasoning +
// content (boundaries skipped), so a stop string can span the boundary and
// the cut can remove reasoning text.
func TestStopStringsWithReasoning(t *testing.T) {
	base := s18Ten(t)
	base.Reasoning = &Reasoning{StartID: 3, EndID: 4, Ratio: 0.6}
	// reasoning " bevi funa jita dife", content " rape. saze lama"
	tests := []struct {
		stop      string
		include   bool
		n         int
		reasoning string
		content   string
	}{
		{"jita", false, 4, " bevi funa ", ""},
		{"dife rape", false, 7, " bevi funa jita ", ""},
		{"dife rape", true, 7, " bevi funa jita dife", " rape"},
		{"e ra", true, 7, " bevi funa jita dife", " ra"},
		{"saze", false, 9, " bevi funa jita dife", " rape. "},
	}
	for _, tc := range tests {
		p := base
		p.Stop = []string{tc.stop}
		p.IncludeStopStrInOutput = tc.include
		r := Plan(p)
		re, co := r.Texts(len(r.IDs))
		if len(r.IDs) != tc.n || re != tc.reasoning || co != tc.content || r.StopReason.String != tc.stop {
			t.Errorf("stop %q include %v: %d tokens %q %q, want %d %q %q", tc.stop, tc.include, len(r.IDs), re, co, tc.n, tc.reasoning, tc.content)
		}
	}
}

// The stop token id wins over a stop string completed by the same token.
func TestStopTokenBeatsStringAtSamePosition(t *testing.T) {
	p := s18Ten(t)
	p.StopTokenIDs = []uint32{2165}
	p.Stop = []string{"funa"}
	r := Plan(p)
	if len(r.IDs) != 3 || r.StopReason.Kind != StopTokenID || text(&r) != " puzo bevi funa" {
		t.Errorf("%v %+v %q", r.IDs, r.StopReason, text(&r))
	}
	// Earlier stop string beats a later stop token.
	p.StopTokenIDs = []uint32{3225}
	p.Stop = []string{"bevi"}
	if r = Plan(p); len(r.IDs) != 2 || r.StopReason.Kind != StopString {
		t.Errorf("%v %+v", r.IDs, r.StopReason)
	}
}

// A natural end whose body contains no stop match still ends with EOS,
// finish stop, stop_reason null.
func TestNaturalEndWithStops(t *testing.T) {
	r := Plan(Params{Seed: s18Seed(t), MaxTokens: 16, Mode: ModeRandom, NaturalOutputLen: 8, Stop: []string{"qqq"}, StopTokenIDs: []uint32{7}})
	if len(r.IDs) != 15 || !r.NaturalEnd || r.FinishReason != "stop" || r.StopReason.Kind != StopNone {
		t.Errorf("%v %s %+v", r.IDs, r.FinishReason, r.StopReason)
	}
	// A stop string before the EOS ends the output without EOS.
	r = Plan(Params{Seed: s18Seed(t), MaxTokens: 16, Mode: ModeRandom, NaturalOutputLen: 8, Stop: []string{"saze"}})
	if len(r.IDs) != 9 || r.NaturalEnd || r.StopReason.String != "saze" {
		t.Errorf("%v %+v", r.IDs, r.StopReason)
	}
}

// refStops is a direct, slow implementation of Plan's steps 4–5 over the
// full visible text (vLLM's window search), used as the oracle.
func refStops(p Params) (ids []uint32, reason StopReason, finish, visible string) {
	q := p
	q.Stop, q.StopTokenIDs = nil, nil
	base := Plan(q)
	var txt string
	for pos, id := range base.IDs {
		seg, _ := base.Segment(pos)
		prev := len(txt)
		txt += seg
		if pos < max(p.MinTokens, 0) {
			continue
		}
		if slices.Contains(p.StopTokenIDs, id) {
			return base.IDs[:pos+1], StopReason{Kind: StopTokenID, TokenID: id}, "stop", txt
		}
		for _, s := range p.Stop {
			if s == "" {
				continue
			}
			start := max(0, prev-len(s)+1)
			if i := strings.Index(txt[start:], s); i >= 0 {
				cut := start + i
				if p.IncludeStopStrInOutput {
					cut += len(s)
				}
				return base.IDs[:pos+1], StopReason{Kind: StopString, String: s}, "stop", txt[:cut]
			}
		}
	}
	return base.IDs, StopReason{}, string(base.FinishReason), txt
}

// Differential test against the oracle, with long outputs (window
// compaction) and long stop strings taken from the generated text.
func TestStopsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for iter := 0; iter < 400; iter++ {
		m := 1 + rng.IntN(60)
		if iter%5 == 0 {
			m = 1 + rng.IntN(6000)
		}
		p := Params{Seed: rng.Uint64(), Choice: rng.IntN(3), MaxTokens: m, SetsMax: rng.IntN(2) == 0,
			Chat: rng.IntN(2) == 0, Mode: []LenMode{ModeMax, ModeRandom, ModeNatural}[rng.IntN(3)], NaturalOutputLen: 1 + rng.IntN(200),
			MinTokens: rng.IntN(m + 1), IncludeStopStrInOutput: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			p.MinTokens = 0
		}
		if rng.IntN(3) == 0 {
			p.Reasoning = &Reasoning{StartID: 3, EndID: 4, Ratio: rng.Float64()}
		}
		q := p
		q.Stop, q.StopTokenIDs = nil, nil
		full := text(ptr(Plan(q)))
		for range rng.IntN(4) {
			if len(full) == 0 {
				break
			}
			l := 1 + rng.IntN(12)
			if rng.IntN(8) == 0 {
				l = 1 + rng.IntN(1024)
			}
			i := rng.IntN(len(full))
			p.Stop = append(p.Stop, full[i:min(len(full), i+l)])
		}
		if rng.IntN(3) == 0 {
			p.Stop = append(p.Stop, "no such text")
		}
		for range rng.IntN(3) {
			p.StopTokenIDs = append(p.StopTokenIDs, []uint32{16, 17, 0, 4, uint32(1000 + rng.IntN(6400))}[rng.IntN(5)])
		}
		wantIDs, wantReason, wantFinish, wantText := refStops(p)
		r := Plan(p)
		if !slices.Equal(r.IDs, wantIDs) || r.StopReason != wantReason || string(r.FinishReason) != wantFinish || text(&r) != wantText {
			t.Fatalf("iter %d %+v:\n got %d ids %+v %s %q\nwant %d ids %+v %s %q", iter, p,
				len(r.IDs), r.StopReason, r.FinishReason, text(&r), len(wantIDs), wantReason, wantFinish, wantText)
		}
		var re, co strings.Builder
		for pos := range r.IDs {
			seg, isR := r.Segment(pos)
			if isR {
				re.WriteString(seg)
			} else {
				co.WriteString(seg)
			}
		}
		if gr, gc := r.Texts(len(r.IDs)); gr != re.String() || gc != co.String() || gr+gc != wantText {
			t.Fatalf("iter %d: Texts %q %q", iter, gr, gc)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestStopReasonJSON(t *testing.T) {
	v := struct {
		A, B, C StopReason
	}{StopReason{}, StopReason{Kind: StopString, String: "a\"<b>\n"}, StopReason{Kind: StopTokenID, TokenID: 2165}}
	b, err := json.Marshal(v)
	if err != nil || string(b) != `{"A":null,"B":"a\"\u003cb\u003e\n","C":2165}` {
		t.Errorf("%s %v", b, err)
	}
	if v.A.Value() != nil || v.B.Value() != "a\"<b>\n" || v.C.Value() != uint32(2165) {
		t.Error("Value")
	}
}

func TestAllocations(t *testing.T) {
	p := Params{Seed: 1, MaxTokens: 128, SetsMax: true, Chat: true, Reasoning: &Reasoning{StartID: 3, EndID: 4, Ratio: 0.5}}
	if n := testing.AllocsPerRun(100, func() { Plan(p) }); n != 1 {
		t.Errorf("Plan allocates %v times, want 1", n)
	}
	p.StopTokenIDs = []uint32{7, 8, 9}
	if n := testing.AllocsPerRun(100, func() { Plan(p) }); n != 1 {
		t.Errorf("Plan with stop ids allocates %v times, want 1", n)
	}
	r := Plan(p)
	if n := testing.AllocsPerRun(100, func() {
		for pos := range r.IDs {
			r.Segment(pos)
		}
	}); n != 0 {
		t.Errorf("Segment allocates %v times", n)
	}
}

func BenchmarkPlan(b *testing.B) {
	p := Params{Seed: 1, MaxTokens: 128, SetsMax: true, Chat: true}
	b.ReportAllocs()
	for b.Loop() {
		Plan(p)
	}
}

func BenchmarkPlanStops(b *testing.B) {
	p := Params{Seed: 1, MaxTokens: 128, SetsMax: true, Chat: true, Stop: []string{"zzzz", "qq qq"}, StopTokenIDs: []uint32{5}}
	b.ReportAllocs()
	for b.Loop() {
		Plan(p)
	}
}

func BenchmarkSegment(b *testing.B) {
	r := Plan(Params{Seed: 1, MaxTokens: 128, SetsMax: true, Reasoning: &Reasoning{StartID: 3, EndID: 4, Ratio: 0.5}})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Segment(i & 127)
		i++
	}
}
