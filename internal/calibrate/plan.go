package calibrate

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Kind is an experiment's family.
type Kind string

// The experiment families of a plan.
const (
	// KindPrefill is one request alone on an idle server: TTFT vs prompt
	// length.
	KindPrefill Kind = "prefill"
	// KindPrefix is one request whose prompt starts with a prefix a
	// warm-up request just put in the prefix cache.
	KindPrefix Kind = "prefix"
	// KindDecode is a batch of B requests sent together with long
	// outputs: ITL vs batch size and context length.
	KindDecode Kind = "decode"
	// KindMixed is prefills arriving while a decode batch runs: the
	// chunked-prefill interference of a continuous-batching engine.
	KindMixed Kind = "mixed"
)

// Role names a stream's part in an experiment.
type Role string

// Stream roles.
const (
	// RoleProbe is the measured request of prefill, prefix and mixed
	// experiments, and every request of a decode batch.
	RoleProbe Role = "probe"
	// RoleWarm puts a prefix into the cache; it is simulated, not measured.
	RoleWarm Role = "warm"
	// RoleBackground is a decode request a mixed experiment's probes
	// interrupt; its gaps are measured.
	RoleBackground Role = "background"
)

// Stream is one request of an experiment.
type Stream struct {
	Role Role `json:"role"`
	// Offset is when the request is sent after the experiment starts;
	// After, when ≥ 0, delays it further until stream After has finished;
	// AtToken, when > 0, until stream 0 has received that many tokens.
	Offset  time.Duration `json:"offset_ns,omitempty"`
	After   int           `json:"after"`
	AtToken int           `json:"at_token,omitempty"`
	// Prompt is the wanted prompt length in tokens, Prefix how many of its
	// leading tokens are the experiment's shared prefix.
	Prompt int `json:"prompt"`
	Prefix int `json:"prefix,omitempty"`
	// Output is max_tokens (and min_tokens).
	Output int `json:"output"`
}

// Experiment is one designed point, run Repeats times.
type Experiment struct {
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// HeldOut experiments are measured and predicted but not fitted: their
	// error is the honest one.
	HeldOut bool     `json:"held_out"`
	Streams []Stream `json:"streams"`
}

// Plan is the ordered list of experiments; a round runs each once.
type Plan struct {
	Experiments []Experiment `json:"experiments"`
	// Repeats is how many rounds the plan wants; the budget may end it
	// earlier (after at least one complete round when it can).
	Repeats int `json:"repeats"`
	// Warmup requests run first and are discarded.
	Warmup int `json:"warmup"`
}

// PlanOptions shape a plan. The zero value of each field is its default.
type PlanOptions struct {
	// MaxConcurrency bounds the requests in flight at any time (default 64).
	MaxConcurrency int
	// MaxModelLen bounds prompt + output (default 32768).
	MaxModelLen int
	// KVTokens is the server's KV capacity in tokens when it says (its
	// cache_config_info); a decode batch is kept within half of it, so
	// the probes measure passes, not preemption. 0 means unknown.
	KVTokens int
	// MaxPromptTokens is the longest prefill probe (default 8192, vLLM's
	// max_num_batched_tokens; one beyond it is added, held out, to show
	// chunking).
	MaxPromptTokens int
	// DecodeOutput is the output length of decode batches (default 256).
	DecodeOutput int
	// Repeats is the number of rounds wanted (default 3).
	Repeats int
	// Quick shrinks the plan (fewer points, shorter outputs) for short
	// budgets and tests.
	Quick bool
}

func (o PlanOptions) withDefaults() PlanOptions {
	if o.MaxConcurrency <= 0 {
		o.MaxConcurrency = 64
	}
	if o.MaxModelLen <= 0 {
		o.MaxModelLen = 32768
	}
	if o.MaxPromptTokens <= 0 {
		o.MaxPromptTokens = 8192
	}
	if o.DecodeOutput <= 0 {
		o.DecodeOutput = 256
		if o.Quick {
			o.DecodeOutput = 128
		}
	}
	if o.Repeats <= 0 {
		o.Repeats = 3
	}
	return o
}

// prefillOutput is the output length of prefill probes: a few tokens, so
// the request leaves the server soon after its first token.
const prefillOutput = 4

