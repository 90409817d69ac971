package hftokenizer

import (
	"slices"
	"strings"
	"testing"
)

// TestMatchesReference compares Encode, Decode and the stream decoder with
// tokenizers.js on every real tokenizer: the varied texts, a seeded batch
// of random Unicode strings, and random id lists for Decode.
func TestMatchesReference(t *testing.T) {
	varied := variedTexts()
	random := randomTexts(20260101, 2000)
	if len(varied) < 500 {
		t.Fatalf("only %d varied texts", len(varied))
	}
	texts := append(slices.Clone(varied), random...)
	for _, model := range []string{"qwen3", "llama3_1", "llama2", "gemma3"} {
		t.Run(model, func(t *testing.T) {
			tok := loadModel(t, model)
			var extra []uint32
			for id := range tok.VocabSize() {
				if tok.isAdded[id] || strings.HasPrefix(tok.token(uint32(id)), "<0x") {
					extra = append(extra, uint32(id))
				}
			}
			idLists := randomIDLists(7, 300, tok.VocabSize(), extra)
			ref := runReference(t, model, texts, idLists)

			var idMismatch, decodeMismatch, roundTrips int
			for i, text := range texts {
				want := ref.Encodings[i]
				special, plain := tok.Encode(text, true), tok.Encode(text, false)
				if !slices.Equal(special, want.Special) || !slices.Equal(plain, want.Plain) {
					if idMismatch++; idMismatch <= 5 {
						t.Errorf("Encode(%s):\n got %v\nwant %v\n(plain got %v want %v)", describe(text), special, want.Special, plain, want.Plain)
					}
					continue
				}
				for _, skip := range []bool{false, true} {
					wantText := want.Decoded
					if skip {
						wantText = want.DecodedSkip
					}
					if !checkDecode(t, tok, want.Special, skip, wantText) {
						decodeMismatch++
					}
				}
				// decode(encode(x)) == x wherever the reference says so.
				if ref.Encodings[i].DecodedSkip == text {
					roundTrips++
					if got := tok.Decode(plain, true); got != text {
						t.Errorf("round trip of %s gave %s", describe(text), describe(got))
					}
				}
			}
			for i, ids := range idLists {
				if !checkDecode(t, tok, ids, false, ref.Decodes[i].Decoded) || !checkDecode(t, tok, ids, true, ref.Decodes[i].DecodedSkip) {
					decodeMismatch++
				}
				for k, id := range ids {
					got, ok := tok.TokenString(id)
					if want := ref.Decodes[i].Tokens[k]; want == nil && ok || want != nil && (!ok || got != *want) {
						t.Errorf("TokenString(%d) = %q, %v; reference %v", id, got, ok, want)
					}
				}
			}
			t.Logf("%s: %d texts (%d varied, %d random), %d id lists: %d id mismatches, %d decode mismatches; %d texts round-trip exactly",
				model, len(texts), len(varied), len(random), len(idLists), idMismatch, decodeMismatch, roundTrips)
			if idMismatch > 0 {
				t.Errorf("%d of %d texts encode differently from the reference", idMismatch, len(texts))
			}
			if roundTrips < len(texts)/2 {
				t.Errorf("only %d of %d texts round-trip in the reference: the corpus is not what this test assumes", roundTrips, len(texts))
			}
		})
	}
}

// checkDecode compares Decode and the concatenated stream with want, and
// checks that the stream never emits text it later contradicts.
func checkDecode(t *testing.T, tok *Tokenizer, ids []uint32, skip bool, want string) bool {
	t.Helper()
	if got := tok.Decode(ids, skip); got != want {
		t.Errorf("Decode(%v, skip=%v) = %s, want %s", ids, skip, describe(got), describe(want))
		return false
	}
	stream := tok.NewStreamDecoder(skip)
	var streamed strings.Builder
	for _, id := range ids {
		streamed.WriteString(stream.Add(id))
		if !strings.HasPrefix(want, streamed.String()) {
			t.Errorf("stream of %v (skip=%v) emitted %s, not a prefix of %s", ids, skip, describe(streamed.String()), describe(want))
			return false
		}
	}
	streamed.WriteString(stream.Flush())
	if streamed.String() != want {
		t.Errorf("stream of %v (skip=%v) = %s, want %s", ids, skip, describe(streamed.String()), describe(want))
		return false
	}
	return true
}
