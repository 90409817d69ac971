package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// --interleave-mm-strings: in a string-content prompt vLLM keeps each
// item's placeholder where its part stands among the text parts; without
// it every placeholder of a message goes before the message's text.
func TestMultimodal_InterleaveMMStrings(t *testing.T) {
	img := map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/cat.png"}}
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	body := func(parts ...map[string]any) string {
		b, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": parts}}})
		return string(b)
	}
	// runs tokenizes the request and detokenizes what lies around each run
	// of image tokens: the texts between the items, in order.
	runs := func(env *testEnv, req string) []string {
		t.Helper()
		r := env.post("/tokenize", req)
		var tok struct{ Tokens []uint32 }
		if err := json.Unmarshal([]byte(r.Body), &tok); err != nil || r.Status != 200 {
			t.Fatalf("/tokenize: %d %s", r.Status, r.Body)
		}
		var out []string
		var cur []uint32
		flush := func() {
			b, _ := json.Marshal(map[string]any{"tokens": cur})
			d := env.post("/detokenize", string(b))
			var p struct{ Prompt string }
			_ = json.Unmarshal([]byte(d.Body), &p)
			out = append(out, p.Prompt)
			cur = cur[:0]
		}
		for i, id := range tok.Tokens {
			if id == tokenizer.VocabSize-1 {
				if i == 0 || tok.Tokens[i-1] != id {
					flush()
				}
				continue
			}
			cur = append(cur, id)
		}
		flush()
		return out
	}
	on := startServer(t, map[string]any{"interleave_mm_strings": true})
	off := startServer(t, nil)
	// The built-in tokenizer's words are its own: {w} stands for what the
	// word w comes back as.
	word := func(w string) string {
		r := on.post("/tokenize", `{"prompt":"`+w+`","add_special_tokens":false}`)
		var tok struct{ Tokens []uint32 }
		_ = json.Unmarshal([]byte(r.Body), &tok)
		b, _ := json.Marshal(map[string]any{"tokens": tok.Tokens})
		var p struct{ Prompt string }
		_ = json.Unmarshal([]byte(on.post("/detokenize", string(b)).Body), &p)
		return p.Prompt
	}
	words := strings.NewReplacer("{user}", word("user"), "{alpha}", word("alpha"), "{beta}", word("beta"), "{omega}", word("omega"))
	for _, tc := range []struct {
		name      string
		parts     []map[string]any
		on, off   []string // the text between the image runs (suffixes/prefixes checked)
		onN, offN int
	}{
		{"text, image, text", []map[string]any{text("alpha"), img, text("omega")},
			[]string{"{user}\n{alpha}\n", "\n{omega}<|im_end|>"}, []string{"{user}\n", "\n{alpha}\n{omega}<|im_end|>"}, 2, 2},
		{"image, text, image", []map[string]any{img, text("alpha"), img},
			[]string{"{user}\n", "\n{alpha}\n", "<|im_end|>"}, []string{"{user}\n", "\n", "\n{alpha}<|im_end|>"}, 3, 3},
		{"two texts before, none after", []map[string]any{text("alpha"), text("beta"), img},
			[]string{"{user}\n{alpha}\n{beta}\n", "<|im_end|>"}, []string{"{user}\n", "\n{alpha}\n{beta}<|im_end|>"}, 2, 2},
	} {
		for _, side := range []struct {
			env  *testEnv
			want []string
			n    int
		}{{on, tc.on, tc.onN}, {off, tc.off, tc.offN}} {
			got := runs(side.env, body(tc.parts...))
			if len(got) != side.n {
				t.Fatalf("%s: %d text runs %q", tc.name, len(got), got)
			}
			for i, w := range side.want {
				w = words.Replace(w)
				ok := strings.HasSuffix(got[i], w)
				if i > 0 {
					ok = strings.HasPrefix(got[i], w)
				}
				if !ok {
					t.Errorf("%s (interleave %v): run %d is %q, want %q at its edge", tc.name, side.env == on, i, got[i], w)
				}
			}
		}
	}
}