// NewPlan designs the experiments. Fitted and held-out points interleave:
// prefill lengths between the fitted ones are held out, so are the prefix-cache probes
// (the model says a cached prefix costs nothing; they test it), one decode
// batch size per prompt length, the chunked prefill beyond the budget and
// every mixed experiment (their interference is predicted from prefill and
// decode alone).
func NewPlan(o PlanOptions) Plan {
	o = o.withDefaults()
	var p Plan
	p.Repeats, p.Warmup = o.Repeats, 4
	limit := func(n int) int { return min(n, o.MaxModelLen-prefillOutput-1) }

	// Prefill sweep: fitted lengths about geometric up to the prefill
	// budget (the prefill curve's nodes: a bend between two of them is cut
	// straight, so they are dense), and held-out lengths between them.
	fitted := []int{32, 128, 256, 512, 1024, 2048, 3072, 4096, 6144, 8192}
	held := []int{96, 384, 768, 1536, 2560, 5120}
	if o.Quick {
		fitted = []int{32, 256, 512, 1024, 2048, 4096, 6144, 8192}
		held = []int{128, 768, 3072}
	}
	type point struct {
		l    int
		held bool
	}
	var sweep []point
	seen := map[int]bool{}
	add := func(l int, h bool) {
		if l = limit(min(l, o.MaxPromptTokens)); !seen[l] {
			seen[l] = true
			sweep = append(sweep, point{l, h})
		}
	}
	add(o.MaxPromptTokens, false) // the curve must span the budget
	for _, l := range fitted {
		add(l, false)
	}
	for _, l := range held {
		if l < o.MaxPromptTokens {
			add(l, true)
		}
	}
	sort.Slice(sweep, func(i, j int) bool { return sweep[i].l < sweep[j].l })
	for _, pt := range sweep {
		p.Experiments = append(p.Experiments, Experiment{
			ID: fmt.Sprintf("prefill-%d", pt.l), Kind: KindPrefill, HeldOut: pt.held,
			Streams: []Stream{{Role: RoleProbe, After: -1, Prompt: pt.l, Output: prefillOutput}},
		})
	}
	if beyond := limit(o.MaxPromptTokens * 3 / 2); beyond > o.MaxPromptTokens {
		p.Experiments = append(p.Experiments, Experiment{
			ID: fmt.Sprintf("prefill-chunked-%d", beyond), Kind: KindPrefill, HeldOut: true,
			Streams: []Stream{{Role: RoleProbe, After: -1, Prompt: beyond, Output: prefillOutput}},
		})
	}
	// Prefix-cache probes: a cached prefix of P tokens plus S new ones. The
	// fitted ones price attention over a cached prefix (the profile's
	// prefill_cached_ms_per_mtok); the held-out ones check it at other
	// proportions.
	for _, pp := range []struct {
		prefix, suffix int
		held           bool
	}{{1024, 256, true}, {4096, 512, false}, {8192, 256, true}, {16384, 512, false}} {
		if pp.prefix+pp.suffix > limit(o.MaxModelLen) || pp.prefix+pp.suffix > 2*o.MaxPromptTokens {
			continue
		}
		p.Experiments = append(p.Experiments, Experiment{
			ID: fmt.Sprintf("prefix-%d+%d", pp.prefix, pp.suffix), Kind: KindPrefix, HeldOut: pp.held,
			Streams: []Stream{
				{Role: RoleWarm, After: -1, Prompt: pp.prefix + 16, Prefix: pp.prefix, Output: 1},
				{Role: RoleProbe, After: 0, Prompt: pp.prefix + pp.suffix, Prefix: pp.prefix, Output: prefillOutput},
			},
		})
	}
	// Decode sweeps: batch sizes at a short and a long context, and one or
	// two at very long ones (the workloads the profile will serve run long
	// contexts; a decode grid fitted only on short ones would extrapolate). A batch's
	// prompts together stay within 16 prefill budgets, so its prefill
	// burst is a few passes, and within half the KV capacity.
	out := o.DecodeOutput
	batches := []int{1, 2, 4, 8, 16, 32, 64, 128}
	if o.Quick {
		batches = []int{1, 4, 16, 64}
	}
	for _, ctx := range uniqueSorted([]int{128, 4096, 3 * o.MaxPromptTokens / 2, 3 * o.MaxPromptTokens}) {
		ctx = min(ctx, o.MaxModelLen-out-1)
		var bs []int
		for _, b := range batches {
			if b <= o.MaxConcurrency && b*ctx <= 16*o.MaxPromptTokens && (o.KVTokens == 0 || 2*b*(ctx+out) <= o.KVTokens) {
				bs = append(bs, b)
			}
		}
		switch {
		case ctx > 2*o.MaxPromptTokens && len(bs) > 1:
			bs = bs[:1] // the longest context: one request
		case ctx > 4096 && len(bs) > 2:
			bs = bs[:2] // the very long context: two batch sizes suffice
		}
		if len(p.Experiments) > 0 && strings.HasSuffix(p.Experiments[len(p.Experiments)-1].ID, fmt.Sprintf("ctx%d", ctx)) {
			continue // the model length clamped two contexts to one
		}
		for i, b := range bs {
			held := len(bs) > 3 && i == len(bs)-2
			var st []Stream
			for range b {
				st = append(st, Stream{Role: RoleProbe, After: -1, Prompt: ctx, Output: out})
			}
			p.Experiments = append(p.Experiments, Experiment{
				ID: fmt.Sprintf("decode-b%d-ctx%d", b, ctx), Kind: KindDecode, HeldOut: held, Streams: st,
			})
		}
	}
	// Mixed: a decode batch with prefills arriving a third and two thirds
	// of the way into it (the simulator submits them at the instants they
	// were really sent).
	for _, mx := range [][2]int{{8, 2048}, {32, 4096}} {
		b, l := mx[0], mx[1]
		if b+2 > o.MaxConcurrency || l > limit(o.MaxModelLen) || o.KVTokens > 0 && 2*(b*(256+out)+2*l) > o.KVTokens {
			continue
		}
		var st []Stream
		for range b {
			st = append(st, Stream{Role: RoleBackground, After: -1, Prompt: 256, Output: out})
		}
		for k := 1; k <= 2; k++ {
			st = append(st, Stream{Role: RoleProbe, After: -1, AtToken: k * out / 3, Prompt: l, Output: prefillOutput})
		}
		p.Experiments = append(p.Experiments, Experiment{
			ID: fmt.Sprintf("mixed-b%d-prefill%d", b, l), Kind: KindMixed, HeldOut: true, Streams: st,
		})
	}
	return p
}

