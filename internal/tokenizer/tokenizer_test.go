package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Worked examples of the tokenizer and template (also what /tokenize answers
// for them).
func TestSpecExamples(t *testing.T) {
	chat := RenderChat([]Message{{Role: "user", Content: "Hello!"}}, nil, true, false)
	tests := []struct {
		text   string
		pieces []string // nil: only the count is checked
		count  int
		ids    []uint32
	}{
		{"Hello, world!", []string{"Hello", ",", " world", "!"}, 4, []uint32{38422, 17, 69937, 35354}},
		{"Hello world foo", []string{"Hello", " world", " foo"}, 3, []uint32{38422, 69937, 36422}},
		{"Hello world bar", []string{"Hello", " world", " bar"}, 3, []uint32{38422, 69937, 77739}},
		{"The quick brown fox jumps over the lazy dog.",
			[]string{"The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "."}, 10,
			[]uint32{45135, 52001, 17190, 49272, 81760, 44560, 47792, 70344, 28316, 16}},
		{"tokenization  is 12345 fun\n",
			[]string{"tokeni", "zation", " ", " is", " 123", "45", " fun", "\n"}, 8,
			[]uint32{109085, 63285, 38863, 35200, 95785, 117964, 96456, 18}},
		{" baba kelo", []string{" baba", " kelo"}, 2, []uint32{1000, 3518}},
		{chat,
			[]string{"<|im_start|>", "user", "\n", "Hello", "!", "<|im_end|>", "\n", "<|im_start|>", "assist", "ant", "\n"}, 11,
			[]uint32{1, 94002, 18, 38422, 35354, 2, 18, 1, 120736, 33288, 18}},
	}
	for _, tc := range tests {
		if got := Pieces(tc.text); !slices.Equal(got, tc.pieces) {
			t.Errorf("Pieces(%q) = %q, want %q", tc.text, got, tc.pieces)
		}
		if got := Encode(tc.text); !slices.Equal(got, tc.ids) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.ids)
		}
		if got := AppendEncode([]uint32{7}, tc.text); !slices.Equal(got, append([]uint32{7}, tc.ids...)) {
			t.Errorf("AppendEncode(%q) = %v", tc.text, got)
		}
	}
	if chat != "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("chat = %q", chat)
	}
}

func TestWords(t *testing.T) {
	for k, want := range map[int]string{0: "baba", 1: "babe", 79: "bazu", 80: "beba", 6399: "zuzu", 2518: "kelo"} {
		if got := Word(k); got != want {
			t.Errorf("Word(%d) = %q, want %q", k, got, want)
		}
		id := uint32(WordBase + k)
		if got := TokenText(id); got != " "+want {
			t.Errorf("TokenText(%d) = %q", id, got)
		}
		if got := PieceID(" " + want); got != id {
			t.Errorf("PieceID(%q) = %d, want %d", " "+want, got, id)
		}
	}
	if Word(-1) != "" || Word(NumWords) != "" {
		t.Error("Word out of range should be empty")
	}
	// Every word token maps back to itself; all word texts are distinct.
	seen := map[string]bool{}
	for id := uint32(WordBase); id < WordBase+NumWords; id++ {
		s := TokenText(id)
		if len(s) != 5 || seen[s] || PieceID(s) != id {
			t.Fatalf("word id %d text %q", id, s)
		}
		seen[s] = true
	}
	// Not words: no leading space, capitals, wrong letters.
	for _, p := range []string{"baba", " Baba", " bab", " babaa", " caba", " bbba", " abab"} {
		if id := PieceID(p); id < HashedBase {
			t.Errorf("PieceID(%q) = %d, want a hashed id", p, id)
		}
	}
}

