package calibrate

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// FitOptions tune the fit; the zero value is the default.
type FitOptions struct {
	// Iterations of Gauss-Newton through the simulator (default 8).
	Iterations int
	// KVPoints and CtxPoints are the decode grid's size (default 7 × 3).
	KVPoints, CtxPoints int
}

// Fit is the fitted profile with its evidence.
type Fit struct {
	Grid    Grid            `json:"grid"`
	Theta   []float64       `json:"-"`
	Profile *engine.Profile `json:"-"`
	// Engine is the simulated engine's configuration summary.
	Engine EngineSummary `json:"engine"`
	// Experiments compare each experiment's measurements with the
	// prediction of the fitted profile.
	Experiments []ExperimentError `json:"experiments"`
	InSample    ErrorSummary      `json:"in_sample"`
	HeldOut     ErrorSummary      `json:"held_out"`
	// History is the fitted observations' RMS relative error per iteration.
	History []float64 `json:"rms_relative_error_by_iteration"`
}

// EngineSummary is what the fit assumed about the endpoint's scheduler.
type EngineSummary struct {
	BlockSize           int `json:"block_size"`
	NumGPUBlocks        int `json:"num_gpu_blocks"`
	MaxNumSeqs          int `json:"max_num_seqs"`
	MaxNumBatchedTokens int `json:"max_num_batched_tokens"`
	MaxModelLen         int `json:"max_model_len"`
}

// ExperimentError is one experiment's measured and predicted medians over
// its runs: TTFT of its probes, ITL (each request's mean gap, stalls of
// more than 3× the request's median gap left out) of its decoding
// requests.
type ExperimentError struct {
	ID            string  `json:"id"`
	Kind          Kind    `json:"kind"`
	HeldOut       bool    `json:"held_out"`
	Runs          int     `json:"runs"`
	PromptTokens  int     `json:"prompt_tokens"`
	Batch         int     `json:"batch"`
	TTFTMeasured  float64 `json:"ttft_ms_measured"`
	TTFTPredicted float64 `json:"ttft_ms_predicted"`
	TTFTAPE       float64 `json:"ttft_ape"`
	ITLMeasured   float64 `json:"itl_ms_measured"`
	ITLPredicted  float64 `json:"itl_ms_predicted"`
	ITLAPE        float64 `json:"itl_ape"`
}

// ErrorSummary is the median and p90 absolute percentage error over
// experiments (fractions: 0.05 is 5 %; −1 when there is none).
type ErrorSummary struct {
	Experiments int     `json:"experiments"`
	TTFTMedian  float64 `json:"ttft_ape_median"`
	TTFTP90     float64 `json:"ttft_ape_p90"`
	ITLMedian   float64 `json:"itl_ape_median"`
	ITLP90      float64 `json:"itl_ape_p90"`
}

// obsKey identifies one fitted observation across rounds: an experiment,
// a quantity and its rank or segment.
type obsKey struct {
	exp  int
	ttft bool
	k    int
}

// obs is one observation: measured values over rounds, predictions and
// Jacobian rows summed over the same rounds.
type obs struct {
	key      obsKey
	measured []float64
	pred     float64
	jac      []float64
	n        int
	weight   float64
}

// target is the measured value an observation is fitted to: for a TTFT,
// the lower quartile over rounds, because noise in a measured TTFT only
// ever adds (a late wake, a stall, a busy client) and the engine's passes
// are what is fitted; for a gap, already a trimmed mean, the median.
func (o *obs) target() float64 {
	if o.key.ttft {
		return percentile(o.measured, 0.25)
	}
	return median(o.measured)
}

const itlSegments = 4

// huberDelta is the relative residual beyond which an observation's
// weight falls off (Huber's loss, IRLS).
const huberDelta = 0.1

