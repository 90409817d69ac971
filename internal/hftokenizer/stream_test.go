package hftokenizer

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// TestStreamDecoderHoldsBackIncompleteCharacters: a token that ends inside
// a UTF-8 character yields "" until the character completes, in both the
// byte-level and the byte-fallback families.
func TestStreamDecoderHoldsBackIncompleteCharacters(t *testing.T) {
	for _, model := range []string{"qwen3", "llama2"} {
		t.Run(model, func(t *testing.T) {
			tok := loadModel(t, model)
			// Rare characters are split into byte tokens by both families.
			text := "ok 𝔘𓀀 done"
			ids := tok.Encode(text, false)
			stream := tok.NewStreamDecoder(false)
			held := 0
			var got strings.Builder
			for _, id := range ids {
				piece := stream.Add(id)
				if !utf8.ValidString(piece) || strings.ContainsRune(piece, utf8.RuneError) {
					t.Fatalf("Add(%d) = %q: a broken character escaped", id, piece)
				}
				if piece == "" {
					held++
				}
				got.WriteString(piece)
			}
			got.WriteString(stream.Flush())
			if got.String() != text {
				t.Fatalf("stream = %q, want %q", got.String(), text)
			}
			if held == 0 {
				t.Fatalf("no token of %v was held back: the text does not exercise split characters", ids)
			}
		})
	}
}

// TestStreamDecoderIsIncremental: text that no later token can change is
// returned by the Add that completes it, not at Flush.
func TestStreamDecoderIsIncremental(t *testing.T) {
	tests := []struct {
		model string
		text  string
		// wantFirst is what the first Add returns.
		wantFirst string
	}{
		{"qwen3", "Hello world", "Hello"},
		{"llama2", "Hello world", "Hello"}, // ▁Hello: Strip drops the leading space
		{"gemma3", "Hello world", "Hello"},
		{"llama3_1", "Hello world", "Hello"},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			tok := loadModel(t, tt.model)
			ids := tok.Encode(tt.text, false)
			stream := tok.NewStreamDecoder(true)
			if got := stream.Add(ids[0]); got != tt.wantFirst {
				t.Errorf("first Add = %q, want %q", got, tt.wantFirst)
			}
			rest := ""
			for _, id := range ids[1:] {
				rest += stream.Add(id)
			}
			if tail := stream.Flush(); tail != "" {
				t.Errorf("Flush returned %q; everything should have streamed", tail)
			}
			if tt.wantFirst+rest != tt.text {
				t.Errorf("stream = %q, want %q", tt.wantFirst+rest, tt.text)
			}
		})
	}
}

// TestStreamDecoderCleanUp: with clean_up_tokenization_spaces (Llama 3.1)
// a space before punctuation is held until the next token decides it.
func TestStreamDecoderCleanUp(t *testing.T) {
	tok := loadModel(t, "llama3_1")
	for _, text := range []string{"Hello . World", "yes , no ! why ? it 's", "a ' b", "do n't", "x  ,"} {
		ids := tok.Encode(text, false)
		want := tok.Decode(ids, false)
		if want == text {
			t.Fatalf("Decode(Encode(%q)) kept the text: clean-up is not active", text)
		}
		stream := tok.NewStreamDecoder(false)
		var got strings.Builder
		for _, id := range ids {
			got.WriteString(stream.Add(id))
			if !strings.HasPrefix(want, got.String()) {
				t.Fatalf("%q: streamed %q, not a prefix of %q", text, got.String(), want)
			}
		}
		got.WriteString(stream.Flush())
		if got.String() != want {
			t.Errorf("%q: stream %q, Decode %q", text, got.String(), want)
		}
	}
}

// TestSafeCleanUpCut: the cut leaves every clean-up pattern whole.
func TestSafeCleanUpCut(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"abc ", 0 + 3},
		{"a ' b", 1},
		{"hello world", 11},
		{"x 've", 5},
		{"x 'v", 1},
		{"日本", len("日本")},
	}
	for _, tt := range tests {
		if got := safeCleanUpCut([]byte(tt.text)); got != tt.want {
			t.Errorf("safeCleanUpCut(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

// TestConcurrentEncode: many goroutines sharing one tokenizer (and its
// word cache) get the same ids as a single goroutine. Run with -race.
func TestConcurrentEncode(t *testing.T) {
	tok := loadModel(t, "qwen3")
	texts := append(variedTexts()[:200], randomTexts(99, 200)...)
	want := make([][]uint32, len(texts))
	for i, text := range texts {
		want[i] = tok.Encode(text, true)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for round := 0; round < 3; round++ {
				for k := range texts {
					i := (k*7 + g*13 + round) % len(texts)
					if got := tok.Encode(texts[i], true); !slices.Equal(got, want[i]) {
						errs <- describe(texts[i])
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for text := range errs {
		t.Errorf("concurrent Encode(%s) differs from the sequential result", text)
	}
}

// TestStreamDecoderPrime: after the prompt's ids, generated text continues
// mid-sequence (the SentencePiece leading space is kept), and the prompt's
// own text is never returned.
func TestStreamDecoderPrime(t *testing.T) {
	tests := []struct {
		model, prompt, output string
		skip                  bool
		want, wantUnprimed    string
	}{
		{"llama2", "Say hi:", " Hello world", true, " Hello world", "Hello world"},
		{"gemma3", "Say hi:", " Hello world", true, " Hello world", " Hello world"},
		{"qwen3", "<|im_start|>assistant\n", " Hello world", true, " Hello world", " Hello world"},
		// Only special tokens before: still the start of the text.
		{"llama2", "", "Hello", true, "Hello", "Hello"},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+tt.prompt, func(t *testing.T) {
			tok := loadModel(t, tt.model)
			prompt := tok.Encode(tt.prompt, true)
			all := tok.Encode(tt.prompt+tt.output, true)
			if !slices.Equal(all[:len(prompt)], prompt) {
				t.Fatalf("prompt ids %v are not a prefix of %v", prompt, all)
			}
			output := all[len(prompt):]
			decode := func(prime bool) string {
				stream := tok.NewStreamDecoder(tt.skip)
				if prime {
					stream.Prime(prompt)
				}
				var got strings.Builder
				for _, id := range output {
					got.WriteString(stream.Add(id))
				}
				return got.String() + stream.Flush()
			}
			if got := decode(true); got != tt.want {
				t.Errorf("primed stream = %q, want %q", got, tt.want)
			}
			if got := decode(false); got != tt.wantUnprimed {
				t.Errorf("unprimed stream = %q, want %q", got, tt.wantUnprimed)
			}
		})
	}
}

// TestShortAndLongMergesAgree: the stack-array merge used for short words
// and the heap merge used for long ones give the same ids on every word
// of the test corpus (the reference test covers each path only where it
// is used).
func TestShortAndLongMergesAgree(t *testing.T) {
	for _, model := range []string{"qwen3", "llama2"} {
		tok := loadModel(t, model)
		words := 0
		for _, text := range append(variedTexts(), randomTexts(5, 500)...) {
			if tok.normalize != nil {
				text = tok.normalize(text)
			}
			tok.preTokenize.run(text, 0, func(piece string) {
				if tok.model.symbolCount(piece) > smallWord {
					return
				}
				words++
				if short, long := tok.model.encodeSmall(piece), tok.model.encodeLong(piece); !slices.Equal(short, long) {
					t.Errorf("%s: word %q: short merge %v, heap merge %v", model, piece, short, long)
				}
			})
		}
		if words < 1000 {
			t.Errorf("%s: only %d words compared", model, words)
		}
	}
}
