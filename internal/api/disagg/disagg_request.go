// Package disagg is the request side of disaggregated prefill/decode in the
// HTTP layer: a request's kv_transfer_params and bootstrap fields
// (ParsePD, PDRequest), the prefill response's kv_transfer_params, and the
// side channel's interfaces (KVTransfer, TransferFailureObserver) that
// internal/kvtransfer implements. The pipeline carries the handoffs out.
package disagg

import (
	"context"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kvtransfer"
)

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
	PDPrefill               // compute the prompt, one token, hold the blocks
	PDDecode                // pull the prompt's KV, then decode
)

// PDRequest is what a request says about disaggregation.
type PDRequest struct {
	Given           bool // kv_transfer_params or a bootstrap_* field is present
	Params          bool // kv_transfer_params is present
	DoRemoteDecode  bool
	DoRemotePrefill bool
	Remote          kvtransfer.Remote
	present         map[string]bool // kv_transfer_params keys given (not null)

	bootstrapHost string
	bootstrapPort int
	Room          uint64
	HasRoom       bool

	Role pdRole // decided by checkPD
}

// remoteKeys are the kv_transfer_params a decode request needs to pull over
// the side channel, in vLLM's order.
var remoteKeys = []string{"remote_block_ids", "remote_engine_id", "remote_request_id", "remote_host", "remote_port"}

// ParsePD reads kv_transfer_params and the bootstrap fields with their
// JSON types (wrong types are recorded on o).
func ParsePD(o wire.Object) PDRequest {
	var pd PDRequest
	if kt, ok := o.Object("kv_transfer_params"); ok {
		pd.Given, pd.Params = true, true
		pd.present = map[string]bool{}
		for k := range kt.M {
			if kt.Has(k) {
				pd.present[k] = true
			}
		}
		pd.DoRemoteDecode = kt.Bool("do_remote_decode", false)
		pd.DoRemotePrefill = kt.Bool("do_remote_prefill", false)
		pd.Remote.Host, _ = kt.String("remote_host")
		pd.Remote.Port = int(kt.Int("remote_port").I)
		pd.Remote.EngineID, _ = kt.String("remote_engine_id")
		pd.Remote.RequestID, _ = kt.String("remote_request_id")
		if ids, ok := kt.Array("remote_block_ids"); ok {
			pd.Remote.BlockIDs = make([]int, 0, len(ids))
			for i, raw := range ids {
				v, e := wire.ParseInt(raw, kt.Name("remote_block_ids")+"["+wire.Itoa(i)+"]")
				if e != nil {
					kt.Fail(e)
					break
				}
				pd.Remote.BlockIDs = append(pd.Remote.BlockIDs, int(v.I))
			}
		}
		if raw, ok := kt.Raw("bootstrap_room"); ok {
			room, e := wire.ParseUint64(raw, kt.Name("bootstrap_room"))
			if e != nil {
				kt.Fail(e)
			}
			pd.Room, pd.HasRoom = room, true
		}
	}
	if h, ok := o.String("bootstrap_host"); ok {
		pd.Given, pd.bootstrapHost = true, h
	}
	if p := o.Int("bootstrap_port"); p.Set {
		pd.Given, pd.bootstrapPort = true, int(p.I)
	}
	if raw, ok := o.Raw("bootstrap_room"); ok {
		room, e := wire.ParseUint64(raw, "bootstrap_room")
		if e != nil {
			o.Fail(e)
		}
		pd.Given = true
		if !pd.HasRoom {
			pd.Room, pd.HasRoom = room, true
		}
	}
	return pd
}

// ResolveRemote fills a decode request's prefill address: kv_transfer_params'
// remote_host/remote_port, else bootstrap_host/bootstrap_port. A pull over
// the side channel (no bootstrap room) needs every remote_* key.
func (pd *PDRequest) ResolveRemote() *wire.APIError {
	if pd.present == nil {
		pd.present = map[string]bool{} // bootstrap_* fields only
	}
	if !pd.present["remote_host"] && pd.bootstrapHost != "" {
		pd.Remote.Host = pd.bootstrapHost
		pd.present["remote_host"] = true
	}
	if !pd.present["remote_port"] && pd.bootstrapPort != 0 {
		pd.Remote.Port = pd.bootstrapPort
		pd.present["remote_port"] = true
	}
	required := remoteKeys[3:]
	if !pd.HasRoom && pd.Remote.Port != 0 {
		required = remoteKeys
	}
	var missing []string
	for _, k := range required {
		if !pd.present[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return wire.ErrInvalid("kv_transfer_params."+missing[0],
			"kv_transfer_params is missing %s: a request with do_remote_prefill needs %s.",
			strings.Join(missing, ", "), strings.Join(required, ", "))
	}
	pd.Remote.Room, pd.Remote.HasRoom = pd.Room, pd.HasRoom
	return nil
}

// KVTransferParams is a prefill response's kv_transfer_params, in the
// order vLLM's NixlConnector.request_finished builds them.
type KVTransferParams struct {
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