func TestTokenText(t *testing.T) {
	tests := []struct {
		id            uint32
		text, literal string
	}{
		{EOS, "", "<|endoftext|>"},
		{IMStart, "", "<|im_start|>"},
		{IMEnd, "", "<|im_end|>"},
		{ThinkStart, "", "<think>"},
		{ThinkEnd, "", "</think>"},
		{5, "", ""}, {15, "", ""}, // reserved
		{Period, ".", "."},
		{Comma, ",", ","},
		{Newline, "\n", "\n"},
		{19, "", ""}, {999, "", ""}, // reserved
		{1000, " baba", " baba"},
		{5398, " puzo", " puzo"},
		{7399, " zuzu", " zuzu"},
		{7400, "", ""}, {8191, "", ""}, // reserved
		// Hashed stand-in: x = id − 8192,
		// " " + syl((x div 6400) mod 80) + syl((x div 80) mod 80) + syl(x mod 80).
		{8192, " bababa", " bababa"},
		{8193, " bababe", " bababe"},
		{8192 + 80, " babeba", " babeba"},
		{8192 + 6400, " bebaba", " bebaba"},
		{38422, " buriva", " buriva"}, // x = 30230 = 4·6400 + 57·80 + 70 → syl(4) syl(57) syl(70)
		{131071, " gugazu", " gugazu"},
		{VocabSize, "", ""}, {1 << 31, "", ""}, // outside the vocabulary
	}
	for _, tc := range tests {
		if got := TokenText(tc.id); got != tc.text {
			t.Errorf("TokenText(%d) = %q, want %q", tc.id, got, tc.text)
		}
		if got := LiteralText(tc.id); got != tc.literal {
			t.Errorf("LiteralText(%d) = %q, want %q", tc.id, got, tc.literal)
		}
		if got := string(AppendText([]byte("x"), tc.id)); got != "x"+tc.text {
			t.Errorf("AppendText(%d) = %q", tc.id, got)
		}
		if got := string(AppendLiteralText([]byte("x"), tc.id)); got != "x"+tc.literal {
			t.Errorf("AppendLiteralText(%d) = %q", tc.id, got)
		}
	}
	for id := uint32(0); id < 5; id++ {
		if SpecialString(id) != specials[id] || PieceID(specials[id]) != id {
			t.Errorf("special %d", id)
		}
	}
	if SpecialString(5) != "" {
		t.Error("SpecialString(5)")
	}
}

// AppendText/AppendLiteralText agree with TokenText/LiteralText over the whole
// vocabulary; the hashed stand-ins are distinct 7-byte strings.
func TestTextTablesConsistent(t *testing.T) {
	var b []byte
	seen := make(map[string]bool, NumHashed)
	for id := uint32(0); id < VocabSize; id++ {
		b = AppendText(b[:0], id)
		if string(b) != TokenText(id) || len(b) != textLen(id) {
			t.Fatalf("id %d: AppendText %q TokenText %q", id, b, TokenText(id))
		}
		b = AppendLiteralText(b[:0], id)
		if string(b) != LiteralText(id) {
			t.Fatalf("id %d: AppendLiteralText %q LiteralText %q", id, b, LiteralText(id))
		}
		if id >= HashedBase {
			s := TokenText(id)
			if len(s) != 7 || s[0] != ' ' || seen[s] {
				t.Fatalf("hashed id %d stand-in %q", id, s)
			}
			seen[s] = true
		}
	}
}

