package ui

import (
	"slices"
)

// requestDetail is one sequence's timeline (GET .../api/request).
type requestDetail struct {
	ID          string          `json:"id"`
	EngineID    uint64          `json:"engine_id"`
	Rank        int             `json:"rank"`
	Arrival     int64           `json:"arrival_unix_ms"`
	Prompt      int             `json:"prompt_tokens"`
	Planned     int             `json:"planned_tokens"`
	Generated   int             `json:"output_tokens"`
	Cached      int             `json:"cached_tokens"`
	State       requestState    `json:"state"`
	Reason      string          `json:"finish_reason"`
	Preemptions int             `json:"preemptions"`
	Events      []timelineEvent `json:"events"`
	Tokens      []float32       `json:"token_ms"`
	KV          []kvNote        `json:"kv_events"`
	Dropped     int             `json:"dropped"`
}

func (r *requestRecord) detail() requestDetail {
	return requestDetail{ID: r.Label, EngineID: r.ID, Rank: r.Rank, Arrival: r.Arrival.UnixMilli(),
		Prompt: r.Prompt, Planned: r.Planned, Generated: r.Generated, Cached: r.Cached, State: r.State,
		Reason: r.Reason, Preemptions: r.Preemptions, Events: slices.Clone(r.Events),
		Tokens: slices.Clone(r.Tokens), KV: slices.Clone(r.KV), Dropped: r.Dropped}
}

// blockDetail is one block's hover card (GET .../api/block).
type blockDetail struct {
	Rank    int      `json:"rank"`
	Block   int      `json:"block"`
	State   string   `json:"state"`
	Refs    int      `json:"refs"`
	Hash    string   `json:"hash,omitempty"`
	Parent  string   `json:"parent,omitempty"`
	Holders []string `json:"holders"`
}

// block describes block b as of the last state snapshot; ok is false when
// b is out of range.
func (rv *rankView) block(b int, h *Hub) (blockDetail, bool) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if b < 0 || b >= len(rv.grid) {
		return blockDetail{}, false
	}
	d := blockDetail{Rank: rv.rank, Block: b, Holders: []string{}}
	switch c := rv.grid[b]; c {
	case blockFree:
		d.State = "free"
	case blockCached:
		d.State = "cached"
	default:
		d.State, d.Refs = "in_use", int(c-blockInUse)+1
	}
	var holders []seqView
	if hash := rv.hashes[b]; hash != 0 || d.State == "cached" {
		d.Hash = hashText(hash)
		if p, ok := rv.parents[hash]; ok {
			d.Parent = hashText(p)
		}
	}
	for _, s := range rv.running {
		for i, blk := range s.Blocks {
			if int(blk) != b {
				continue
			}
			holders = append(holders, s)
			if d.Parent == "" && i > 0 && i-1 < len(s.Hashes) {
				d.Parent = hashText(s.Hashes[i-1])
			}
			break
		}
	}
	labels := h.reqs.labels(holders)
	for _, s := range holders {
		d.Holders = append(d.Holders, labels[s.ID])
	}
	if d.Refs == maxRefsCode {
		d.Refs = len(holders) // the grid saturates; the holders are exact
	}
	return d, true
}
