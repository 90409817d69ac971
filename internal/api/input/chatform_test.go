package input

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// MarshalMessages gives the JSON value json.Marshal gives, contents with
// whitespace and HTML characters included.
func TestMarshalMessagesIsJSONMarshal(t *testing.T) {
	id := "call_1"
	msgs := []ChatMessageIn{
		{Role: "system", Content: json.RawMessage(`"Be <brief> & kind"`)},
		{Role: "user", Content: json.RawMessage(`[ {"type": "text", "text": "hi"}, {"type":"image_url","image_url":{"url":"data:image/png;base64,` + strings.Repeat("QUJD", 2000) + `"}} ]`)},
		{Role: "assistant", ToolCalls: []ChatToolCall{{ID: id, Type: "function", Function: ChatFunction{Name: "f", Arguments: `{"a":1}`}}}},
		{Role: "tool", ToolCallID: &id, Content: json.RawMessage(`"42"`)},
		{Role: "assistant"},
	}
	want, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	got := MarshalMessages(msgs)
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, got)
	}
	_ = json.Unmarshal(want, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("got  %.300s\nwant %.300s", got, want)
	}
	for _, m := range [][]ChatMessageIn{nil, {}} {
		if want, _ := json.Marshal(m); string(MarshalMessages(m)) != string(want) {
			t.Errorf("%#v: %s, want %s", m, MarshalMessages(m), want)
		}
	}
}
