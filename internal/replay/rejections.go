package replay

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// RejectionCount is one reason the engines refused requests that could
// never run, how many, what it means and one of their messages.
type RejectionCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	// Explanation says what the reason means and which setting changes it.
	Explanation string `json:"explanation"`
	// Example is the engine's message for the first such request.
	Example string `json:"example"`
}

// rejectionReasons name and explain each engine rejection reason.
var rejectionReasons = map[engine.RejectReason]struct{ name, explain string }{
	engine.RejectEmptyPrompt: {"empty_prompt", "the prompt has no tokens"},
	engine.RejectContextLength: {"context_length",
		"the prompt is longer than max_model_len allows: raise --max-model-len (vLLM refuses such requests with 400 too)"},
	engine.RejectKVCapacity: {"kv_capacity",
		"prompt plus output need more KV blocks than one engine's pool holds: raise --num-gpu-blocks-override or --block-size"},
	engine.RejectLoRADisabled: {"lora_disabled", "the request names a LoRA adapter but LoRA is not enabled"},
}

// rejections counts rejected requests by reason, in order of first
// appearance (a run is deterministic, so is the order).
type rejections struct {
	counts []RejectionCount
}

func (rs *rejections) add(rej *engine.Rejection) {
	r, ok := rejectionReasons[rej.Reason]
	if !ok {
		r.name, r.explain = fmt.Sprintf("reason_%d", rej.Reason), "the engine refused the request"
	}
	for i := range rs.counts {
		if rs.counts[i].Reason == r.name {
			rs.counts[i].Count++
			return
		}
	}
	rs.counts = append(rs.counts, RejectionCount{Reason: r.name, Count: 1, Explanation: r.explain, Example: rej.Message})
}

// sorted returns the counts, most frequent first.
func (rs *rejections) sorted() []RejectionCount {
	out := slices.Clone(rs.counts)
	slices.SortStableFunc(out, func(a, b RejectionCount) int { return b.Count - a.Count })
	return out
}

// writeRejections explains the rejections of every report that has some,
// after the terminal table.
func writeRejections(w io.Writer, reports []*Report) error {
	for _, r := range reports {
		if len(r.Rejections) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%d of %d requests of %s were rejected (they could never run):\n", r.Summary.Rejected, r.Summary.Requests, r.Label)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "reason\tcount\twhat it means\texample")
		for _, c := range r.Rejections {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", c.Reason, c.Count, c.Explanation, c.Example)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
