package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/schemagen/schemagentest"
)

// contentOf returns a non-streamed answer's text and finish_reason (chat
// message content or completions text).
func contentOf(t *testing.T, body string) (text, finish string) {
	t.Helper()
	var resp struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || len(resp.Choices) != 1 {
		t.Fatalf("response %s: %v", body, err)
	}
	c := resp.Choices[0]
	return c.Message.Content + c.Text, c.FinishReason
}

// streamedContentOf concatenates a streamed answer's text deltas (chat
// content or completions text).
func streamedContentOf(t *testing.T, body string) (text, finish string) {
	t.Helper()
	r := streamResult(t, body)
	if r.Content == nil {
		return "", r.Finish
	}
	return *r.Content, r.Finish
}

// The property test through a real server: 1,000 seeded random schemas as
// response_format (chat and completions) or as a named tool's parameters,
// every answer — streamed (the concatenated deltas) and not — validates
// with an independent validator.
func TestStructuredOutputs_RandomSchemasValidateStreamedAndNot(t *testing.T) {
	env := startServer(t, nil)
	schemas := 1000
	if testing.Short() {
		schemas = 200
	}
	for i := range schemas {
		schema := schemagentest.Random(uint64(i))
		reference := referenceSchema(t, schema)
		format := `,"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":` + string(schema) + `}}`
		path, body := "/v1/chat/completions", helloChat+format+fmt.Sprintf(`,"seed":%d`, i)
		if i%4 == 3 { // completions take response_format too
			path, body = "/v1/completions", `{"prompt":"Answer in JSON"`+format+fmt.Sprintf(`,"seed":%d,"max_tokens":4000`, i)
		}
		if i%4 == 1 { // and tool arguments: the schema as a named tool's parameters
			body := `{"messages":[{"role":"user","content":"Call it"}],"tools":[{"type":"function","function":{"name":"f","parameters":` +
				string(schema) + `}}],"tool_choice":{"type":"function","function":{"name":"f"}}` + fmt.Sprintf(`,"seed":%d`, i)
			got := nonStreamResult(t, env.post(path, body+`}`).Body)
			gotStream := streamResult(t, env.post(path, body+`,"stream":true}`).Body)
			if len(got.Calls) != 1 || fmt.Sprint(got.Calls) != fmt.Sprint(gotStream.Calls) {
				t.Fatalf("schema %d: calls %v, streamed %v", i, got.Calls, gotStream.Calls)
			}
			if err := referenceCheck(reference, got.Calls[0].Arguments); err != nil {
				t.Fatalf("schema %d %s\narguments %s\n%v", i, schema, got.Calls[0].Arguments, err)
			}
			continue
		}
		whole := env.post(path, body+`}`)
		streamed := env.post(path, body+`,"stream":true}`)
		text, finish := contentOf(t, whole.Body)
		streamText, streamFinish := streamedContentOf(t, streamed.Body)
		if finish != "stop" || streamFinish != "stop" || text != streamText {
			t.Fatalf("schema %d: finish %q/%q\n%s\n%s", i, finish, streamFinish, text, streamText)
		}
		if err := referenceCheck(reference, text); err != nil {
			t.Fatalf("schema %d %s\noutput %s\n%v", i, schema, text, err)
		}
	}
}

// Every way of asking for structured output, on both endpoints.
func TestStructuredOutputs_EveryConstraint(t *testing.T) {
	env := startServer(t, nil)
	schema := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name","age"],"additionalProperties":false}`
	reference := referenceSchema(t, []byte(schema))
	isObject := func(s string) error {
		var m map[string]any
		return json.Unmarshal([]byte(s), &m)
	}
	validSchema := func(s string) error { return referenceCheck(reference, s) }
	zipCode := regexp.MustCompile(`^\d{5}(-\d{4})?$`)
	tests := []struct {
		name, fields string
		check        func(string) error
	}{
		{"response_format json_schema", `"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":` + schema + `}}`, validSchema},
		{"response_format json_object", `"response_format":{"type":"json_object"}`, isObject},
		{"structured_outputs json", `"structured_outputs":{"json":` + schema + `}`, validSchema},
		{"structured_outputs json as text", `"structured_outputs":{"json":` + strconvQuote(schema) + `}`, validSchema},
		{"structured_outputs json_object", `"structured_outputs":{"json_object":true}`, isObject},
		{"guided_json", `"guided_json":` + schema, validSchema},
		{"guided_regex", `"guided_regex":"\\d{5}(-\\d{4})?"`, func(s string) error {
			if !zipCode.MatchString(s) {
				return fmt.Errorf("%q does not match", s)
			}
			return nil
		}},
		{"structured_outputs choice", `"structured_outputs":{"choice":["red","green","blue"]}`, func(s string) error {
			if !slices.Contains([]string{"red", "green", "blue"}, s) {
				return fmt.Errorf("%q is not a choice", s)
			}
			return nil
		}},
		{"guided_choice", `"guided_choice":["yes","no"]`, func(s string) error {
			if s != "yes" && s != "no" {
				return fmt.Errorf("%q is not a choice", s)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range 10 {
				for _, endpoint := range []string{"chat", "completions"} {
					path, body := "/v1/chat/completions", helloChat+","+tt.fields
					if endpoint == "completions" {
						path, body = "/v1/completions", `{"prompt":"Hi","max_tokens":500,`+tt.fields
					}
					body += fmt.Sprintf(`,"seed":%d`, seed)
					text, finish := contentOf(t, env.post(path, body+`}`).Body)
					streamText, _ := streamedContentOf(t, env.post(path, body+`,"stream":true}`).Body)
					if finish != "stop" || text != streamText {
						t.Fatalf("%s seed %d: finish %q, %q vs streamed %q", endpoint, seed, finish, text, streamText)
					}
					if err := tt.check(text); err != nil {
						t.Fatalf("%s seed %d: %v", endpoint, seed, err)
					}
				}
			}
		})
	}
}

// max_tokens too small to close the JSON: finish "length" and a prefix of
// the answer, streamed and not.
func TestStructuredOutputs_MaxTokensGivesAPrefix(t *testing.T) {
	env := startServer(t, nil)
	body := helloChat + `,"seed":7,"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object","properties":{"summary":{"type":"string","minLength":60}},"required":["summary"]}}}`
	full, _ := contentOf(t, env.post("/v1/chat/completions", body+`}`).Body)
	for _, stream := range []string{"false", "true"} {
		r := env.post("/v1/chat/completions", body+`,"max_tokens":5,"stream":`+stream+`}`)
		var text, finish string
		if stream == "true" {
			text, finish = streamedContentOf(t, r.Body)
		} else {
			text, finish = contentOf(t, r.Body)
		}
		if finish != "length" || text == "" || text == full || !strings.HasPrefix(full, text) {
			t.Fatalf("stream %s: finish %q text %q (full %q)", stream, finish, text, full)
		}
	}
}
