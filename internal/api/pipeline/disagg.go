package pipeline

import (
	"context"
	"errors"
	"net/http"

	"github.com/mocker-server/mocker-server/internal/api/disagg"
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kvtransfer"
	"github.com/zeebo/xxh3"
)

// Disaggregated prefill/decode in the HTTP layer (docs/disaggregation.md):
// kv_transfer_params (vLLM's NixlConnector flow) and the SGLang-style
// bootstrap_host / bootstrap_port / bootstrap_room fields decide whether a
// request is the prefill or the decode half of a handoff.

// checkPD validates a request's disaggregation fields against the worker's
// roles and decides the request's role.
func (s *Server) checkPD(g *GenRequest) *wire.APIError {
	pd := &g.pd
	if !pd.Given {
		return nil
	}
	if pd.DoRemoteDecode && pd.DoRemotePrefill {
		return wire.ErrInvalid("kv_transfer_params", "kv_transfer_params: do_remote_decode and do_remote_prefill cannot both be true.")
	}
	if !s.opts.PD.Disaggregated || s.kvt == nil {
		return wire.ErrInvalid("kv_transfer_params",
			"This server does not serve disaggregated prefill/decode: kv_transfer_params and bootstrap_* fields need a worker started with --kv-transfer-config or --disaggregation-mode prefill|decode.")
	}
	switch {
	case pd.DoRemoteDecode:
		pd.Role = disagg.PDPrefill
	case pd.DoRemotePrefill:
		pd.Role = disagg.PDDecode
	case pd.Params:
		return nil // neither flag: an ordinary request, as in vLLM
	case s.opts.PD.Role == settings.PDRolePrefill:
		pd.Role = disagg.PDPrefill
	case s.opts.PD.Role == settings.PDRoleDecode:
		pd.Role = disagg.PDDecode
	default:
		return wire.ErrInvalid("bootstrap_room",
			"bootstrap_* fields alone do not say whether this is a prefill or a decode on a kv_both worker: set kv_transfer_params.do_remote_decode or do_remote_prefill.")
	}
	if pd.Role == disagg.PDPrefill && !s.opts.PD.ServesPrefill {
		return wire.ErrInvalid("kv_transfer_params", "This worker does not serve the prefill side of disaggregated requests (%s).", s.roleName())
	}
	if pd.Role == disagg.PDDecode && !s.opts.PD.ServesDecode {
		return wire.ErrInvalid("kv_transfer_params", "This worker does not serve the decode side of disaggregated requests (%s).", s.roleName())
	}
	if g.N != 1 {
		return wire.ErrInvalid("n", "n must be 1 for a disaggregated prefill/decode request, got %d.", g.N)
	}
	if pd.Role == disagg.PDDecode {
		return pd.ResolveRemote()
	}
	return nil
}

// roleName describes the worker's disaggregation role for messages.
func (s *Server) roleName() string {
	return s.opts.PD.RoleName
}

// pdRequestID is the remote_request_id of a job: its response id.
func (j *Job) pdRequestID() string {
	if j.G.Chat {
		return "chatcmpl-" + j.G.BaseID
	}
	return "cmpl-" + j.G.BaseID
}

// usesBootstrap reports whether this worker's prefills rendezvous over the
// Dynamo bootstrap port.
func (s *Server) usesBootstrap() bool { return s.opts.PD.BootstrapPort > 0 }

// noSideChannel reports whether this worker's prefills have no side channel
// at all (a Dynamo prefill worker without a bootstrap port): their blocks
// are freed after the modeled transfer time.
func (s *Server) noSideChannel() bool { return !s.opts.PD.Connector && !s.usesBootstrap() }

// preparePrefill makes a prefill job's engine request hold its blocks.
func (s *Server) preparePrefill(j *Job) {
	req := &j.Reqs[0]
	spec := kvtransfer.HandoffSpec{Rank: j.rank, EngineReq: req.ID, RequestID: j.pdRequestID(),
		Delay: s.opts.PD.DelayFor(len(req.Prompt)), Timeout: s.opts.PD.HandoffTimeout, AutoRelease: s.noSideChannel()}
	if s.usesBootstrap() {
		spec.HasRoom = true
		spec.Room = j.G.pd.Room
		if !j.G.pd.HasRoom {
			spec.Room = xxh3.HashString(spec.RequestID)
		}
		j.room = spec.Room
	}
	req.Handoff = s.kvt.NewHandoff(spec)
}

// prepareDecode readies a decode job's pull before its engine request is
// submitted. On failure the request fails as vLLM's kv_load_failure_policy
// "fail" does, or is computed locally under "recompute".
func (s *Server) prepareDecode(ctx context.Context, j *Job) *wire.APIError {
	remote := j.G.pd.Remote
	remote.Rank = j.rank
	rk, err := s.kvt.Prepare(ctx, remote)
	if err == nil {
		j.Reqs[0].Remote = rk
		return nil
	}
	if ctx.Err() != nil {
		if e := ctxError(ctx); e != nil {
			return e // shutting down
		}
		// The client left while waiting (a rendezvous can take long):
		// nobody reads this answer, and no transfer failed.
		return &wire.APIError{Status: http.StatusInternalServerError, Type: wire.TypeInternal, Message: "the client disconnected"}
	}
	if s.pdObs != nil {
		s.pdObs.ObserveFailedTransfer(j.rank)
	}
	if s.opts.PD.RecomputeOnLoadFailure {
		s.log.Warn("KV transfer failed; computing the prompt locally", "request_id", j.G.BaseID, "err", err)
		return nil
	}
	msg := err.Error()
	if !errors.Is(err, kvtransfer.ErrTransfer) {
		msg = kvtransfer.ErrTransfer.Error() + ": " + msg
	}
	return &wire.APIError{Status: http.StatusInternalServerError, Type: wire.TypeInternal, Message: msg}
}

// abandonPD undoes the handoff preparations of a job that was never
// submitted: the prefill's registration, the decode's claim on the prefill
// worker's blocks.
func (s *Server) abandonPD(j *Job) {
	switch j.G.pd.Role {
	case disagg.PDPrefill:
		s.kvt.Abandon(j.pdRequestID())
	case disagg.PDDecode:
		if rk := j.Reqs[0].Remote; rk != nil && rk.OnPulled != nil {
			rk.OnPulled(false)
		}
	}
}

// noteHandoff builds a finished prefill's kv_transfer_params (held blocks)
// or forgets the handoff (nothing held).
func (j *Job) noteHandoff(fin *engine.Finished) {
	s := j.S
	if fin.HeldBlocks == nil {
		s.kvt.Abandon(j.pdRequestID())
		return
	}
	addr := s.kvt.Held(j.pdRequestID(), fin.HeldBlocks, s.noSideChannel())
	p := &disagg.KVTransferParams{DoRemotePrefill: true, RemoteBlockIDs: fin.HeldBlocks, RemoteEngineID: addr.EngineID,
		RemoteRequestID: j.pdRequestID(), RemoteHost: addr.Host, RemotePort: addr.Port, TPSize: 1}
	if s.usesBootstrap() {
		room := j.room
		p.BootstrapRoom = &room
	}
	j.KVParams = p
}
