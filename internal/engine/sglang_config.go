package engine

import (
	"errors"
	"fmt"
	"math"
)

// SGLangPolicy orders SGLang's waiting queue before each prefill batch.
type SGLangPolicy string

// SGLang schedule policies (SGLang's --schedule-policy).
const (
	// SGLangFCFS admits in queue order (SGLang's "fcfs", the mock's "fifo").
	SGLangFCFS SGLangPolicy = "fcfs"
	// SGLangLPM admits the longest cached prefix first; above
	// SGLangLPMQueueLimit waiting requests it falls back to FCFS.
	SGLangLPM SGLangPolicy = "lpm"
	// SGLangDFSWeight visits the radix tree depth first, heaviest subtree
	// (most waiting requests) first.
	SGLangDFSWeight SGLangPolicy = "dfs-weight"
	// SGLangLOF admits the longest max_new_tokens first.
	SGLangLOF SGLangPolicy = "lof"
	// SGLangRandom shuffles the queue (seeded: deterministic).
	SGLangRandom SGLangPolicy = "random"
)

// SGLang's scheduling constants, as in its global configuration and
// schedule_policy.py.
const (
	// SGLangLPMQueueLimit: above this many waiting requests LPM computes no
	// prefix matches and schedules FCFS.
	SGLangLPMQueueLimit = 128
	// sglangInBatchCheck and sglangInBatchDeprioritize: a waiting request
	// whose cached prefix is at most the first and which shares at least the
	// second with an earlier waiting request is moved behind the others, so
	// that the earlier one's prefix gets cached first.
	sglangInBatchCheck        = 32
	sglangInBatchDeprioritize = 32
	// sglangRetractDecodeSteps is the decode steps of headroom a retraction
	// frees for each remaining request (retract_decode_steps).
	sglangRetractDecodeSteps = 20
	// new_token_ratio defaults: init 0.7 × conservativeness, min 0.14 ×
	// init, decayed linearly to the min over 600 decode passes.
	sglangInitNewTokenRatio   = 0.7
	sglangMinNewTokenFactor   = 0.14
	sglangNewTokenDecaySteps  = 600
	sglangDefaultMaxPrefill   = 16384
	sglangDefaultChunkSize    = 8192
	sglangDefaultClipMaxNewTk = 4096
)

// SGLangConfig configures the SGLang scheduler (Config.Type EngineSGLang).
// Zero values mean SGLang's defaults.
type SGLangConfig struct {
	// Policy orders the waiting queue; "" means FCFS.
	Policy SGLangPolicy
	// MaxPrefillTokens bounds the prompt tokens of one prefill batch
	// (--max-prefill-tokens; default 16384). A first request longer than it
	// is still admitted, as in SGLang.
	MaxPrefillTokens int
	// ChunkedPrefillSize is the largest prefill chunk (--chunked-prefill-size;
	// default 8192); negative disables chunking.
	ChunkedPrefillSize int
	// MaxRunningRequests bounds the running batch (--max-running-requests);
	// 0 means Config.MaxNumSeqs.
	MaxRunningRequests int
	// ClipMaxNewTokens caps each request's max_new_tokens in the admission
	// estimate (default 4096).
	ClipMaxNewTokens int
	// ScheduleConservativeness scales the initial new_token_ratio
	// (--schedule-conservativeness; default 1.0).
	ScheduleConservativeness float64
	// RandomSeed seeds the random policy's shuffles.
	RandomSeed uint64
}

// resolved returns the configuration with zero values replaced by SGLang's
// defaults; maxNumSeqs is the engine's MaxNumSeqs.
func (c SGLangConfig) resolved(maxNumSeqs int) SGLangConfig {
	if c.Policy == "" {
		c.Policy = SGLangFCFS
	}
	if c.MaxPrefillTokens == 0 {
		c.MaxPrefillTokens = sglangDefaultMaxPrefill
	}
	if c.ChunkedPrefillSize == 0 {
		c.ChunkedPrefillSize = sglangDefaultChunkSize
	}
	if c.MaxRunningRequests == 0 {
		c.MaxRunningRequests = maxNumSeqs
	}
	if c.ClipMaxNewTokens == 0 {
		c.ClipMaxNewTokens = sglangDefaultClipMaxNewTk
	}
	if c.ScheduleConservativeness == 0 {
		c.ScheduleConservativeness = 1
	}
	return c
}

func (c SGLangConfig) validate() error {
	var errs []error
	switch c.Policy {
	case "", SGLangFCFS, SGLangLPM, SGLangDFSWeight, SGLangLOF, SGLangRandom:
	default:
		errs = append(errs, fmt.Errorf("unknown SGLang schedule policy %q", c.Policy))
	}
	if c.MaxPrefillTokens < 0 || c.MaxRunningRequests < 0 || c.ClipMaxNewTokens < 0 {
		errs = append(errs, fmt.Errorf("SGLang max_prefill_tokens %d, max_running_requests %d and clip_max_new_tokens %d must not be negative",
			c.MaxPrefillTokens, c.MaxRunningRequests, c.ClipMaxNewTokens))
	}
	if x := c.ScheduleConservativeness; math.IsNaN(x) || x < 0 {
		errs = append(errs, fmt.Errorf("SGLang schedule_conservativeness %v must be positive", x))
	}
	return errors.Join(errs...)
}

// newTokenRatios returns SGLang's initial, minimum and per-pass decay of
// new_token_ratio for a schedule conservativeness.
func newTokenRatios(conservativeness float64) (initial, minimum, decay float64) {
	initial = min(sglangInitNewTokenRatio*conservativeness, 1)
	minimum = min(initial*sglangMinNewTokenFactor, 1)
	decay = (initial - minimum) / sglangNewTokenDecaySteps
	return initial, minimum, decay
}