func uniqueSorted(v []int) []int {
	sort.Ints(v)
	out := v[:0]
	for i, x := range v {
		if i == 0 || x != v[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// Totals returns the plan's number of requests and of prompt and output
// tokens per round.
func (p Plan) Totals() (requests, promptTokens, outputTokens int) {
	for _, e := range p.Experiments {
		for _, s := range e.Streams {
			requests++
			promptTokens += s.Prompt
			outputTokens += s.Output
		}
	}
	return
}

// Write prints the plan, one experiment a line (--dry-run).
func (p Plan) Write(w io.Writer) {
	req, pt, ot := p.Totals()
	fmt.Fprintf(w, "calibration plan: %d experiments × up to %d rounds (after %d warm-up requests); per round %d requests, %d prompt + %d output tokens\n",
		len(p.Experiments), p.Repeats, p.Warmup, req, pt, ot)
	fmt.Fprintf(w, "%-26s %-8s %-9s %s\n", "experiment", "kind", "use", "requests")
	for _, e := range p.Experiments {
		use := "fit"
		if e.HeldOut {
			use = "held-out"
		}
		fmt.Fprintf(w, "%-26s %-8s %-9s %s\n", e.ID, e.Kind, use, describeStreams(e.Streams))
	}
}

func describeStreams(st []Stream) string {
	type key struct {
		role                   Role
		prompt, prefix, output int
	}
	var order []key
	n := map[key]int{}
	for _, s := range st {
		k := key{s.Role, s.Prompt, s.Prefix, s.Output}
		if n[k] == 0 {
			order = append(order, k)
		}
		n[k]++
	}
	out := ""
	for i, k := range order {
		if i > 0 {
			out += ", "
		}
		pre := ""
		if k.prefix > 0 {
			pre = fmt.Sprintf(" (%d cached)", k.prefix)
		}
		out += fmt.Sprintf("%d× %s %d→%d tokens%s", n[k], k.role, k.prompt, k.output, pre)
	}
	return out
}
