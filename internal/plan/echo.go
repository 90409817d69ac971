package plan

import "github.com/mocker-server/mocker-server/internal/engine"

// Echo plans an answer that repeats text, as llm-d-inference-sim's echo
// mode does (its EchoDataset): the tokens are the model tokenizer's
// encoding of text, with no EOS (usage counts the echoed tokens only), the
// finish reason is "length" when they reach p.MaxTokens and "stop"
// otherwise. The simulator sends the whole text even past max_tokens; here
// the tokens are cut at p.MaxTokens, because the engine never generates
// more than a request allows (vLLM's contract). Stop strings, stop token
// ids and reasoning framing do not apply. An empty text plans the EOS
// alone, so every answer has a token to deliver.
func Echo(p Params, text string) Result {
	all := p
	all.MaxTokens = int(^uint(0) >> 1)
	all.Stop, all.StopTokenIDs = nil, nil
	res := Text(all, []string{text})
	n := len(res.IDs) - 1 // the text's tokens, without Text's EOS
	if n == 0 {
		return Text(Params{MaxTokens: max(p.MaxTokens, 0), Model: p.Model}, nil)
	}
	res.NaturalEnd = false
	res.FinishReason = engine.FinishStop
	if m := max(p.MaxTokens, 0); n >= m {
		n, res.FinishReason = m, engine.FinishLength
	}
	res.IDs, res.parts, res.ends = res.IDs[:n], res.parts[:n], res.ends[:n]
	return res
}
