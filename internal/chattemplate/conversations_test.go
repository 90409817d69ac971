package chattemplate

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// conversationStyle says what a template family's conversations look like.
type conversationStyle struct {
	// alternating keeps user/assistant turns strictly alternating after an
	// optional system message (Gemma, Llama 2 style templates raise
	// otherwise; a few cases break the rule on purpose).
	alternating bool
	// argumentsAsString sends tool call arguments as a JSON string (the
	// OpenAI wire form, which DeepSeek's template prints as is) instead of
	// an object.
	argumentsAsString bool
	// thinking adds Qwen3's enable_thinking kwarg and reasoning_content.
	thinking bool
	// contentParts sends some content as a list of {type: text} parts.
	contentParts bool
	// tools sends tool definitions and tool-call turns.
	tools bool
}

var sampleTexts = []string{
	"Hello!",
	"What is the capital of France?",
	"  leading and trailing spaces  ",
	"Line one\nLine two\n\nLine four",
	"Unicode: héllo wörld, 你好，世界, Привет, مرحبا, שלום",
	"Emoji 👩‍💻🚀✨ and a flag 🇫🇷",
	"Quotes ' and \" and backslash \\ and a tab\there",
	"Markup <b>bold</b> & {{ not a tag }} {% neither %}",
	"Combining e\u0301 and zero\u200bwidth",
	"A longer paragraph that keeps going so that the prompt has some weight to it, with numbers 1, 2.0 and 3.5e10.",
	"JSON inside: {\"a\": [1, 2, {\"b\": null}]}",
	"Think step by step: 17 * 23 = ?",
	"Trailing newline\n",
	"Tabs\tand\tmore\ttabs",
}

var sampleReasoning = []string{
	"The user greets me; answer briefly.",
	"Paris is the capital of France.\nNo tool is needed.",
	"Let me compute: 17 * 23 = 391.",
}

// sampleTools are tool definitions with nested parameter schemas: objects
// inside arrays, enums, floats (2.0 must print as 2.0), unicode.
var sampleTools = []string{
	`{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name, e.g. Zürich"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}`,
	`{"type": "function", "function": {"name": "search_flights", "description": "Search flights — returns offers", "parameters": {"type": "object", "properties": {"legs": {"type": "array", "items": {"type": "object", "properties": {"from": {"type": "string"}, "to": {"type": "string"}, "date": {"type": "string", "format": "date"}}, "required": ["from", "to"]}}, "max_price": {"type": "number", "minimum": 0.5, "maximum": 2.0, "default": 1e3}, "passengers": {"type": "integer", "default": 1}, "flexible": {"type": "boolean", "default": false}, "notes": {"type": ["string", "null"], "default": null}}, "required": ["legs"]}}}`,
	`{"type": "function", "function": {"name": "lookup_词典", "description": "Look up a word in the dictionary 📖", "parameters": {"type": "object", "properties": {"word": {"type": "string"}, "options": {"type": "object", "properties": {"lang": {"type": "string", "enum": ["en", "de", "zh"]}, "limit": {"type": "integer", "minimum": 1, "maximum": 50}}}}, "required": ["word"]}}}`,
	`{"type": "function", "function": {"name": "no_params", "description": "A tool without parameters", "parameters": {"type": "object", "properties": {}}}}`,
}

var sampleArguments = []string{
	`{"city": "Paris", "unit": "celsius"}`,
	`{"legs": [{"from": "ZRH", "to": "NRT", "date": "2026-07-04"}], "max_price": 1.5, "flexible": true}`,
	`{"word": "你好", "options": {"lang": "en", "limit": 3}}`,
	`{}`,
}

var sampleToolResults = []string{
	`{"temperature": 21.5, "unit": "celsius", "sky": "clear"}`,
	"No flights found.",
	`[{"offer": 1, "price": 2.0}, {"offer": 2, "price": 1.25}]`,
	"你好 means hello",
}

// conversation builds message objects in a fixed key order.
type conversation struct {
	messages []string
	rng      *rand.Rand
	style    conversationStyle
}