// FitProfile fits the interpolated profile to m through the simulator.
func FitProfile(m *Measurements, o FitOptions) (*Fit, error) {
	if o.Iterations <= 0 {
		o.Iterations = 8
	}
	if o.KVPoints < 2 {
		o.KVPoints = 7
	}
	if o.CtxPoints < 2 {
		o.CtxPoints = 3
	}
	cfg := SimConfig(m.Server)
	block := cfg.BlockSize
	if block == 0 {
		block = cfg.Type.DefaultBlockSize()
	}
	fit := &Fit{Engine: EngineSummary{BlockSize: block, NumGPUBlocks: cfg.NumBlocks, MaxNumSeqs: cfg.MaxNumSeqs,
		MaxNumBatchedTokens: cfg.MaxNumBatchedTokens, MaxModelLen: cfg.MaxModelLen}}
	reqs := make([][]simRequest, len(m.Runs))
	for i := range m.Runs {
		reqs[i] = requestsOf(m.Plan, &m.Runs[i])
	}
	g, theta, err := initialGrid(m, cfg, reqs, o)
	if err != nil {
		return nil, err
	}
	fit.Grid = *g
	for it := 0; ; it++ {
		sims, err := simulateAll(m, cfg, g, theta, reqs)
		if err != nil {
			return nil, err
		}
		observations := collect(m, sims, g.params(), false)
		rms := rmsRel(observations)
		fit.History = append(fit.History, rms)
		if it == o.Iterations {
			fit.Theta = theta
			fit.Profile = g.Profile(theta)
			fit.Experiments = experimentErrors(m, sims)
			fit.InSample, fit.HeldOut = summarize(fit.Experiments, false), summarize(fit.Experiments, true)
			return fit, nil
		}
		theta = gaussNewtonStep(g, theta, observations)
	}
}

func rmsRel(obs []*obs) float64 {
	var s, n float64
	for _, o := range obs {
		m := o.target()
		r := (m - o.pred/float64(o.n)) / m
		s += o.weight * r * r
		n += o.weight
	}
	if n == 0 {
		return 0
	}
	return math.Sqrt(s / n)
}

