package calibrate

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// Grid is the fitted profile's shape: the prefill axis and the decode
// grid's two axes. The parameter vector θ holds the prefill values, then
// the decode grid row by row (row i ↔ KV[i], column j ↔ Ctx[j]), then the
// cached-context coefficient (prefill_cached_ms_per_mtok: what a prompt
// chunk pays per million new × cached token pairs, fitted from the
// cached-prefix probes and every chunked prefill).
type Grid struct {
	Prefill []float64
	KV      []float64
	Ctx     []float64
}

func (g *Grid) params() int { return g.cachedIndex() + 1 }

// cachedIndex is the position of the cached-context coefficient in θ.
func (g *Grid) cachedIndex() int { return len(g.Prefill) + len(g.KV)*len(g.Ctx) }

func (g *Grid) decodeIndex(i, j int) int { return len(g.Prefill) + i*len(g.Ctx) + j }

// Profile turns θ into the engine's profile.
func (g *Grid) Profile(theta []float64) *engine.Profile {
	p := &engine.Profile{
		PrefillISL:           append([]float64(nil), g.Prefill...),
		PrefillTTFTMs:        append([]float64(nil), theta[:len(g.Prefill)]...),
		DecodeActiveKVTokens: append([]float64(nil), g.KV...),
		DecodeContextLength:  append([]float64(nil), g.Ctx...),

		PrefillCachedMsPerMTok: theta[g.cachedIndex()],
	}
	for i := range g.KV {
		row := make([]float64, len(g.Ctx))
		for j := range g.Ctx {
			row[j] = theta[g.decodeIndex(i, j)]
		}
		p.DecodeITL = append(p.DecodeITL, row)
	}
	return p
}

// segment is the interpolated model's axis lookup (docs/timing-model.md):
// the last axis point ≤ x, clamped to [0, n−2], and x's position in it.
func segment(xs []float64, x float64) (int, float64) {
	n := len(xs)
	i := sort.Search(n, func(k int) bool { return xs[k] > x }) - 1
	i = min(max(i, 0), n-2)
	return i, (x - xs[i]) / (xs[i+1] - xs[i])
}

// weight is one term of a pass duration's derivative: ∂duration/∂θ[idx].
type weight struct {
	idx int
	w   float64
}

// passRec is one simulated pass: its interval, what it computed and its
// duration's derivative with respect to θ (the interpolated model is
// linear in θ except where it clamps).
type passRec struct {
	start, end time.Duration
	newTokens  int
	kv, ctx    int
	decode     bool
	w          [7]weight // 2 prefill nodes, 4 decode nodes, the cached coefficient
	nw         int
}

// recorder wraps the candidate model and records each pass's inputs and
// interpolation weights; the simulator asks it once per term per pass.
type recorder struct {
	m   *engine.InterpolatedTiming
	g   *Grid
	cur passRec
	ms  float64
}

func (r *recorder) PrefillMs(n int) float64 {
	v := r.m.PrefillMs(n)
	r.cur.newTokens = n
	r.ms += v
	if n > 0 && v > 0 {
		i, t := segment(r.g.Prefill, float64(n))
		r.add(i, 1-t)
		r.add(i+1, t)
	}
	return v
}

func (r *recorder) DecodeMs(kv, total, ctx int) float64 {
	v := r.m.DecodeMs(kv, total, ctx)
	r.cur.kv, r.cur.ctx, r.cur.decode = kv, ctx, true
	r.ms += v
	if v > 1.0 { // not clamped to the 1 ms floor
		i, t := segment(r.g.KV, float64(kv))
		j, u := segment(r.g.Ctx, float64(ctx))
		r.add(r.g.decodeIndex(i, j), (1-t)*(1-u))
		r.add(r.g.decodeIndex(i, j+1), (1-t)*u)
		r.add(r.g.decodeIndex(i+1, j), t*(1-u))
		r.add(r.g.decodeIndex(i+1, j+1), t*u)
	}
	return v
}

// CachedPrefillMs is the cached-context term of the candidate model; the
// simulator asks it for passes whose prompt chunks attend to cached tokens.
func (r *recorder) CachedPrefillMs(newTimesCached float64) float64 {
	v := r.m.CachedPrefillMs(newTimesCached)
	r.ms += v
	r.add(r.g.cachedIndex(), newTimesCached/1e6)
	return v
}

func (r *recorder) add(idx int, w float64) {
	if w != 0 {
		r.cur.w[r.cur.nw] = weight{idx, w}
		r.cur.nw++
	}
}

// SimConfig is the engine the fit simulates: the endpoint's scheduler as
// far as it is known (vLLM's defaults, block size and pool size from the
// server's cache_config_info when it has one).
func SimConfig(info ServerInfo) engine.Config {
	cfg := engine.DefaultConfig()
	if info.BlockSize > 0 {
		cfg.BlockSize = info.BlockSize
	}
	if info.NumGPUBlocks > 0 {
		cfg.NumBlocks = info.NumGPUBlocks
	}
	if info.MaxModelLen > 0 {
		cfg.MaxModelLen = info.MaxModelLen
	}
	cfg.SpeedupRatio, cfg.DecodeSpeedupRatio = 1, 1
	return cfg
}

// simRun is one experiment run replayed in the simulator.
type simRun struct {
	passes []passRec
	// tokens[s] are stream s's token delivery times (nil for a stream that
	// is not simulated: it failed on the server).
	tokens [][]time.Duration
}

