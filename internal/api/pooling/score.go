package pooling

import (
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/api/embeddings"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/httperr"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
	"github.com/mocker-server/mocker-server/internal/pyrepr"
)

// ScoreSurface is POST /score and /v1/score (Rerank false), and /rerank,
// /v1/rerank and /v2/rerank (Rerank true): vLLM's ServingScores.
//
// A bi-encoder (--convert embed) embeds every query and document as its
// own sequence (a query shared by N documents once) and scores a pair by
// the cosine similarity of the two embeddings, as vLLM's embedding scorer
// does. A cross-encoder (--convert classify --num-labels 1) reads each
// pair as one sequence, the query's tokens then the document's, so the N
// sequences of one query share a cached prefix; its stand-in logit is
// 10·cos − 5 of the same two embeddings and its score the sigmoid of that
// (the raw logit with use_activation false). Either way a document scored
// against itself gets the highest score there is (cos = 1) and ranks first.
type ScoreSurface struct {
	Basis  *embeddings.EmbedBasis
	Rerank bool
}

// scorePair is one (query, document) pair: the indices of its sequences
// (bi-encoder) or its token ids (cross-encoder), and its usage tokens.
type scorePair struct {
	q, d       int      // bi-encoder: indices into g.Prompts
	qIDs, dIDs []uint32 // cross-encoder: each side tokenized alone
	tokens     int
}

// scoreRequest is what only score and rerank requests carry.
type scoreRequest struct {
	common
	rerank    bool
	cross     bool
	pairs     []scorePair
	documents []string // rerank: the documents as sent
	topN      int      // rerank: 0 = all
	returnDoc bool     // rerank: write each result's document
}

func scoreReq(g *pipeline.GenRequest) *scoreRequest { return g.Ext.(*scoreRequest) }

var (
	scoreFields  = fieldSet("queries", "documents", "items", "data_1", "data_2", "text_1", "text_2")
	rerankFields = fieldSet("query", "documents", "top_n", "return_documents")
)

// scoreKeyPairs are ScoreRequest's field pairs in the order vLLM's union
// tries them (queries/documents, queries/items, data_1/data_2,
// text_1/text_2).
var scoreKeyPairs = [...][2]string{{"queries", "documents"}, {"queries", "items"}, {"data_1", "data_2"}, {"text_1", "text_2"}}

func (ss ScoreSurface) Parse(s *pipeline.Server, o wire.Object, r *http.Request) (*pipeline.GenRequest, *wire.APIError) {
	known := scoreFields
	if ss.Rerank {
		known = rerankFields
	}
	g, c, e := newRequest(s, o, r, known)
	if e != nil {
		return nil, e
	}
	sr := &scoreRequest{common: c, rerank: ss.Rerank, cross: s.Opts().Pooling.CrossEncoder(), returnDoc: true}
	g.Ext = sr
	var k1, k2 string
	if ss.Rerank {
		k1, k2 = "query", "documents"
		topN := o.Int("top_n")
		sr.returnDoc = o.Bool("return_documents", true)
		if e := o.Failed(); e != nil {
			return nil, e
		}
		if topN.Set && topN.I > 0 {
			sr.topN = int(min(topN.I, math.MaxInt32))
		}
	} else {
		k1, k2 = "text_1", "text_2"
		for _, p := range scoreKeyPairs {
			if o.Has(p[0]) && o.Has(p[1]) {
				k1, k2 = p[0], p[1]
				break
			}
		}
	}
	for _, k := range []string{k1, k2} {
		if !o.Has(k) {
			return nil, wire.ErrFieldRequired(k)
		}
		if e := checkCount(s, o, k); e != nil {
			return nil, e
		}
	}
	if ss.Rerank {
		if raw, _ := o.Raw(k1); rawKind(raw) == '[' {
			return nil, wire.ErrFieldType(k1, "string")
		}
	}
	texts1, e := scoreTexts(s, o, k1)
	if e != nil {
		return nil, e
	}
	texts2, e := scoreTexts(s, o, k2)
	if e != nil {
		return nil, e
	}
	switch {
	case len(texts1) > 1 && len(texts1) != len(texts2):
		return nil, wire.ErrInvalid("", "Input lengths must be either 1:1, 1:N or N:N")
	case len(texts1) == 0:
		return nil, wire.ErrInvalid("", "At least one text element must be given")
	case len(texts2) == 0:
		return nil, wire.ErrInvalid("", "At least one text_pair element must be given")
	}
	if ss.Rerank {
		sr.documents = texts2
	}
	if sr.cross {
		e = crossPairs(s, g, sr, texts1, texts2)
	} else {
		e = biPairs(s, g, sr, texts1, texts2)
	}
	if e != nil {
		return nil, e
	}
	return g, nil
}

// scoreTexts reads a score input: a string or an array of strings. The
// multimodal form (an object with content parts) is refused as vLLM
// refuses it for a text-only model.
func scoreTexts(s *pipeline.Server, o wire.Object, key string) ([]string, *wire.APIError) {
	raw, _ := o.Raw(key)
	switch rawKind(raw) {
	case '"':
		t, _ := o.String(key)
		return []string{t}, o.Failed()
	case '{':
		return nil, wire.ErrInvalid(key, "MultiModalParam is not supported for %s", s.Opts().Model.ServedName())
	case '[':
	default:
		return nil, wire.ErrFieldType(key, "string or array")
	}
	items, _ := o.Array(key)
	out := make([]string, len(items))
	for i, it := range items {
		if rawKind(it) == '{' {
			return nil, wire.ErrInvalid(key, "MultiModalParam is not supported for %s", s.Opts().Model.ServedName())
		}
		var e *wire.APIError
		if out[i], e = wire.ParseString(it, key+"["+strconv.Itoa(i)+"]"); e != nil {
			return nil, e
		}
	}
	return out, o.Failed()
}

