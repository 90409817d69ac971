package worker

import (
	"errors"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// HeaderWorker is the response header that carries the serving worker's id
// (Options.ID), in canonical form. A router lab attributes each response to
// a worker by it, without trusting the router's own account.
const HeaderWorker = "X-Mocker-Worker"

// ErrNotStarted is returned for what a worker only knows once started.
var ErrNotStarted = errors.New("worker has not started yet")

// EngineConfig returns the engine configuration every DP rank of the worker
// runs (with its timing profile), as an offline replay of the same worker
// needs it. It is the configuration of the worker's start: a later slow
// action is not part of it.
func (w *Worker) EngineConfig() (engine.Config, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started {
		return engine.Config{}, ErrNotStarted
	}
	return w.cfg.EngineConfig(w.files.profile), nil
}

// VocabSize returns the size of the worker's vocabulary: valid prompt token
// ids are [0, VocabSize).
func (w *Worker) VocabSize() (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started {
		return 0, ErrNotStarted
	}
	if w.files.model != nil {
		return w.files.model.VocabSize(), nil
	}
	return tokenizer.VocabSize, nil
}
