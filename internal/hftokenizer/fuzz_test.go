package hftokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FuzzEncodeDecode checks, on the four real tokenizers, the invariants
// that need no reference: no panic, every id below VocabSize, the stream
// decoder equal to Decode, and the round trip each family guarantees:
//
//   - byte-level without a normalizer (Llama 3.1, clean-up off): exact;
//   - byte-level with NFC (Qwen3): exact for NFC text without added tokens;
//   - SentencePiece style (Llama 2, Gemma 3): exact up to "▁" reading as
//     a space, for text without added tokens.
//
// `go test` runs the seed corpus; `go test -fuzz FuzzEncodeDecode` explores.
func FuzzEncodeDecode(f *testing.F) {
	for _, seed := range []string{
		"", " ", "Hello world", "  leading", "trailing  ", "a\r\n\r\nb", "\t\t\tx",
		"12345678901234567890", "it's 'LL 'Re", "你好，世界", "👨‍👩‍👧‍👦👍🏽🇯🇵", "e\u0301 a\u030A",
		"<|im_start|>user\nhi<|im_end|>", "<s>x</s>", "<bos>\n\n", "▁▁x", ">\u0338", "\xff\xfe invalid",
		strings.Repeat("a", 300), strings.Repeat("😀", 70), "\u0085\u00a0\u3000\ufeff",
	} {
		f.Add(seed)
	}
	models := map[string]*Tokenizer{}
	for _, model := range []string{"qwen3", "llama3_1", "llama2", "gemma3"} {
		models[model] = loadModel(f, model)
	}
	llama3 := *models["llama3_1"]
	llama3.cleanUpSpaces = false
	f.Fuzz(func(t *testing.T, text string) {
		for name, tok := range models {
			for _, special := range []bool{false, true} {
				ids := tok.Encode(text, special)
				for _, id := range ids {
					if int(id) >= tok.VocabSize() {
						t.Fatalf("%s: Encode(%q) gave id %d ≥ VocabSize %d", name, text, id, tok.VocabSize())
					}
				}
				for _, skip := range []bool{false, true} {
					want := tok.Decode(ids, skip)
					stream := tok.NewStreamDecoder(skip)
					var got strings.Builder
					for _, id := range ids {
						got.WriteString(stream.Add(id))
					}
					got.WriteString(stream.Flush())
					if got.String() != want {
						t.Fatalf("%s: stream of Encode(%q) = %q, Decode = %q", name, text, got.String(), want)
					}
				}
			}
		}
		if !utf8.ValidString(text) {
			return
		}
		roundTrip := func(name string, tok *Tokenizer, want string) {
			if got := tok.Decode(tok.Encode(text, false), false); got != want {
				t.Fatalf("%s: Decode(Encode(%q)) = %q, want %q", name, text, got, want)
			}
		}
		roundTrip("llama3_1 without clean-up", &llama3, text)
		for _, name := range []string{"qwen3", "llama2", "gemma3"} {
			tok := models[name]
			if sections := tok.rawTrie.split(text, nil); len(sections) != 1 || sections[0].token >= 0 {
				continue
			}
			switch name {
			case "qwen3":
				if norm.NFC.IsNormalString(text) {
					roundTrip(name, tok, text)
				}
			default:
				roundTrip(name, tok, strings.ReplaceAll(text, "▁", " "))
			}
		}
	})
}
