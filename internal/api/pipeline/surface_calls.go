package pipeline

import (
	"github.com/mocker-server/mocker-server/internal/engine"
)

// ForEachToken records a run of output items (job.record) and calls token
// for every delivered planned token of a one-choice job; terminal items and
// tokens beyond the plan (never produced by the engine) are only recorded.
func (j *Job) ForEachToken(items []engine.OutputItem, token func(ch *Choice, pos int)) {
	for i := range items {
		it := &items[i]
		ch := j.Record(it)
		if it.Final {
			continue
		}
		if pos := ch.N - 1; pos < len(ch.Plan.IDs) {
			token(ch, pos)
		}
	}
}
