package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// A body of 4 KB or more is validated and split by wire's own pass
// instead of encoding/json's (docs/multimodal.md, "Measured cost"). Through
// a real server it must answer exactly as encoding/json's path does: the
// same completion for the same request (a key spelled with an escape
// sends the body down encoding/json's path), and encoding/json's error
// text for a broken body.
func TestLargeBodyParsesAsEncodingJSON(t *testing.T) {
	env := startServer(t, nil)
	const chat = "/v1/chat/completions"
	long := strings.Repeat(`Long prompt with "quotes", tabs\t, é and <html> & more. `, 120) // 7 KB
	content, _ := json.Marshal(long)
	fast := `{"messages":[{"role":"user","content":` + string(content) + `}],"max_tokens":8,"seed":7}`
	slow := strings.Replace(fast, `"messages"`, `"mess\u0061ges"`, 1)
	a, b := env.post(chat, fast), env.post(chat, slow)
	if a.Status != 200 || b.Status != 200 {
		t.Fatalf("%d %.200s / %d %.200s", a.Status, a.Body, b.Status, b.Body)
	}
	ma, mb := jsonOf(t, a.Body), jsonOf(t, b.Body)
	if !jsonEqual(ma["choices"], mb["choices"]) || !jsonEqual(ma["usage"], mb["usage"]) {
		t.Errorf("the two paths differ:\n%s\n%s", a.Body, b.Body)
	}
	if pt := ma["usage"].(map[string]any)["prompt_tokens"].(float64); pt < 500 {
		t.Errorf("prompt_tokens %v for a 7 KB prompt", pt)
	}

	pad := strings.Repeat("x", 5000)
	for _, body := range []string{
		`{"messages":[{"role":"user","content":"` + pad + `"}],}`,         // trailing comma
		`{"messages":[{"role":"user","content":"` + pad + "\x01" + `"}]}`, // control character in a string
		`{"messages":[{"role":"user","content":"` + pad + `"}]} {}`,       // a second value
		`{"messages":[{"role":"user","content":"` + pad + `\q"}]}`,        // bad escape
		`{"messages":[{"role":"user","content":"` + pad + `"}]`,           // cut
	} {
		want := "Invalid JSON body: " + decoderError(body)
		r := env.post(chat, body)
		if msg, _, _, _ := errorOf(t, r); r.Status != 400 || msg != want {
			t.Errorf("%.60q…: %d %q, want 400 %q", body[len(body)-20:], r.Status, msg, want)
		}
	}
	if r := env.post(chat, `["`+pad+`"]`); r.Status != 400 || !strings.Contains(r.Body, "Request body must be a JSON object") {
		t.Errorf("array body: %d %s", r.Status, r.Body)
	}
}

// decoderError is what encoding/json's Decoder says about body, as the
// server's path for small bodies reports it.
func decoderError(body string) string {
	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	var m map[string]json.RawMessage
	err := dec.Decode(&m)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of JSON input"
	case err != nil:
		return err.Error()
	}
	rest := bytes.TrimLeft([]byte(body)[dec.InputOffset():], " \t\r\n")
	return "invalid character '" + string(rest[0]) + "' after top-level value"
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