func quote(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

func (c *conversation) text() string { return sampleTexts[c.rng.IntN(len(sampleTexts))] }

func (c *conversation) content(text string) string {
	if c.style.contentParts && c.rng.IntN(4) == 0 {
		return `[{"type": "text", "text": ` + quote(text) + `}]`
	}
	return quote(text)
}

func (c *conversation) add(role, content string, extra ...string) {
	fields := append([]string{`"role": ` + quote(role), `"content": ` + content}, extra...)
	c.messages = append(c.messages, "{"+strings.Join(fields, ", ")+"}")
}

func (c *conversation) toolCallTurn() {
	calls := 1 + c.rng.IntN(2)
	var items []string
	for i := range calls {
		tool := c.rng.IntN(len(sampleArguments))
		var name struct {
			Function struct{ Name string } `json:"function"`
		}
		_ = json.Unmarshal([]byte(sampleTools[tool]), &name)
		args := sampleArguments[tool]
		if c.style.argumentsAsString {
			args = quote(args)
		}
		items = append(items, fmt.Sprintf(`{"id": "call_%d", "type": "function", "function": {"name": %s, "arguments": %s}}`, i, quote(name.Function.Name), args))
	}
	content := "null"
	if c.rng.IntN(2) == 0 {
		content = quote("Let me check that.")
	}
	c.add("assistant", content, `"tool_calls": [`+strings.Join(items, ", ")+`]`)
	for i := range calls {
		c.add("tool", quote(sampleToolResults[c.rng.IntN(len(sampleToolResults))]), fmt.Sprintf(`"tool_call_id": "call_%d"`, i))
	}
}

func (c *conversation) assistantTurn() {
	var extra []string
	if c.style.thinking && c.rng.IntN(3) == 0 {
		extra = append(extra, `"reasoning_content": `+quote(sampleReasoning[c.rng.IntN(len(sampleReasoning))]))
	}
	text := c.text()
	if c.style.thinking && c.rng.IntN(5) == 0 {
		text = "<think>\n" + sampleReasoning[c.rng.IntN(len(sampleReasoning))] + "\n</think>\n\n" + text
	}
	c.add("assistant", c.content(text), extra...)
}

// generateCases returns count deterministic render cases for one style.
func generateCases(style conversationStyle, seed uint64, count int, bos, eos string) []refCase {
	rng := rand.New(rand.NewPCG(seed, 7))
	cases := make([]refCase, 0, count)
	for n := range count {
		c := &conversation{rng: rng, style: style}
		if rng.IntN(2) == 0 {
			c.add("system", c.content("You are a helpful assistant. "+c.text()))
		}
		turns := 1 + rng.IntN(4)
		useTools := style.tools && rng.IntN(2) == 0
		for turn := range turns {
			c.add("user", c.content(c.text()))
			if turn == turns-1 && rng.IntN(2) == 0 {
				break // end on the user turn
			}
			if useTools && !style.alternating && rng.IntN(2) == 0 {
				c.toolCallTurn()
				if rng.IntN(2) == 0 {
					continue // the next user turn follows tool results
				}
			}
			c.assistantTurn()
		}
		if style.alternating && n%10 == 9 {
			// Break alternation on purpose: the template's own check must
			// raise, with the same message in every implementation.
			c.add("user", quote("a second user turn in a row"))
		}
		rc := refCase{
			Messages:            json.RawMessage("[" + strings.Join(c.messages, ", ") + "]"),
			AddGenerationPrompt: rng.IntN(2) == 0,
			BOSToken:            bos,
			EOSToken:            eos,
		}
		if useTools {
			var tools []string
			for i, tool := range sampleTools {
				if i == 0 || rng.IntN(2) == 0 {
					tools = append(tools, tool)
				}
			}
			rc.Tools = json.RawMessage("[" + strings.Join(tools, ", ") + "]")
		}
		if style.thinking && rng.IntN(3) > 0 {
			rc.Kwargs = map[string]json.RawMessage{"enable_thinking": json.RawMessage(fmt.Sprint(rng.IntN(2) == 0))}
		}
		if strings.Contains(c.messages[len(c.messages)-1], `"role": "assistant"`) && rng.IntN(2) == 0 {
			rc.ContinueFinalMessage = true
			rc.AddGenerationPrompt = false
		}
		cases = append(cases, rc)
	}
	return cases
}
