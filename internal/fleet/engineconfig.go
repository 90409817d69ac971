package fleet

import (
	"fmt"
	"math"
	"net/http"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// WorkerEngine is a worker's simulated engine as the admin API describes it
// (GET /workers/{id}/engine): enough to rebuild the identical worker
// offline — its engine configuration with the timing profile it loaded, its
// DP ranks, its seed and the vocabulary its prompts must come from.
type WorkerEngine struct {
	ID     string `json:"id"`
	Seed   int64  `json:"seed"`
	DPSize int    `json:"dp_size"`
	// VocabSize bounds prompt token ids: valid ids are [0, VocabSize).
	VocabSize int `json:"vocab_size"`
	// Engine is the engine.Config every rank runs, as of the worker's
	// start (a later slow action is not part of it). An infinite speedup
	// ratio is written as 0, which means the same (no delay) and is JSON.
	Engine engine.Config `json:"engine"`
}

// EngineOf describes worker i's engine; the worker must have started.
func (f *Fleet) EngineOf(i int) (WorkerEngine, error) {
	wk := f.Worker(i)
	if wk == nil {
		return WorkerEngine{}, fmt.Errorf("worker %s has not started yet", f.members[i].ID)
	}
	ec, err := wk.EngineConfig()
	if err != nil {
		return WorkerEngine{}, err
	}
	if ec.TimingModel != nil {
		// Only tests inject a model object; it has no JSON form.
		return WorkerEngine{}, fmt.Errorf("worker %s runs an injected timing model, which cannot be described", f.members[i].ID)
	}
	vocab, err := wk.VocabSize()
	if err != nil {
		return WorkerEngine{}, err
	}
	for _, r := range []*float64{&ec.SpeedupRatio, &ec.DecodeSpeedupRatio} {
		if math.IsInf(*r, 1) {
			*r = 0
		}
	}
	cfg := f.members[i].Config
	return WorkerEngine{ID: f.members[i].ID, Seed: cfg.Seed, DPSize: max(cfg.DPSize, 1), VocabSize: vocab, Engine: ec}, nil
}

func (f *Fleet) handleEngine(w http.ResponseWriter, r *http.Request) {
	i, ok := f.lookup(w, r.PathValue("id"))
	if !ok {
		return
	}
	we, err := f.EngineOf(i)
	if err != nil {
		adminError(w, http.StatusConflict, "ConflictError", err.Error())
		return
	}
	writeAdminJSON(w, http.StatusOK, we)
}
