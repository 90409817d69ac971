package pooling

import (
	"math"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/embeddings"
)

func TestActivate_SoftmaxAndSigmoid(t *testing.T) {
	v := []float32{1, 2, 3}
	activate(v)
	z := math.Exp(1) + math.Exp(2) + math.Exp(3)
	for i, want := range []float64{math.Exp(1) / z, math.Exp(2) / z, math.Exp(3) / z} {
		if math.Abs(float64(v[i])-want) > 1e-6 {
			t.Errorf("softmax[%d] = %v, want %v", i, v[i], want)
		}
	}
	// Large logits do not overflow (the maximum is subtracted first).
	big := []float32{1000, 1000}
	activate(big)
	if big[0] != 0.5 || big[1] != 0.5 {
		t.Errorf("softmax of equal large logits = %v", big)
	}
	one := []float32{0}
	activate(one)
	if one[0] != 0.5 {
		t.Errorf("sigmoid(0) = %v", one[0])
	}
}

// The head's logits are √dim times the embedding's components, the sign
// flipped on each wrap past dim.
func TestHead_LogitsReadTheEmbedding(t *testing.T) {
	const dim = 8
	h := head{basis: embeddings.NewEmbedBasis(3, dim), dim: dim}
	ids := []uint32{5, 6, 7}
	e := h.basis.Embed(make([]float32, dim), ids, dim)
	got := make([]float32, 2*dim+1)
	h.logits(got, make([]float32, dim), ids)
	for k, g := range got {
		want := float64(e[k%dim]) * math.Sqrt(dim)
		if (k/dim)%2 == 1 {
			want = -want
		}
		if math.Abs(float64(g)-want) > 1e-5 {
			t.Errorf("logit %d = %v, want %v", k, g, want)
		}
	}
}
