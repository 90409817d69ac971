package pipeline

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// DP rank selection: a request names its rank with X-data-parallel-rank, or
// the server picks one by the configured DPRouting policy.

// HeaderRank returns the rank named by X-data-parallel-rank, -1 when the
// header is absent, or a 400 when it is not an integer in [0, dp_size).
func (s *Server) HeaderRank(r *http.Request) (int, *wire.APIError) {
	return s.RankOf(r.Header["X-Data-Parallel-Rank"])
}

// RankOf is HeaderRank of the header's values (none: -1), for a front end
// that carries them otherwise (Meta.Rank).
func (s *Server) RankOf(vals []string) (int, *wire.APIError) {
	if len(vals) == 0 {
		return -1, nil
	}
	v := strings.TrimSpace(vals[0])
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n >= len(s.engines) {
		return -1, wire.ErrInvalid("", "data_parallel_rank %s is out of range [0, %d)", vals[0], len(s.engines))
	}
	return n, nil
}

// PickRank chooses the rank of a request that named none: round_robin =
// counter mod dp_size; least_loaded = smallest 4×waiting + running, ties to
// the lowest rank.
func (s *Server) PickRank() int {
	n := len(s.engines)
	if n == 1 {
		return 0
	}
	if s.opts.DPRouting != settings.RouteLeastLoaded {
		return int((s.rr.Add(1) - 1) % uint64(n))
	}
	best, bestScore := 0, int64(-1)
	for r := range n {
		score := s.rankScore(r)
		if bestScore < 0 || score < bestScore {
			best, bestScore = r, score
		}
	}
	return best
}

// rankScore is 4×waiting + running of a rank. The router's own count of
// undelivered sequences is authoritative for the total (it includes
// sequences dispatched since the engine's latest pass); the engine's
// running gauge says how many of them are running, the rest wait.
func (s *Server) rankScore(r int) int64 {
	total := s.ranks[r].seqs.Load()
	running := min(int64(s.engines[r].Load().Running), total)
	return 4*(total-running) + running
}

// Dispatched / finished maintain the per-rank sequence counts.
func (s *Server) Dispatched(rank, seqs int) { s.ranks[rank].seqs.Add(int64(seqs)) }
func (s *Server) Finished(rank, seqs int)   { s.ranks[rank].seqs.Add(-int64(seqs)) }
