package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kvtransfer"
)

// Disaggregated prefill/decode in the HTTP layer (docs/disaggregation.md):
// kv_transfer_params (vLLM's NixlConnector flow) and the SGLang-style
// bootstrap_host / bootstrap_port / bootstrap_room fields decide whether a
// request is the prefill or the decode half of a handoff.

// KVTransfer is the side channel the HTTP layer uses for handoffs;
// *kvtransfer.Service implements it.
type KVTransfer interface {
	// NewHandoff registers a prefill request and returns its engine
	// settings.
	NewHandoff(spec kvtransfer.HandoffSpec) *engine.Handoff
	// Held records that it finished holding blocks and returns the
	// address a decode worker pulls them from.
	Held(requestID string, blocks []int, noSideChannel bool) kvtransfer.Address
	// Abandon forgets a prefill request that finished holding nothing.
	Abandon(requestID string)
	// Prepare readies a decode request's pull (errors wrap
	// kvtransfer.ErrTransfer).
	Prepare(ctx context.Context, r kvtransfer.Remote) (*engine.RemoteKV, error)
}

// TransferFailureObserver counts decode requests whose KV could not be
// pulled (vllm:nixl_num_failed_transfers). It must be safe for concurrent
// use and must not block.
type TransferFailureObserver interface {
	ObserveFailedTransfer(rank int)
}

// pdRole is a request's half of a handoff.
type pdRole uint8

const (
	pdNone    pdRole = iota // an ordinary request
	pdPrefill               // compute the prompt, one token, hold the blocks
	pdDecode                // pull the prompt's KV, then decode
)

// pdRequest is what a request says about disaggregation.
type pdRequest struct {
	given           bool // kv_transfer_params or a bootstrap_* field is present
	params          bool // kv_transfer_params is present
	doRemoteDecode  bool
	doRemotePrefill bool
	remote          kvtransfer.Remote
	present         map[string]bool // kv_transfer_params keys given (not null)

	bootstrapHost string
	bootstrapPort int
	room          uint64
	hasRoom       bool

	role pdRole // decided by checkPD
}

// remoteKeys are the kv_transfer_params a decode request needs to pull over
// the side channel, in vLLM's order.
var remoteKeys = []string{"remote_block_ids", "remote_engine_id", "remote_request_id", "remote_host", "remote_port"}

// parsePD reads kv_transfer_params and the bootstrap fields with their
// JSON types (wrong types are recorded on o).
func parsePD(o object) pdRequest {
	var pd pdRequest
	if kt, ok := o.Object("kv_transfer_params"); ok {
		pd.given, pd.params = true, true
		pd.present = map[string]bool{}
		for k := range kt.m {
			if kt.has(k) {
				pd.present[k] = true
			}
		}
		pd.doRemoteDecode = kt.Bool("do_remote_decode", false)
		pd.doRemotePrefill = kt.Bool("do_remote_prefill", false)
		pd.remote.Host, _ = kt.String("remote_host")
		pd.remote.Port = int(kt.Int("remote_port").I)
		pd.remote.EngineID, _ = kt.String("remote_engine_id")
		pd.remote.RequestID, _ = kt.String("remote_request_id")
		if ids, ok := kt.Array("remote_block_ids"); ok {
			pd.remote.BlockIDs = make([]int, 0, len(ids))
			for i, raw := range ids {
				v, e := parseInt(raw, kt.name("remote_block_ids")+"["+itoa(i)+"]")
				if e != nil {
					kt.fail(e)
					break
				}
				pd.remote.BlockIDs = append(pd.remote.BlockIDs, int(v.I))
			}
		}
		if raw, ok := kt.raw("bootstrap_room"); ok {
			room, e := parseUint64(raw, kt.name("bootstrap_room"))
			if e != nil {
				kt.fail(e)
			}
			pd.room, pd.hasRoom = room, true
		}
	}
	if h, ok := o.String("bootstrap_host"); ok {
		pd.given, pd.bootstrapHost = true, h
	}
	if p := o.Int("bootstrap_port"); p.Set {
		pd.given, pd.bootstrapPort = true, int(p.I)
	}
	if raw, ok := o.raw("bootstrap_room"); ok {
		room, e := parseUint64(raw, "bootstrap_room")
		if e != nil {
			o.fail(e)
		}
		pd.given = true
		if !pd.hasRoom {
			pd.room, pd.hasRoom = room, true
		}
	}
	return pd
}

