package engine

import "context"

// The live actor's disaggregation messages: the side channel asks whether a
// finished prefill's blocks are still held, and frees them once its decode
// side has pulled them.

// HoldsHandoff reports whether the blocks of finished prefill request id are
// still held on this rank.
func (e *Engine) HoldsHandoff(ctx context.Context, id uint64) (bool, error) {
	return e.ask(ctx, message{kind: msgHoldsHandoff, id: id})
}

// ReleaseHeld frees the held blocks of finished prefill request id (the
// decode side has pulled them) before the next pass. Unknown ids are
// ignored: the hold may have timed out already.
func (e *Engine) ReleaseHeld(id uint64) {
	_ = e.post(message{kind: msgReleaseHeld, id: id})
}
