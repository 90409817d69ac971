package routerlab

import (
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mocker-server/mocker-server/internal/replay"
)

// OfflineOptions configure the offline replays of the run's requests.
type OfflineOptions struct {
	// Routers are the policies replayed (default round_robin,
	// least_loaded, prefix_hash, kv_aware).
	Routers []replay.RouterKind
	// OverlapWeight and PrefixHashBlocks are replay's kv_aware and
	// prefix_hash settings (zero: replay's defaults).
	OverlapWeight    float64
	PrefixHashBlocks int
	// Skip runs no offline replay.
	Skip bool
}

// DefaultRouters are the policies a run is compared with.
var DefaultRouters = []replay.RouterKind{replay.RoundRobin, replay.LeastLoaded, replay.PrefixHash, replay.KVAware}

// sentRecords returns the records that were sent, in send order: the
// workload the router actually saw.
func sentRecords(records []*record) []*record {
	var out []*record
	for _, r := range records {
		if r.skipped == "" && !r.res.sent.IsZero() {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *record) int { return a.res.sent.Compare(b.res.sent) })
	return out
}

// sliceSource replays recorded requests.
type sliceSource struct {
	reqs []replay.Request
	next int
}

func (s *sliceSource) Next() (replay.Request, error) {
	if s.next == len(s.reqs) {
		return replay.Request{}, io.EOF
	}
	s.next++
	return s.reqs[s.next-1], nil
}

// offlineRequests turns the sent records into replay requests: the same
// prompts (as sent, previous answers included), the same output lengths
// and tokens, arriving when the driver sent them.
func offlineRequests(sent []*record, start time.Time) []replay.Request {
	reqs := make([]replay.Request, len(sent))
	for i, r := range sent {
		q := replay.Request{Index: i, Arrival: r.res.sent.Sub(start), Prompt: r.prompt, OutputTokens: r.req.OutputTokens}
		if len(r.res.ids) == r.req.OutputTokens {
			q.Output = r.res.ids
		}
		reqs[i] = q
	}
	return reqs
}

// offlineCompare replays the sent requests on the fleet the admin API
// described, once per policy, and adds the comparison to rep.
func offlineCompare(rep *Report, records []*record, info *fleetInfo, opts OfflineOptions) error {
	if opts.Skip {
		return nil
	}
	if info == nil {
		rep.Notes = append(rep.Notes, "no offline comparison: it needs the fleet's configuration (--fleet-admin)")
		return nil
	}
	sent := sentRecords(records)
	if len(sent) == 0 {
		return nil
	}
	start := sent[0].res.sent
	reqs := offlineRequests(sent, start)
	routers := opts.Routers
	if len(routers) == 0 {
		routers = DefaultRouters
	}
	var workers []replay.WorkerSpec
	for _, e := range info.Engines {
		workers = append(workers, replay.WorkerSpec{Name: e.ID, Engine: e.Engine, DPSize: e.DPSize})
	}
	weight := opts.OverlapWeight
	onlineWorker := make([]string, len(sent))
	for i, r := range sent {
		onlineWorker[i] = r.res.worker
	}
	for _, k := range routers {
		rows := make([]replay.RequestRow, len(reqs))
		ro := replay.Options{Workers: workers, Router: k, OverlapWeight: weight, PrefixHashBlocks: opts.PrefixHashBlocks,
			Seed: uint64(info.Engines[0].Seed), Rows: func(row *replay.RequestRow) error {
				rows[row.Index] = *row
				return nil
			}}
		_, err := replay.Run(&sliceSource{reqs: reqs}, ro)
		if err != nil {
			return fmt.Errorf("routerlab: offline %s: %w", k, err)
		}
		side := offlineSide(string(k), rows, rep.workerIDs)
		same := 0
		for i := range rows {
			if workerOf(rows[i].Worker) == onlineWorker[i] {
				same++
			}
			rep.offlineWorkers[sent[i]] = append(rep.offlineWorkers[sent[i]], workerOf(rows[i].Worker))
		}
		side.SameRouting = float64(same) / float64(len(rows))
		rep.Offline = append(rep.Offline, side)
		rep.OfflineRouters = append(rep.OfflineRouters, string(k))
	}
	rep.Bound = clairvoyantBound(reqs, info)
	rep.Verdict = verdict(rep)
	rep.Notes = append(rep.Notes,
		"offline replays use the identical workers (engine configurations read from the admin API), the same requests "+
			"(prompts as sent, previous answers included, outputs as answered) arriving when the driver sent them, "+
			"and worker 0's seed; they do not model the network, the router's own latency, client-side queueing "+
			"beyond --max-inflight, or admin actions (faults, slow)")
	return nil
}

// workerOf maps an offline target ("3" or "3/dp1") to its worker id, as
// the x-mocker-worker header names it.
func workerOf(target string) string {
	if i := strings.IndexByte(target, '/'); i >= 0 {
		return target[:i]
	}
	return target
}

// clairvoyantBound is the prefix-cache hit rate of one cache of unbounded
// size that every request is served from in send order: a request hits
// the longest run of its leading full blocks (never the block holding its
// last prompt token, as in vLLM) that some earlier request's prompt or
// answer contained. No router on any fleet of these workers can hit a
// block no earlier request computed, so this bounds the fleet's hits as
// long as requests are computed in the order they were sent. It needs one
// block size for the whole fleet.
func clairvoyantBound(reqs []replay.Request, info *fleetInfo) *Bound {
	bs := 0
	for _, e := range info.Engines {
		b := e.Engine.BlockSize
		if b == 0 {
			b = e.Engine.Type.DefaultBlockSize()
		}
		if bs != 0 && b != bs {
			return nil
		}
		bs = b
	}
	seed := maphash.MakeSeed()
	seen := map[[2]uint64]bool{}
	var prompt, cached int
	var seq []uint32
	for _, q := range reqs {
		prompt += len(q.Prompt)
		seq = append(seq[:0], q.Prompt...)
		if q.Output != nil {
			seq = append(seq, q.Output...)
		}
		hits, miss := 0, false
		var h1, h2 uint64
		for b := 0; (b+1)*bs <= len(seq); b++ {
			h1, h2 = chainHash(seed, h1, h2, seq[b*bs:(b+1)*bs])
			key := [2]uint64{h1, h2}
			if (b+1)*bs <= len(q.Prompt)-1 && !miss && seen[key] {
				hits++
			} else {
				miss = miss || (b+1)*bs <= len(q.Prompt)-1
			}
			seen[key] = true
		}
		cached += hits * bs
	}
	if prompt == 0 {
		return nil
	}
	return &Bound{HitRate: float64(cached) / float64(prompt), CachedTokens: cached, PromptTokens: prompt, BlockSize: bs}
}

// chainHash extends a 128-bit prefix hash by one block: equal values mean
// equal whole prefixes (two independent 64-bit hashes make a collision
// negligible).
func chainHash(seed maphash.Seed, h1, h2 uint64, block []uint32) (uint64, uint64) {
	var a, b maphash.Hash
	a.SetSeed(seed)
	b.SetSeed(seed)
	var buf [8]byte
	put := func(h *maphash.Hash, v uint64) {
		for i := range buf {
			buf[i] = byte(v >> (8 * i))
		}
		_, _ = h.Write(buf[:])
	}
	put(&a, h1)
	put(&b, h2^0x9e3779b97f4a7c15)
	put(&b, 1)
	for _, t := range block {
		put(&a, uint64(t))
		put(&b, uint64(t)<<1|1)
	}
	return a.Sum64(), b.Sum64()
}
