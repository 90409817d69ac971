package tokenizer

// Synthetic logprobs: deterministic values derived from the token id, so
// clients that parse logprobs get stable, plausible numbers without a model.

// Logprob returns the synthetic logprob of generated token t:
// −0.1 × ((t mod 10) + 1), i.e. −0.1 … −1.0. It is computed as an integer
// number of tenths divided by 10, so the values are the float64 values
// closest to the decimal ones (−0.9, not −0.9000000000000001).
func Logprob(t uint32) float64 {
	return -float64(t%10+1) / 10
}

// Candidate is one entry of a top-logprobs list.
type Candidate struct {
	ID      uint32
	Logprob float64
	// Text is the model's TokenText(ID): specials as their literal strings.
	Text string
}

// TopCandidates appends to dst[:0] and returns the k-entry top-logprobs list
// of sampled token t under model m: entry 0 is t itself (rank 1, logprob
// Logprob(t)); then candidates j = 1, 2, … with id (t+j) mod m.VocabSize() and
// logprob Logprob(t) − 0.1×j, skipping a candidate whose text duplicates an
// earlier entry's text (j keeps counting over skipped candidates). k ≤ 0
// returns an empty list. Text is the literal form (m.TokenText); with
// return_tokens_as_token_ids the caller renders "token_id:<id>" itself.
// It allocates only if dst has less than k capacity (and the model's
// TokenText does not).
func TopCandidates(m Model, t uint32, k int, dst []Candidate) []Candidate {
	dst = dst[:0]
	if k <= 0 {
		return dst
	}
	vocab := uint32(m.VocabSize())
	t %= vocab
	base := t%10 + 1
	dst = append(dst, Candidate{ID: t, Logprob: Logprob(t), Text: m.TokenText(t)})
	for j := uint32(1); len(dst) < k && j < vocab; j++ {
		id := (t + j) % vocab
		text := m.TokenText(id)
		dup := false
		for i := range dst {
			if dst[i].Text == text {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		dst = append(dst, Candidate{ID: id, Logprob: -float64(base+j) / 10, Text: text})
	}
	return dst
}