func TestPreTokenization(t *testing.T) {
	sp := func(n int) string { return strings.Repeat(" ", n) }
	tests := []struct {
		name, text string
		pieces     []string
	}{
		{"empty", "", []string{}},
		{"letters split at 6", "abcdefghijklm", []string{"abcdef", "ghijkl", "m"}},
		{"letters split at 6 after space", "x abcdefgh", []string{"x", " abcdef", "gh"}},
		{"exactly 6", " abcdef", []string{" abcdef"}},
		{"mixed case letters", "HeLLoWorld", []string{"HeLLoW", "orld"}},
		{"digits split at 3", "1234567", []string{"123", "456", "7"}},
		{"digits after space", "a 12345", []string{"a", " 123", "45"}},
		{"letters then digits", "abc123def", []string{"abc", "123", "def"}},
		{"two spaces", "a  b", []string{"a", " ", " b"}},
		{"three spaces", "a   b", []string{"a", "  ", " b"}},
		{"spaces then tab", "a   \tb", []string{"a", "   \t", "b"}},
		{"tab then space", "a\t b", []string{"a", "\t", " b"}},
		{"single tab", "a\tb", []string{"a", "\t", "b"}},
		{"trailing space", "x ", []string{"x", " "}},
		{"trailing spaces", "x   ", []string{"x", "   "}},
		{"only space", " ", []string{" "}},
		{"space before newline", "a \nb", []string{"a", " ", "\n", "b"}},
		{"spaces before newline", "a  \n", []string{"a", "  ", "\n"}},
		{"space before CR", "a \r\nb", []string{"a", " ", "\r\n", "b"}},
		{"15 spaces + x", sp(15) + "x", []string{sp(14), " x"}},
		{"16 spaces + x", sp(16) + "x", []string{sp(15), " x"}},
		{"17 spaces + x", sp(17) + "x", []string{sp(16), " x"}},
		{"18 spaces + x", sp(18) + "x", []string{sp(16), " ", " x"}},
		{"20 spaces + x", sp(20) + "x", []string{sp(16), sp(3), " x"}},
		{"33 spaces", sp(33), []string{sp(16), sp(16), " "}},
		{"newlines", "\n\n", []string{"\n", "\n"}},
		{"CRLF", "a\r\nb", []string{"a", "\r\n", "b"}},
		{"CR alone", "a\rb", []string{"a", "\r", "b"}},
		{"CR CR LF", "\r\r\n", []string{"\r", "\r\n"}},
		{"punctuation", "a.b,c!", []string{"a", ".", "b", ",", "c", "!"}},
		{"space attaches to punctuation", "a ! ?", []string{"a", " !", " ?"}},
		{"multi-byte UTF-8", "日本 é", []string{"日", "本", " é"}},
		{"invalid byte", "a\xffb", []string{"a", "\xff", "b"}},
		{"invalid byte after space", "a \xff", []string{"a", " \xff"}},
		{"truncated sequence", "\xe2\x82x", []string{"\xe2", "\x82", "x"}},
		{"valid U+FFFD", "\uFFFD", []string{"\uFFFD"}},
		{"special in text", "x<|im_end|>y", []string{"x", "<|im_end|>", "y"}},
		{"space before special", "a <think>b", []string{"a", " ", "<think>", "b"}},
		{"spaces before special", "a  </think>", []string{"a", "  ", "</think>"}},
		{"partial special", "<|im_", []string{"<", "|", "im", "_"}},
		{"space before partial special", " <thin", []string{" <", "thin"}},
		{"all specials", "<|endoftext|><|im_start|><|im_end|><think></think>",
			[]string{"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Pieces(tc.text)
			if !slices.Equal(got, tc.pieces) {
				t.Fatalf("Pieces(%q) = %q, want %q", tc.text, got, tc.pieces)
			}
			ids := Encode(tc.text)
			if len(ids) != len(got) {
				t.Fatalf("Encode: %d ids for %d pieces", len(ids), len(got))
			}
			for i, p := range got {
				if ids[i] != PieceID(p) {
					t.Errorf("id %d of %q = %d, want PieceID = %d", i, p, ids[i], PieceID(p))
				}
			}
		})
	}
	// Specials, punctuation and hashed pieces map as PieceID says.
	if got := Encode("<|endoftext|><|im_start|><|im_end|><think></think>.,\n"); !slices.Equal(got, []uint32{0, 1, 2, 3, 4, 16, 17, 18}) {
		t.Errorf("specials = %v", got)
	}
	for _, p := range []string{"\r\n", "\t", " ", "!", " .", " ,", "\xff"} {
		if id := PieceID(p); id < HashedBase || id >= VocabSize {
			t.Errorf("PieceID(%q) = %d, want hashed", p, id)
		}
	}
}

// The design relies on this (streamed text and usage counts agree with
// /tokenize): generated text re-tokenizes to exactly the generated ids. Generated ids are 16 ("."),
// 17 (",") and words 1000–7399. This holds for every sequence: "." and ","
// are one-character pieces of the "anything else" class that never absorb a
// neighbour, and each word " xxxx" is a space followed by 4 letters, so the
// space attaches to the letters (the next character is a letter) and the
// letter run ends at the next space or punctuation, well below 6 letters.
// In particular "." or "," followed by " word" round-trips (". baba" →
// "." " baba"). "\n" (18) also round-trips.
//
// What does NOT round-trip (and is not claimed): special and reserved ids
// (render as nothing in generated text), and hashed ids 8192+ (their 7-byte
// stand-in " xxxxxx" is one letter piece that hashes to some other id).
func TestGeneratedTextRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func(alphabet func() uint32) {
		for iter := 0; iter < 5000; iter++ {
			ids := make([]uint32, r.IntN(40))
			for i := range ids {
				ids[i] = alphabet()
			}
			if got := Encode(Decode(ids)); !slices.Equal(got, ids) {
				t.Fatalf("Encode(Decode(%v)) = %v (text %q)", ids, got, Decode(ids))
			}
		}
	}
	// Generated alphabet with punctuation over-represented so that ".."
	// ",." ". word" etc. occur often.
	gen(func() uint32 {
		switch r.IntN(4) {
		case 0:
			return Period
		case 1:
			return Comma
		}
		return WordBase + r.Uint32N(NumWords)
	})
	// Including "\n".
	gen(func() uint32 { return []uint32{Period, Comma, Newline, WordBase + r.Uint32N(NumWords)}[r.IntN(4)] })

	// Documented non-round-trips.
	if got := Encode(Decode([]uint32{8192})); slices.Equal(got, []uint32{8192}) {
		t.Errorf("hashed id unexpectedly round-trips")
	}
	if got := Encode(Decode([]uint32{1000, ThinkStart, 1001})); !slices.Equal(got, []uint32{1000, 1001}) {
		t.Errorf("special ids should vanish from generated text, got %v", got)
	}
	// The literal form keeps specials.
	if got := Encode(DecodeLiteral([]uint32{ThinkStart, 1000, ThinkEnd, Period})); !slices.Equal(got, []uint32{3, 1000, 4, 16}) {
		t.Errorf("literal round trip = %v", got)
	}
}