// initialGrid chooses the axes: the prefill axis at the measured lengths
// of the fitted lone prefills, the decode axes spanning the (active KV,
// context) the fitted experiments' passes visit in a first simulation. The
// first θ is flat: prefill from the TTFTs, decode from the batch-1 gaps.
func initialGrid(m *Measurements, cfg engine.Config, reqs [][]simRequest, o FitOptions) (*Grid, []float64, error) {
	lens := map[int][]float64{}
	ttfts := map[int][]float64{}
	var gaps []float64
	for ri, run := range m.Runs {
		e := m.Plan.Experiments[run.Experiment]
		for si, r := range run.Results {
			if r.Err != "" || r.Tokens() == 0 {
				continue
			}
			// Nodes where a fitted TTFT is a lone prefill: the prefill probes
			// and the batch-1 decode experiments (their long prompts would
			// otherwise sit between nodes, where a straight segment across
			// a convex curve makes the fit trade prefill for decode time).
			lone := e.Kind == KindPrefill || e.Kind == KindDecode && len(e.Streams) == 1
			if !e.HeldOut && lone && si == 0 && len(reqs[ri]) > 0 && len(reqs[ri][0].prompt) <= cfg.MaxNumBatchedTokens {
				lens[run.Experiment] = append(lens[run.Experiment], float64(len(reqs[ri][0].prompt)))
				ttfts[run.Experiment] = append(ttfts[run.Experiment], m.ttftMs(&run.Results[si]))
			}
			if e.Streams[si].Role != RoleWarm && r.Tokens() > 1 {
				gaps = append(gaps, ms(r.TokenTimes[r.Tokens()-1]-r.TokenTimes[0])/float64(r.Tokens()-1))
			}
		}
	}
	if len(lens) < 2 {
		return nil, nil, errors.New("fewer than two prefill experiments succeeded: nothing to fit a prefill curve to")
	}
	if len(gaps) == 0 {
		return nil, nil, errors.New("no request streamed two tokens: nothing to fit decode times to")
	}
	decode0 := max(percentile(gaps, 0.1), 1)
	type pt struct{ x, y float64 }
	var pts []pt
	for e, l := range lens {
		pts = append(pts, pt{median(l), max(median(ttfts[e])-decode0, 0.1)})
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
	g := &Grid{}
	var theta []float64
	for _, p := range pts {
		if n := len(g.Prefill); n > 0 && p.x <= g.Prefill[n-1]*1.02 {
			continue
		}
		g.Prefill = append(g.Prefill, p.x)
		theta = append(theta, p.y)
	}
	if len(g.Prefill) < 2 {
		return nil, nil, errors.New("the prefill probes all had about the same length: nothing to fit a prefill curve to")
	}
	// A provisional flat decode grid for the first simulation.
	g.KV, g.Ctx = []float64{0, 1e6}, []float64{0, 1e6}
	theta = append(theta, decode0, decode0, decode0, decode0, 0) // flat decode, no cached-context term
	sims, err := simulateAll(m, cfg, g, theta, reqs)
	if err != nil {
		return nil, nil, err
	}
	kvMin, kvMax, ctxMin, ctxMax := math.Inf(1), 0.0, math.Inf(1), 0.0
	for ri, s := range sims {
		if m.Plan.Experiments[m.Runs[ri].Experiment].HeldOut {
			continue
		}
		for _, p := range s.passes {
			if p.decode {
				kvMin, kvMax = min(kvMin, float64(p.kv)), max(kvMax, float64(p.kv))
				ctxMin, ctxMax = min(ctxMin, float64(p.ctx)), max(ctxMax, float64(p.ctx))
			}
		}
	}
	g.KV = geometric(kvMin, kvMax, o.KVPoints)
	g.Ctx = contextAxis(m, ctxMin, ctxMax, o.CtxPoints)
	theta = theta[:len(g.Prefill)]
	for range len(g.KV) * len(g.Ctx) {
		theta = append(theta, decode0)
	}
	theta = append(theta, 0) // the cached-context coefficient starts at none
	return g, theta, nil
}

// contextAxis places the context nodes where the decode batches ran (the
// middle of each fitted batch's context range) between the smallest and
// largest context seen, so that a bend of the real curve between the
// batches' contexts lands on a node; geometric spacing when that gives
// fewer than n points.
func contextAxis(m *Measurements, lo, hi float64, n int) []float64 {
	pts := []float64{max(lo, 1), hi}
	for _, e := range m.Plan.Experiments {
		if e.HeldOut || e.Kind != KindDecode || len(e.Streams) == 0 {
			continue
		}
		c := float64(e.Streams[0].Prompt + e.Streams[0].Output/2)
		if c > lo && c < hi {
			pts = append(pts, c)
		}
	}
	sort.Float64s(pts)
	var out []float64
	for _, x := range pts {
		// Nodes closer than 30 % are one node.
		if len(out) == 0 || x > out[len(out)-1]*1.3 {
			out = append(out, math.Round(x))
		}
	}
	if len(out) > 0 && out[len(out)-1] < hi {
		out[len(out)-1] = hi // the last node is the largest context
	}
	if len(out) < n {
		return geometric(lo, hi, n)
	}
	return out
}

// geometric returns up to n strictly increasing points from lo to hi,
// geometrically spaced (two points at least).
func geometric(lo, hi float64, n int) []float64 {
	lo = max(lo, 1)
	if !(hi > lo*1.05) {
		hi = lo * 2
	}
	var out []float64
	for i := range n {
		x := math.Round(lo * math.Pow(hi/lo, float64(i)/float64(n-1)))
		if len(out) == 0 || x > out[len(out)-1] {
			out = append(out, x)
		}
	}
	if len(out) < 2 {
		out = []float64{lo, hi}
	}
	return out
}

func simulateAll(m *Measurements, cfg engine.Config, g *Grid, theta []float64, reqs [][]simRequest) ([]*simRun, error) {
	sims := make([]*simRun, len(m.Runs))
	for i := range m.Runs {
		s, err := simulate(cfg, g, theta, reqs[i], len(m.Runs[i].Results))
		if err != nil {
			return nil, fmt.Errorf("simulating %s: %w", m.Plan.Experiments[m.Runs[i].Experiment].ID, err)
		}
		sims[i] = s
	}
	return sims, nil
}

// collect builds the observations of the fitted (heldOut false) or
// held-out experiments: each probe's TTFT by rank within its run (the
// server may admit simultaneous requests in another order than the
// simulator, so ranks are matched, not streams), and each decoding
// stream's mean gap over quarters of its output, averaged over the run's
// streams.
func collect(m *Measurements, sims []*simRun, nparams int, heldOut bool) []*obs {
	byKey := map[obsKey]*obs{}
	var order []obsKey
	get := func(k obsKey, weight float64) *obs {
		o := byKey[k]
		if o == nil {
			o = &obs{key: k, jac: make([]float64, nparams), weight: weight}
			byKey[k] = o
			order = append(order, k)
		}
		return o
	}
	for ri, run := range m.Runs {
		e := m.Plan.Experiments[run.Experiment]
		if e.HeldOut != heldOut {
			continue
		}
		s := sims[ri]
		type ttft struct {
			meas, pred float64
			si         int
		}
		var meas, pred []ttft
		// Gaps are averaged over segments of at least 8 of them: a few
		// gaps measured on a client are jittery (a late token makes one
		// gap long and the next one short), and only their mean is stable.
		segs := itlSegments
		for si, r := range run.Results {
			if st := e.Streams[si]; st.Role != RoleWarm && !(st.Role == RoleProbe && e.Kind == KindMixed) && r.Tokens() > 1 {
				segs = min(segs, max((min(len(s.tokens[si]), r.Tokens())-1)/8, 1))
			}
		}
		gapsPerSeg := 0
		segMeas := make([]float64, segs)
		segPred := make([]float64, segs)
		segJac := make([][]float64, segs)
		for k := range segJac {
			segJac[k] = make([]float64, nparams)
		}
		decoding := 0
		for si, r := range run.Results {
			st := e.Streams[si]
			got := s.tokens[si]
			if st.Role == RoleWarm || len(got) == 0 || r.Tokens() == 0 {
				continue
			}
			arrival := r.Sent
			if st.Role == RoleProbe {
				meas = append(meas, ttft{meas: m.ttftMs(&run.Results[si]), si: si})
				pred = append(pred, ttft{pred: ms(got[0] - arrival), si: si})
			}
			n := min(len(got), r.Tokens())
			// Every stream but a mixed experiment's prefill probes gives
			// its gaps (a prefill probe's few gaps pin the decode time of
			// a lone short request).
			if !(st.Role == RoleProbe && e.Kind == KindMixed) && n > 1 {
				decoding++
				gapsPerSeg = (n - 1) / segs
				for k := range segs {
					a, b := k*(n-1)/segs, (k+1)*(n-1)/segs
					gm, _ := trimmedGaps(r.TokenTimes[:n], a, b)
					gp, kept := trimmedGaps(got[:n], a, b)
					segMeas[k] += gm
					segPred[k] += gp
					for _, at := range kept {
						s.jac(got[at-1], got[at], 1/float64(len(kept)), segJac[k])
					}
				}
			}
		}
		sort.Slice(meas, func(i, j int) bool { return meas[i].meas < meas[j].meas })
		sort.Slice(pred, func(i, j int) bool { return pred[i].pred < pred[j].pred })
		for k := range meas {
			o := get(obsKey{run.Experiment, true, k}, 1/float64(len(meas)))
			o.measured = append(o.measured, meas[k].meas)
			o.pred += pred[k].pred
			si := pred[k].si
			got := s.tokens[si]
			s.jac(run.Results[si].Sent, got[0], 1, o.jac)
			o.n++
		}
		if decoding > 0 {
			for k := range segs {
				o := get(obsKey{run.Experiment, false, k}, min(1, float64(gapsPerSeg)/16))
				o.measured = append(o.measured, segMeas[k]/float64(decoding))
				o.pred += segPred[k] / float64(decoding)
				for p, v := range segJac[k] {
					o.jac[p] += v / float64(decoding)
				}
				o.n++
			}
		}
	}
	out := make([]*obs, 0, len(order))
	for _, k := range order {
		out = append(out, byKey[k])
	}
	return out
}

// trimmedGaps returns the mean gap between tokens a and b of a stream,
// leaving out gaps longer than three times their median, and the tokens
// that end the gaps kept. Measured and simulated streams are reduced the
// same way. Why trimmed: the live mock paces passes from their deadlines,
// so a pass that wakes a little late is made up by the next one and the
// mean gap is the model's; but a stall of several milliseconds (a loaded
// machine, a collector pause, a client that reads late) is a single long
// gap no timing model has, and would pull a plain mean up.
func trimmedGaps(times []time.Duration, a, b int) (float64, []int) {
	gaps := make([]float64, 0, b-a)
	for k := a + 1; k <= b; k++ {
		gaps = append(gaps, ms(times[k]-times[k-1]))
	}
	limit := 3 * median(gaps)
	var sum float64
	var kept []int
	for i, g := range gaps {
		if g <= limit {
			sum += g
			kept = append(kept, a+1+i)
		}
	}
	if len(kept) == 0 {
		return 0, nil
	}
	return sum / float64(len(kept)), kept
}

// gaussNewtonStep solves the linearised least squares of the relative
// residuals plus a smoothness penalty on the grid (which decides the nodes
// no measurement reaches) and returns the new θ, clamped to the model's
// floors.
func gaussNewtonStep(g *Grid, theta []float64, observations []*obs) []float64 {
	n := len(theta)
	A := make([][]float64, n)
	for i := range A {
		A[i] = make([]float64, n)
	}
	b := make([]float64, n)
	for _, o := range observations {
		m := o.target()
		if !(m > 0) {
			continue
		}
		r := m - o.pred/float64(o.n)
		// Huber weights: beyond 10 % a residual counts linearly, not
		// squared. A residual that large is an event the model has no
		// words for — one request of a burst that reached an idle engine
		// alone and got a pass to itself, a stall — and must not drag the
		// curve away from everything else.
		w := o.weight / (m * m)
		if rel := math.Abs(r / m); rel > huberDelta {
			w *= huberDelta / rel
		}
		jr := make([]float64, n)
		for p := range n {
			jr[p] = o.jac[p] / float64(o.n)
		}
		for p := range n {
			if jr[p] == 0 {
				continue
			}
			b[p] += w * jr[p] * r
			for q := range n {
				A[p][q] += w * jr[p] * jr[q]
			}
		}
	}
	// Smoothness: first differences between neighbours, relative to the
	// values' scale; strong enough only to decide what data does not.
	scaleP := max(median(theta[:len(g.Prefill)]), 1)
	scaleD := max(median(theta[len(g.Prefill):g.cachedIndex()]), 1)
	smooth := func(a, c int, lambda, scale float64) {
		l := lambda / (scale * scale)
		d := theta[a] - theta[c]
		A[a][a] += l
		A[c][c] += l
		A[a][c] -= l
		A[c][a] -= l
		b[a] -= l * d
		b[c] += l * d
	}
	for i := 1; i < len(g.Prefill); i++ {
		smooth(i-1, i, 1e-4, scaleP)
	}
	// Along each axis of the decode grid, second differences (curvature)
	// are penalised, so a trend the data shows is extended rather than
	// flattened, and nodes between and beyond the measured lines follow it.
	curve := func(p, q, r int, lambda, scale float64) {
		l := lambda / (scale * scale)
		idx := [3]int{p, q, r}
		coef := [3]float64{1, -2, 1}
		d := theta[p] - 2*theta[q] + theta[r]
		for x := range 3 {
			b[idx[x]] -= l * coef[x] * d
			for y := range 3 {
				A[idx[x]][idx[y]] += l * coef[x] * coef[y]
			}
		}
	}
	for i := range g.KV {
		for j := range g.Ctx {
			if i > 0 {
				smooth(g.decodeIndex(i-1, j), g.decodeIndex(i, j), 1e-3, scaleD)
			}
			if i > 1 {
				curve(g.decodeIndex(i-2, j), g.decodeIndex(i-1, j), g.decodeIndex(i, j), 0.1, scaleD)
			}
			if j > 0 {
				// No pass has an average context above its active KV
				// tokens: such nodes only shape the interpolation near the
				// diagonal, so they follow their lower-context neighbour.
				lambda := 1e-3
				if g.Ctx[j] > g.KV[i] {
					lambda = 1
				}
				smooth(g.decodeIndex(i, j-1), g.decodeIndex(i, j), lambda, scaleD)
			}
			if j > 1 {
				curve(g.decodeIndex(i, j-2), g.decodeIndex(i, j-1), g.decodeIndex(i, j), 0.1, scaleD)
			}
		}
	}
	// Levenberg damping keeps the step sane where the linearisation is
	// poor (clamped passes, reordered admissions).
	for p := range n {
		A[p][p] += 1e-3*A[p][p] + 1e-9
	}
	delta := solve(A, b)
	out := make([]float64, n)
	for p := range n {
		out[p] = theta[p] + delta[p]
		if math.IsNaN(out[p]) || math.IsInf(out[p], 0) {
			out[p] = theta[p]
		}
	}
	for p := range g.Prefill {
		out[p] = max(out[p], 0)
	}
	for p := len(g.Prefill); p < g.cachedIndex(); p++ {
		out[p] = max(out[p], 1)
	}
	// No data on cached prompts leaves the coefficient where it was (0);
	// noise must not make attention to a cached prefix save time.
	out[g.cachedIndex()] = max(out[g.cachedIndex()], 0)
	return out
}

// solve solves A x = b by Gaussian elimination with partial pivoting (A is
// small and symmetric positive definite by construction).
func solve(A [][]float64, b []float64) []float64 {
	n := len(b)
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(A[r][c]) > math.Abs(A[p][c]) {
				p = r
			}
		}
		A[c], A[p] = A[p], A[c]
		b[c], b[p] = b[p], b[c]
		if A[c][c] == 0 {
			continue
		}
		for r := c + 1; r < n; r++ {
			f := A[r][c] / A[c][c]
			if f == 0 {
				continue
			}
			for k := c; k < n; k++ {
				A[r][k] -= f * A[c][k]
			}
			b[r] -= f * b[c]
		}
	}
	x := make([]float64, n)
	for c := n - 1; c >= 0; c-- {
		if A[c][c] == 0 {
			continue
		}
		s := b[c]
		for k := c + 1; k < n; k++ {
			s -= A[c][k] * x[k]
		}
		x[c] = s / A[c][c]
	}
	return x
}