// simRequests are the requests of one measured run as the simulator
// submits them: the lengths the server reported, sent when they were sent.
type simRequest struct {
	stream  int
	arrival time.Duration
	prompt  []uint32
	output  int
}

// requestsOf builds the simulated requests of run. Token ids are unique to
// the run except a prefix experiment's shared prefix.
func requestsOf(plan Plan, run *ExperimentRun) []simRequest {
	e := plan.Experiments[run.Experiment]
	var out []simRequest
	for si, s := range e.Streams {
		r := &run.Results[si]
		if r.Err != "" || r.Tokens() == 0 {
			continue
		}
		n := r.PromptTokens
		if n <= 0 {
			n = s.Prompt
		}
		shared := 0
		if s.Prefix > 0 {
			shared = min(run.PrefixTokens, n)
			if shared == 0 {
				shared = min(s.Prefix, n)
			}
		}
		prompt := make([]uint32, n)
		base := uint64(run.Experiment)<<40 | uint64(run.Round)<<24
		for k := range prompt {
			if k < shared {
				prompt[k] = uint32(mix(base ^ uint64(k)))
			} else {
				prompt[k] = uint32(mix(base ^ uint64(si+1)<<20 ^ uint64(k)))
			}
		}
		out = append(out, simRequest{stream: si, arrival: r.Sent, prompt: prompt,
			output: max(r.CompletionTokens, r.Tokens(), 1)})
	}
	coalesce(out)
	return out
}

// burstGap is how close sends must follow each other to count as one
// burst. A burst sent "at once" reaches the engine spread over the client's
// and the server's request handling, which is longer than the gaps between
// the sends, so a real engine takes most of it into its first pass; the
// simulator, fed the raw send instants, would start a pass with the first
// request alone. Every request of a burst arrives at its last send.
const burstGap = time.Millisecond

func coalesce(reqs []simRequest) {
	idx := make([]int, len(reqs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return reqs[idx[a]].arrival < reqs[idx[b]].arrival })
	for start := 0; start < len(idx); {
		end := start + 1
		for end < len(idx) && reqs[idx[end]].arrival-reqs[idx[end-1]].arrival < burstGap {
			end++
		}
		last := reqs[idx[end-1]].arrival
		for _, k := range idx[start:end] {
			reqs[k].arrival = last
		}
		start = end
	}
}

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// simulate replays reqs on a fresh engine with the profile θ describes.
func simulate(cfg engine.Config, g *Grid, theta []float64, reqs []simRequest, streams int) (*simRun, error) {
	m, err := engine.NewInterpolatedTiming(g.Profile(theta))
	if err != nil {
		return nil, err
	}
	rec := &recorder{m: m, g: g}
	cfg.TimingModel = rec
	core, err := engine.NewCore(cfg, engine.CoreOptions{SkipTokenGaps: true})
	if err != nil {
		return nil, err
	}
	sim := engine.NewSimulator(core)
	out := engine.NewUnsyncedOutput()
	res := &simRun{tokens: make([][]time.Duration, streams)}
	planned := make([]uint32, 0)
	for i, r := range reqs {
		for len(planned) < r.output {
			planned = append(planned, uint32(mix(uint64(len(planned))^0x6f7574)))
		}
		sim.SubmitAt(r.arrival, &engine.Request{ID: uint64(i + 1), Prompt: r.prompt, PlannedOutput: planned[:r.output:r.output],
			FinishReason: engine.FinishLength, Choice: r.stream, Out: out})
		res.tokens[r.stream] = make([]time.Duration, 0, r.output)
	}
	var items []engine.OutputItem
	var rejected []string
	sim.AfterPass = func(int) {
		end := sim.Now()
		p := rec.cur
		p.end = end
		p.start = end - time.Duration(math.Round(rec.ms*float64(time.Millisecond)))
		res.passes = append(res.passes, p)
		rec.cur, rec.ms = passRec{}, 0
		items = out.Drain(items[:0])
		for _, it := range items {
			if it.Final {
				if it.Finished.Rejection != nil {
					rejected = append(rejected, it.Finished.Rejection.Message)
				}
				continue
			}
			res.tokens[it.Choice] = append(res.tokens[it.Choice], it.Time.Sub(engine.VirtualEpoch))
		}
	}
	sim.Run(0)
	for _, it := range out.Drain(nil) {
		if it.Final && it.Finished.Rejection != nil {
			rejected = append(rejected, it.Finished.Rejection.Message)
		}
	}
	if len(rejected) > 0 {
		return nil, fmt.Errorf("the simulated engine rejected a measured request: %s", rejected[0])
	}
	return res, nil
}

// jac adds scale × ∂(time spent in passes ending in (from, to])/∂θ to dst;
// a pass that began before from counts for its part after from.
func (s *simRun) jac(from, to time.Duration, scale float64, dst []float64) {
	i := sort.Search(len(s.passes), func(k int) bool { return s.passes[k].end > from })
	for ; i < len(s.passes) && s.passes[i].end <= to; i++ {
		p := &s.passes[i]
		frac := 1.0
		if p.start < from && p.end > p.start {
			frac = float64(p.end-from) / float64(p.end-p.start)
		}
		for _, w := range p.w[:p.nw] {
			dst[w.idx] += scale * frac * w.w
		}
	}
}
