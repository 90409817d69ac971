package plan

import (
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
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
