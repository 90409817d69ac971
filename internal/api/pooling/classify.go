package pooling

import (
	"net/http"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/api/embeddings"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/httperr"
)

// ClassifySurface is POST /classify (vLLM's ServingClassification) on a
// --convert classify model: one sequence per input, and per input the
// stand-in head's logits (see head) through the activation — softmax over
// several labels, the sigmoid for one; use_activation false returns the
// logits. label is the most probable class's name, LABEL_k as in a
// Hugging Face config without id2label.
type ClassifySurface struct {
	Basis *embeddings.EmbedBasis
}

// classifyRequest is what only /classify and /pooling requests carry.
type classifyRequest struct {
	common
	labels int
}

func classifyReq(g *pipeline.GenRequest) *classifyRequest { return g.Ext.(*classifyRequest) }

var classifyFields = fieldSet("input", "messages")

func (ClassifySurface) Parse(s *pipeline.Server, o wire.Object, r *http.Request) (*pipeline.GenRequest, *wire.APIError) {
	g, c, e := newRequest(s, o, r, classifyFields)
	if e != nil {
		return nil, e
	}
	g.Ext = &classifyRequest{common: c, labels: s.Opts().Pooling.Labels()}
	if e := parseInputs(s, o, g, c, "classification"); e != nil {
		return nil, e
	}
	return g, nil
}

func (ClassifySurface) Encoder(*pipeline.Job) pipeline.EventEncoder { return nil }

// probs computes the class probabilities (or logits) of sequence i into
// dst; vec is scratch of the embedding's length.
func (cr *classifyRequest) probs(h head, dst, vec []float32, ids []uint32) {
	h.logits(dst, vec, ids)
	if cr.activation() {
		activate(dst)
	}
}

func (cs ClassifySurface) Respond(j *pipeline.Job, w http.ResponseWriter) {
	g, cr := j.G, classifyReq(j.G)
	h := head{basis: cs.Basis, dim: j.S.Opts().EmbeddingDim}
	vec, p := make([]float32, h.dim), make([]float32, cr.labels)
	b := make([]byte, 0, 192+len(g.Prompts)*(64+cr.labels*22))
	b = embeddings.AppendListHead(b, "classify-", g)
	for i := range g.Prompts {
		if i > 0 {
			b = append(b, ',')
		}
		cr.probs(h, p, vec, g.Prompts[i].IDs)
		best := 0
		for k, v := range p {
			if v > p[best] {
				best = k
			}
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"label":"LABEL_`...)
		b = strconv.AppendInt(b, int64(best), 10)
		b = append(b, `","probs":`...)
		b = embeddings.AppendFloats(b, p)
		b = append(b, `,"num_classes":`...)
		b = strconv.AppendInt(b, int64(cr.labels), 10)
		b = append(b, '}')
	}
	b = appendUsage(b, promptTokens(g))
	httperr.Write(w, http.StatusOK, append(b, '}'))
}