// biPairs makes one sequence per query (once when it is shared) and per
// document, and the pairs over them.
func biPairs(s *pipeline.Server, g *pipeline.GenRequest, sr *scoreRequest, t1, t2 []string) *wire.APIError {
	for _, t := range t1 {
		if e := sr.addPrompt(s, g, s.Tokenizer().Encode(t, sr.addSpecial), true, "text_1", "scoring"); e != nil {
			return e
		}
	}
	for _, t := range t2 {
		if e := sr.addPrompt(s, g, s.Tokenizer().Encode(t, sr.addSpecial), true, "text_2", "scoring"); e != nil {
			return e
		}
	}
	sr.pairs = make([]scorePair, len(t2))
	for i := range t2 {
		q := 0
		if len(t1) > 1 {
			q = i
		}
		d := len(t1) + i
		sr.pairs[i] = scorePair{q: q, d: d, tokens: len(g.Prompts[q].IDs) + len(g.Prompts[d].IDs)}
	}
	return nil
}

// crossPairs makes one sequence per pair: the query's tokens (with the
// special tokens) followed by the document's.
func crossPairs(s *pipeline.Server, g *pipeline.GenRequest, sr *scoreRequest, t1, t2 []string) *wire.APIError {
	tok := s.Tokenizer()
	sr.pairs = make([]scorePair, len(t2))
	var qIDs []uint32
	for i, d := range t2 {
		if i == 0 || len(t1) > 1 {
			qIDs = tok.Encode(t1[min(i, len(t1)-1)], sr.addSpecial)
		}
		dIDs := tok.Encode(d, sr.addSpecial)
		pair := slices.Concat(qIDs, tok.Encode(d, false))
		if e := sr.addPrompt(s, g, pair, true, "text_2", "scoring"); e != nil {
			return e
		}
		sr.pairs[i] = scorePair{qIDs: qIDs, dIDs: dIDs, tokens: len(g.Prompts[i].IDs)}
	}
	return nil
}

func (ScoreSurface) Encoder(*pipeline.Job) pipeline.EventEncoder { return nil }

// scores computes every pair's score, rounded to float32 as vLLM's tensors
// hold them.
func (ss ScoreSurface) scores(j *pipeline.Job) []float64 {
	g, sr := j.G, scoreReq(j.G)
	dim := j.S.Opts().EmbeddingDim
	a, b := make([]float32, dim), make([]float32, dim)
	out := make([]float64, len(sr.pairs))
	lastQ := -1
	var lastQIDs []uint32 // cross-encoder: the query a holds (1:N shares one slice)
	for i, p := range sr.pairs {
		var cos float64
		if sr.cross {
			if i == 0 || !sameSlice(p.qIDs, lastQIDs) {
				ss.Basis.Embed(a, p.qIDs, dim)
				lastQIDs = p.qIDs
			}
			cos = dot(a, ss.Basis.Embed(b, p.dIDs, dim))
			logit := 10*cos - 5
			if sr.activation() {
				logit = sigmoid(logit)
			}
			out[i] = float64(float32(logit))
			continue
		}
		if p.q != lastQ {
			ss.Basis.Embed(a, g.Prompts[p.q].IDs, dim)
			lastQ = p.q
		}
		cos = dot(a, ss.Basis.Embed(b, g.Prompts[p.d].IDs, dim))
		out[i] = float64(float32(cos))
	}
	return out
}

// sameSlice reports whether a and b are the same ids (one backing array).
func sameSlice(a, b []uint32) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// dot is the cosine similarity of two unit vectors.
func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func (ss ScoreSurface) Respond(j *pipeline.Job, w http.ResponseWriter) {
	g, sr := j.G, scoreReq(j.G)
	scores := ss.scores(j)
	tokens := 0
	for _, p := range sr.pairs {
		tokens += p.tokens
	}
	if sr.rerank {
		httperr.Write(w, http.StatusOK, appendRerank(nil, g, sr, scores, tokens))
		return
	}
	b := make([]byte, 0, 192+len(scores)*48)
	b = embeddings.AppendListHead(b, "score-", g)
	for i, sc := range scores {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"object":"score","score":`...)
		b = append(b, pyrepr.Float(sc)...)
		b = append(b, '}')
	}
	b = appendUsage(b, tokens)
	httperr.Write(w, http.StatusOK, append(b, '}'))
}

// appendRerank writes vLLM's RerankResponse: the results sorted by
// relevance (stable, so ties keep the documents' order), cut to top_n.
func appendRerank(b []byte, g *pipeline.GenRequest, sr *scoreRequest, scores []float64, tokens int) []byte {
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int {
		switch {
		case scores[x] > scores[y]:
			return -1
		case scores[x] < scores[y]:
			return 1
		}
		return 0
	})
	if sr.topN > 0 && sr.topN < len(order) {
		order = order[:sr.topN]
	}
	b = append(b, `{"id":"rerank-`...)
	b = jsonenc.AppendStringContent(b, g.BaseID)
	b = append(b, `","model":`...)
	b = jsonenc.AppendString(b, g.Model)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	b = append(b, `},"results":[`...)
	for n, i := range order {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		if sr.returnDoc {
			b = append(b, `,"document":{"text":`...)
			b = jsonenc.AppendString(b, sr.documents[i])
			b = append(b, `,"multi_modal":null}`...)
		}
		b = append(b, `,"relevance_score":`...)
		b = append(b, pyrepr.Float(scores[i])...)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendUsage appends vLLM's UsageInfo of a pooling answer.
func appendUsage(b []byte, tokens int) []byte {
	b = append(b, `],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	return append(b, `,"completion_tokens":0,"prompt_tokens_details":null}`...)
}