// checkPD validates a request's disaggregation fields against the worker's
// roles and decides the request's role.
func (s *Server) checkPD(g *genRequest) *apiError {
	pd := &g.pd
	if !pd.given {
		return nil
	}
	if pd.doRemoteDecode && pd.doRemotePrefill {
		return errInvalid("kv_transfer_params", "kv_transfer_params: do_remote_decode and do_remote_prefill cannot both be true.")
	}
	if !s.opts.PD.Disaggregated || s.kvt == nil {
		return errInvalid("kv_transfer_params",
			"This server does not serve disaggregated prefill/decode: kv_transfer_params and bootstrap_* fields need a worker started with --kv-transfer-config or --disaggregation-mode prefill|decode.")
	}
	switch {
	case pd.doRemoteDecode:
		pd.role = pdPrefill
	case pd.doRemotePrefill:
		pd.role = pdDecode
	case pd.params:
		return nil // neither flag: an ordinary request, as in vLLM
	case s.opts.PD.Role == PDRolePrefill:
		pd.role = pdPrefill
	case s.opts.PD.Role == PDRoleDecode:
		pd.role = pdDecode
	default:
		return errInvalid("bootstrap_room",
			"bootstrap_* fields alone do not say whether this is a prefill or a decode on a kv_both worker: set kv_transfer_params.do_remote_decode or do_remote_prefill.")
	}
	if pd.role == pdPrefill && !s.opts.PD.ServesPrefill {
		return errInvalid("kv_transfer_params", "This worker does not serve the prefill side of disaggregated requests (%s).", s.roleName())
	}
	if pd.role == pdDecode && !s.opts.PD.ServesDecode {
		return errInvalid("kv_transfer_params", "This worker does not serve the decode side of disaggregated requests (%s).", s.roleName())
	}
	if g.n != 1 {
		return errInvalid("n", "n must be 1 for a disaggregated prefill/decode request, got %d.", g.n)
	}
	if pd.role == pdDecode {
		return pd.resolveRemote()
	}
	return nil
}

// roleName describes the worker's disaggregation role for messages.
func (s *Server) roleName() string {
	return s.opts.PD.RoleName
}

