package chattemplate

import (
	"encoding/json"
	"testing"
)

// snippetValues are kwargs whose printing and JSON encoding differ most
// between engines: floats at the repr boundaries, None, booleans, nested
// containers, quotes, control characters, non-ASCII.
const snippetValues = `{
	"floats": [2.0, 0.1, 1e16, 1e-5, 0.0001, 123456789.0, 1.5e300, -0.0, 3.14159, 1e15],
	"ints": [0, -7, 9007199254740993],
	"nothing": null, "yes": true, "no": false,
	"nested": {"b": [1, {"c": null}], "a": "x", "1": "numeric key", "é": "ü"},
	"quotes": ["it's", "say \"hi\"", "both ' and \"", "back\\slash", "tab\tnew\nline", "bell\u0007", "zw\u200bsp"],
	"unicode": "héllo 你好 👩‍💻 \u2028 end",
	"spaces": "\u00a0\u2003 padded \u3000\u001f"
}`

// TestValuePrintingMatchesJinja2 checks printing, str(), tojson with every
// option, trim and join against Python's Jinja2.
func TestValuePrintingMatchesJinja2(t *testing.T) {
	var kwargs map[string]json.RawMessage
	if err := json.Unmarshal([]byte(snippetValues), &kwargs); err != nil {
		t.Fatal(err)
	}
	snippets := []string{
		`{{ floats }}|{% for f in floats %}{{ f }};{% endfor %}`,
		`{{ ints }} {{ nothing }} {{ yes }} {{ no }} {{ nested }}`,
		`{{ quotes }}`,
		`{% for q in quotes %}{{ q | string }}|{% endfor %}{{ nothing | string }}`,
		`{{ nested | tojson }}`,
		`{{ nested | tojson(indent=2) }}`,
		`{{ floats | tojson }} {{ ints | tojson }}`,
		`{{ quotes | tojson }}`,
		`{{ unicode | tojson }} {{ unicode | tojson(ensure_ascii=true) }}`,
		`{{ nested | tojson(separators=(',', ':'), sort_keys=true) }}`,
		`{{ nested | tojson(indent='\t') }} {{ [] | tojson(indent=4) }} {{ {} | tojson(indent=4) }}`,
		`[{{ spaces | trim }}] [{{ nothing | trim }}] [{{ '--x--' | trim('-') }}]`,
		`{{ quotes | join(', ') }} {{ ints | join }} {{ [nothing, yes, 2.0] | join('/') }}`,
		`{{ '\x41\u00e9\n\t\'' }}|{{ "a\"b" }}|{{ 'line\
continued' }}`,
		"{% raw %}{{ not rendered }}{% endraw %} {# comment #}x",
		`{{ strftime_now('%Y-%m-%d %H:%M:%S %a %A %b %B %j %I%p %y') }}`,
		"  {% if yes %}\n    indented\n  {% endif %}\n{%- if no -%} no {%- else -%}  else  {%- endif %}\n{{ 'end' }}\n",
	}
	in := refCase{Messages: json.RawMessage(`[]`), Kwargs: kwargs}
	jobs := make([]refJob, len(snippets))
	for i, snippet := range snippets {
		jobs[i] = refJob{snippet, []refCase{in}}
	}
	want := renderJinja2(t, jobs)
	for i, snippet := range snippets {
		tmpl := mustParse(t, snippet)
		tmpl.now = fixedClock()
		got, err := tmpl.Render(in.input())
		if msg := compareWithReference(got, err, want[i][0]); msg != "" {
			t.Errorf("%s\n%s", snippet, msg)
		}
	}
}