// experimentErrors compares each experiment's median probe TTFT and median
// per-request ITL with the simulator's, over all its runs.
func experimentErrors(m *Measurements, sims []*simRun) []ExperimentError {
	type acc struct {
		tm, tp, im, ip []float64
		runs           int
	}
	accs := make([]acc, len(m.Plan.Experiments))
	for ri, run := range m.Runs {
		e := m.Plan.Experiments[run.Experiment]
		a := &accs[run.Experiment]
		a.runs++
		s := sims[ri]
		for si, r := range run.Results {
			st := e.Streams[si]
			got := s.tokens[si]
			if st.Role == RoleWarm || len(got) == 0 || r.Tokens() == 0 {
				continue
			}
			if st.Role == RoleProbe {
				a.tm = append(a.tm, ms(r.TTFT()))
				a.tp = append(a.tp, ms(got[0]-r.Sent)+m.overheadOf(&run.Results[si]))
			}
			n := min(len(got), r.Tokens())
			if n > 1 && (st.Role != RoleProbe || e.Kind != KindMixed) {
				// The mean gap without stalls, as the fit sees it; the
				// stalls are counted in the report's warnings.
				im, _ := trimmedGaps(r.TokenTimes[:n], 0, n-1)
				ip, _ := trimmedGaps(got[:n], 0, n-1)
				a.im = append(a.im, im)
				a.ip = append(a.ip, ip)
			}
		}
	}
	var out []ExperimentError
	for ei, e := range m.Plan.Experiments {
		a := accs[ei]
		if a.runs == 0 {
			continue
		}
		x := ExperimentError{ID: e.ID, Kind: e.Kind, HeldOut: e.HeldOut, Runs: a.runs,
			TTFTMeasured: median(a.tm), TTFTPredicted: median(a.tp),
			ITLMeasured: median(a.im), ITLPredicted: median(a.ip), TTFTAPE: -1, ITLAPE: -1}
		for _, s := range e.Streams {
			if s.Role == RoleProbe || s.Role == RoleBackground {
				x.Batch++
			}
		}
		for _, s := range e.Streams {
			if s.Role == RoleProbe {
				x.PromptTokens = s.Prompt
				break
			}
		}
		if x.TTFTMeasured > 0 {
			x.TTFTAPE = math.Abs(x.TTFTPredicted-x.TTFTMeasured) / x.TTFTMeasured
		}
		if x.ITLMeasured > 0 {
			x.ITLAPE = math.Abs(x.ITLPredicted-x.ITLMeasured) / x.ITLMeasured
		}
		out = append(out, x)
	}
	return out
}

func summarize(exps []ExperimentError, heldOut bool) ErrorSummary {
	var t, i []float64
	s := ErrorSummary{}
	for _, e := range exps {
		if e.HeldOut != heldOut {
			continue
		}
		s.Experiments++
		if e.TTFTAPE >= 0 {
			t = append(t, e.TTFTAPE)
		}
		if e.ITLAPE >= 0 {
			i = append(i, e.ITLAPE)
		}
	}
	s.TTFTMedian, s.TTFTP90, s.ITLMedian, s.ITLP90 = -1, -1, -1, -1 // no experiments: "-"
	if len(t) > 0 {
		s.TTFTMedian, s.TTFTP90 = median(t), percentile(t, 0.9)
	}
	if len(i) > 0 {
		s.ITLMedian, s.ITLP90 = median(i), percentile(i, 0.9)
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(v []float64) float64 { return percentile(v, 0.5) }

// percentile is the linear-interpolated q-quantile of v (0 when empty).
func percentile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}