// resolveRemote fills a decode request's prefill address: kv_transfer_params'
// remote_host/remote_port, else bootstrap_host/bootstrap_port. A pull over
// the side channel (no bootstrap room) needs every remote_* key.
func (pd *pdRequest) resolveRemote() *apiError {
	if pd.present == nil {
		pd.present = map[string]bool{} // bootstrap_* fields only
	}
	if !pd.present["remote_host"] && pd.bootstrapHost != "" {
		pd.remote.Host = pd.bootstrapHost
		pd.present["remote_host"] = true
	}
	if !pd.present["remote_port"] && pd.bootstrapPort != 0 {
		pd.remote.Port = pd.bootstrapPort
		pd.present["remote_port"] = true
	}
	required := remoteKeys[3:]
	if !pd.hasRoom && pd.remote.Port != 0 {
		required = remoteKeys
	}
	var missing []string
	for _, k := range required {
		if !pd.present[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return errInvalid("kv_transfer_params."+missing[0],
			"kv_transfer_params is missing %s: a request with do_remote_prefill needs %s.",
			strings.Join(missing, ", "), strings.Join(required, ", "))
	}
	pd.remote.Room, pd.remote.HasRoom = pd.room, pd.hasRoom
	return nil
}

// kvTransferParams is a prefill response's kv_transfer_params, in the
// order vLLM's NixlConnector.request_finished builds them.
type kvTransferParams struct {
	DoRemotePrefill bool    `json:"do_remote_prefill"`
	DoRemoteDecode  bool    `json:"do_remote_decode"`
	RemoteBlockIDs  []int   `json:"remote_block_ids"`
	RemoteEngineID  string  `json:"remote_engine_id"`
	RemoteRequestID string  `json:"remote_request_id"`
	RemoteHost      string  `json:"remote_host"`
	RemotePort      int     `json:"remote_port"`
	TPSize          int     `json:"tp_size"`
	BootstrapRoom   *uint64 `json:"bootstrap_room,omitempty"` // Dynamo's rendezvous, with a bootstrap port
}

// pdRequestID is the remote_request_id of a job: its response id.
func (j *job) pdRequestID() string {
	if j.g.chat {
		return "chatcmpl-" + j.g.baseID
	}
	return "cmpl-" + j.g.baseID
}

// usesBootstrap reports whether this worker's prefills rendezvous over the
// Dynamo bootstrap port.
func (s *Server) usesBootstrap() bool { return s.opts.PD.BootstrapPort > 0 }

// noSideChannel reports whether this worker's prefills have no side channel
// at all (a Dynamo prefill worker without a bootstrap port): their blocks
// are freed after the modeled transfer time.
func (s *Server) noSideChannel() bool { return !s.opts.PD.Connector && !s.usesBootstrap() }

// preparePrefill makes a prefill job's engine request hold its blocks.
func (s *Server) preparePrefill(j *job) {
	req := &j.reqs[0]
	spec := kvtransfer.HandoffSpec{Rank: j.rank, EngineReq: req.ID, RequestID: j.pdRequestID(),
		Delay: s.opts.PD.transferDelay(len(req.Prompt)), Timeout: s.opts.PD.HandoffTimeout, AutoRelease: s.noSideChannel()}
	if s.usesBootstrap() {
		spec.HasRoom = true
		spec.Room = j.g.pd.room
		if !j.g.pd.hasRoom {
			spec.Room = xxh3.HashString(spec.RequestID)
		}
		j.room = spec.Room
	}
	req.Handoff = s.kvt.NewHandoff(spec)
}

// prepareDecode readies a decode job's pull before its engine request is
// submitted. On failure the request fails as vLLM's kv_load_failure_policy
// "fail" does, or is computed locally under "recompute".
func (s *Server) prepareDecode(ctx context.Context, j *job) *apiError {
	remote := j.g.pd.remote
	remote.Rank = j.rank
	rk, err := s.kvt.Prepare(ctx, remote)
	if err == nil {
		j.reqs[0].Remote = rk
		return nil
	}
	if ctx.Err() != nil {
		if e := ctxError(ctx); e != nil {
			return e // shutting down
		}
		// The client left while waiting (a rendezvous can take long):
		// nobody reads this answer, and no transfer failed.
		return &apiError{Status: http.StatusInternalServerError, Type: typeInternal, Message: "the client disconnected"}
	}
	if s.pdObs != nil {
		s.pdObs.ObserveFailedTransfer(j.rank)
	}
	if s.opts.PD.RecomputeOnLoadFailure {
		s.log.Warn("KV transfer failed; computing the prompt locally", "request_id", j.g.baseID, "err", err)
		return nil
	}
	msg := err.Error()
	if !errors.Is(err, kvtransfer.ErrTransfer) {
		msg = kvtransfer.ErrTransfer.Error() + ": " + msg
	}
	return &apiError{Status: http.StatusInternalServerError, Type: typeInternal, Message: msg}
}

// abandonPD undoes the handoff preparations of a job that was never
// submitted: the prefill's registration, the decode's claim on the prefill
// worker's blocks.
func (s *Server) abandonPD(j *job) {
	switch j.g.pd.role {
	case pdPrefill:
		s.kvt.Abandon(j.pdRequestID())
	case pdDecode:
		if rk := j.reqs[0].Remote; rk != nil && rk.OnPulled != nil {
			rk.OnPulled(false)
		}
	}
}

// noteHandoff builds a finished prefill's kv_transfer_params (held blocks)
// or forgets the handoff (nothing held).
func (j *job) noteHandoff(fin *engine.Finished) {
	s := j.s
	if fin.HeldBlocks == nil {
		s.kvt.Abandon(j.pdRequestID())
		return
	}
	addr := s.kvt.Held(j.pdRequestID(), fin.HeldBlocks, s.noSideChannel())
	p := &kvTransferParams{DoRemotePrefill: true, RemoteBlockIDs: fin.HeldBlocks, RemoteEngineID: addr.EngineID,
		RemoteRequestID: j.pdRequestID(), RemoteHost: addr.Host, RemotePort: addr.Port, TPSize: 1}
	if s.usesBootstrap() {
		room := j.room
		p.BootstrapRoom = &room
	}
	j.kvParams = p
}