func TestDecode(t *testing.T) {
	ids := []uint32{ThinkStart, 5398, 1152, ThinkEnd, 16, 10, 8192, EOS, VocabSize}
	if got, want := Decode(ids), " puzo bevi. bababa"; got != want {
		t.Errorf("Decode = %q, want %q", got, want)
	}
	if got, want := DecodeLiteral(ids), "<think> puzo bevi</think>. bababa<|endoftext|>"; got != want {
		t.Errorf("DecodeLiteral = %q, want %q", got, want)
	}
	if Decode(nil) != "" || DecodeLiteral(nil) != "" {
		t.Error("empty decode")
	}
}

func TestRenderChat(t *testing.T) {
	msgs := []Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Hi"},
		{Role: "assistant", Content: ""},
	}
	tests := []struct {
		name      string
		tools     []byte
		gen, cont bool
		want      string
	}{
		{"default", nil, true, false,
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n<|im_start|>assistant\n"},
		{"no generation prompt", nil, false, false,
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n"},
		{"continue final message", nil, false, true,
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"tools", []byte(`[{"type":"function","function":{"name":"f"}}]`), true, false,
			"<|im_start|>system\n# Tools\n[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]<|im_end|>\n" +
				"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n<|im_start|>assistant\n"},
		{"empty tools slice = no tools", []byte{}, false, false,
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n"},
	}
	for _, tc := range tests {
		if got := RenderChat(msgs, tc.tools, tc.gen, tc.cont); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	// Continue a partial assistant answer.
	got := RenderChat([]Message{{Role: "user", Content: "Hello!"}, {Role: "assistant", Content: " puzo"}}, nil, false, true)
	if want := "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n puzo"; got != want {
		t.Errorf("continue: %q", got)
	}
	// Multi-part content is joined by the caller with "\n".
	got = RenderChat([]Message{{Role: "user", Content: strings.Join([]string{"a", "b"}, "\n")}}, nil, true, false)
	if want := "<|im_start|>user\na\nb<|im_end|>\n<|im_start|>assistant\n"; got != want {
		t.Errorf("parts: %q", got)
	}
}

func TestLogprobs(t *testing.T) {
	if got := Logprob(5398); got != -0.9 {
		t.Errorf("Logprob(5398) = %v", got)
	}
	for id, want := range map[uint32]float64{0: -0.1, 1: -0.2, 2: -0.3, 9: -1.0, 10: -0.1, 7399: -1.0} {
		if got := Logprob(id); got != want {
			t.Errorf("Logprob(%d) = %v, want %v", id, got, want)
		}
	}
	// 5398 " puzo" → −0.9; candidate 1 = 5399 " puzu" → −1.0.
	c := TopCandidates(Builtin(), 5398, 3, nil)
	want := []Candidate{{5398, -0.9, " puzo"}, {5399, -1.0, " puzu"}, {5400, -1.1, " raba"}}
	if !slices.Equal(c, want) {
		t.Errorf("TopCandidates(Builtin(), 5398, 3) = %v, want %v", c, want)
	}
	if got := TopCandidates(Builtin(), 5398, 0, c); len(got) != 0 {
		t.Errorf("k=0: %v", got)
	}
	if got := TopCandidates(Builtin(), 5398, 1, nil); !slices.Equal(got, want[:1]) {
		t.Errorf("k=1: %v", got)
	}
	// Duplicated texts are skipped: 7400–8191 are reserved (all ""), so
	// after 7399 comes 7400 ("") and then 8192 (j = 793).
	c = TopCandidates(Builtin(), 7399, 3, nil)
	want = []Candidate{{7399, -1.0, " zuzu"}, {7400, -1.1, ""}, {8192, -80.3, " bababa"}}
	if !slices.Equal(c, want) {
		t.Errorf("TopCandidates(Builtin(), 7399, 3) = %v, want %v", c, want)
	}
	// Wrap-around to the specials, rendered literally.
	c = TopCandidates(Builtin(), 131071, 3, nil)
	want = []Candidate{{131071, -0.2, " gugazu"}, {0, -0.3, "<|endoftext|>"}, {1, -0.4, "<|im_start|>"}}
	if !slices.Equal(c, want) {
		t.Errorf("TopCandidates(Builtin(), 131071, 3) = %v, want %v", c, want)
	}
	// Sampled reserved id: every further reserved id duplicates it.
	c = TopCandidates(Builtin(), 20, 2, nil)
	if c[0].ID != 20 || c[1].ID != 1000 || c[1].Text != " baba" {
		t.Errorf("TopCandidates(Builtin(), 20, 2) = %v", c)
	}
	dst := make([]Candidate, 0, 20)
	if n := testing.AllocsPerRun(100, func() { dst = TopCandidates(Builtin(), 5398, 20, dst) }); n != 0 {
		t.Errorf("TopCandidates allocates %v", n)
	}
}

func TestAllocationFree(t *testing.T) {
	buf := make([]byte, 0, 64)
	TokenText(8192) // build the lazy table
	ids := []uint32{16, 17, 18, 1000, 5398, 7399, 8192, 131071, 0, 3}
	n := testing.AllocsPerRun(100, func() {
		for _, id := range ids {
			buf = AppendText(buf[:0], id)
			buf = AppendLiteralText(buf, id)
			_ = TokenText(id)
			_ = LiteralText(id)
		}
	})
	if n != 0 {
		t.Errorf("text functions allocate %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = PieceID(" hello") }); n != 0 {
		t.Errorf("PieceID allocates %v times", n)
	}
}

// Pieces partition the text; Encode agrees with PieceID of each piece.
func FuzzPieces(f *testing.F) {
	for _, s := range []string{"", "Hello, world!", "tokenization  is 12345 fun\n", " \t  x\r\n<|im_end|>",
		"<|im_start|>user\nHello!<|im_end|>\n", "a\xff\xe2\x82 日本", strings.Repeat(" ", 40) + "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps := Pieces(s)
		if strings.Join(ps, "") != s {
			t.Fatalf("pieces %q do not partition %q", ps, s)
		}
		ids := Encode(s)
		if len(ids) != len(ps) {
			t.Fatalf("%d ids, %d pieces", len(ids), len(ps))
		}
		for i, p := range ps {
			if p == "" {
				t.Fatal("empty piece")
			}
			if ids[i] != PieceID(p) || ids[i] >= VocabSize {
				t.Fatalf("piece %q id %d", p, ids[i])
			}
			if !utf8.ValidString(p) && len(p) > 2 {
				// invalid bytes are pieces by themselves (maybe with an attached space)
				t.Fatalf("invalid piece %q", p)
			}
		}
	})
}

func englishText(n int) string {
	const para = "The quick brown fox jumps over the lazy dog. Tokenization of English text, " +
		"with numbers like 12345 and 2024, punctuation; quotes \"like this\" and newlines,\n" +
		"should produce roughly one token per short word.  Double  spaces\tand tabs too!\n"
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(para)
	}
	return b.String()[:n]
}

func BenchmarkEncode(b *testing.B) {
	text := englishText(2048)
	dst := make([]uint32, 0, 1024)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendEncode(dst[:0], text)
	}
}

func BenchmarkEncodeAlloc(b *testing.B) {
	text := englishText(2048)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		_ = Encode(text)
	}
}

func BenchmarkAppendText(b *testing.B) {
	ids := make([]uint32, 1024)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range ids {
		ids[i] = WordBase + r.Uint32N(NumWords)
		if i%10 == 0 {
			ids[i] = Period
		}
	}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		buf = AppendText(buf[:0], ids[i&1023])
		i++
	}
}

func BenchmarkTopCandidates(b *testing.B) {
	dst := make([]Candidate, 0, 20)
	b.ReportAllocs()
	for b.Loop() {
		dst = TopCandidates(Builtin(), 5398, 20, dst)
	}
}
