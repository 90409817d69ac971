package kvtransfer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/httperr"
)

// The HTTP side channel, mounted on the prefill worker's own port.
const (
	// PullPath checks that a handoff's blocks are still held (the decode
	// side is about to read them).
	PullPath = "/kv_transfer/pull"
	// ReleasePath frees them once the decode side has read them.
	ReleasePath = "/kv_transfer/release"
)

// pullBody is the JSON body of both side-channel calls.
type pullBody struct {
	EngineID  string `json:"remote_engine_id"`
	RequestID string `json:"remote_request_id"`
	BlockIDs  []int  `json:"remote_block_ids"`
}

// errorBody is a side-channel error answer, as the client decodes it.
type errorBody struct {
	Error string `json:"error"`
}

// Handler serves the prefill side of the HTTP side channel.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PullPath, s.handlePull)
	mux.HandleFunc("POST "+ReleasePath, s.handleRelease)
	return mux
}

// lookup decodes a side-channel body and finds its held handoff, writing
// the error answer when there is none.
func (s *Service) lookup(w http.ResponseWriter, r *http.Request) (*handoff, bool) {
	var body pullBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		writeSideError(w, http.StatusBadRequest, "invalid body: "+err.Error())
		return nil, false
	}
	if body.EngineID != s.opts.EngineID {
		// Neither id is echoed: the answer must not tell a prober the
		// engine id a release needs.
		writeSideError(w, http.StatusNotFound, "no such engine on this worker")
		return nil, false
	}
	s.mu.Lock()
	h := s.handoffs[body.RequestID]
	held := h != nil && h.held
	s.mu.Unlock()
	if !held {
		writeSideError(w, http.StatusGone, fmt.Sprintf("the blocks of request %q are not held (released or unknown)", body.RequestID))
		return nil, false
	}
	if body.BlockIDs != nil && !slices.Equal(body.BlockIDs, h.blocks) {
		writeSideError(w, http.StatusConflict, fmt.Sprintf("request %q holds blocks %v, not %v", body.RequestID, h.blocks, body.BlockIDs))
		return nil, false
	}
	return h, true
}

func (s *Service) handlePull(w http.ResponseWriter, r *http.Request) {
	h, ok := s.lookup(w, r)
	if !ok {
		return
	}
	// The directory may lag the engine by a timeout that just fired: ask
	// the engine itself.
	held := false
	if h.rank >= 0 && h.rank < len(s.engines) {
		var err error
		held, err = s.engines[h.rank].HoldsHandoff(r.Context(), h.engineReq)
		held = held && err == nil
	}
	if !held {
		writeSideError(w, http.StatusGone, fmt.Sprintf("the blocks of request %q are not held (released)", h.requestID))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) handleRelease(w http.ResponseWriter, r *http.Request) {
	h, ok := s.lookup(w, r)
	if !ok {
		return
	}
	s.release(h)
	w.WriteHeader(http.StatusNoContent)
}

func writeSideError(w http.ResponseWriter, status int, msg string) {
	// The newline is json.Encoder's, which wrote these answers first.
	httperr.Write(w, status, append(httperr.Flat(msg), '\n'))
}

// Remote is what a decode request's kv_transfer_params (or SGLang-style
// bootstrap fields) say about its prefill worker.
type Remote struct {
	Host      string
	Port      int
	EngineID  string
	RequestID string
	BlockIDs  []int
	// Room and HasRoom select Dynamo's bootstrap rendezvous.
	Room    uint64
	HasRoom bool
	// Rank is the decode worker's DP rank that will run the request
	// (metric labels).
	Rank int
}

// ErrTransfer wraps every failure to reach a prefill worker's KV.
var ErrTransfer = errors.New("KV transfer from prefill worker failed")

// Prepare readies a decode request's pull: with a bootstrap room it waits
// for the rendezvous (the prefill side has modeled the transfer); with a
// side-channel port it checks that the prefill worker still holds the
// blocks and arranges for them to be freed once pulled; with neither the
// engine's link models the transfer alone. Errors wrap ErrTransfer.
func (s *Service) Prepare(ctx context.Context, r Remote) (*engine.RemoteKV, error) {
	if r.Port == 0 {
		return &engine.RemoteKV{}, nil
	}
	if !s.allow.allows(r.Host) {
		return nil, fmt.Errorf("%w: %w", ErrTransfer, ErrHostNotAllowed)
	}
	if r.HasRoom {
		if err := Rendezvous(ctx, r.Host, r.Port, r.Room, s.timeout); err != nil {
			return nil, s.unreachable(ctx, "rendezvous", r, err)
		}
		return &engine.RemoteKV{NoTransferTime: true}, nil
	}
	if err := s.call(ctx, r, PullPath); err != nil {
		return nil, s.unreachable(ctx, "pull", r, err)
	}
	return &engine.RemoteKV{OnPulled: func(bool) { s.releaseRemote(r) }}, nil
}

// releaseRemote tells the prefill worker to free r's blocks. It is called
// on the engine goroutine, so the call runs on its own goroutine; a failure
// only means the prefill side frees them at its timeout.
func (s *Service) releaseRemote(r Remote) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
		defer cancel()
		if err := s.call(ctx, r, ReleasePath); err != nil {
			if s.opts.Notifications != nil {
				s.opts.Notifications.ObserveFailedNotification(r.Rank)
			}
			s.log.Warn("KV transfer: release at the prefill worker failed", "request", r.RequestID, "err", err)
		}
	}()
}

// unreachable logs why a prefill worker could not be reached and returns
// the generic error the client sees (the request's own cancellation stays
// what it is).
func (s *Service) unreachable(ctx context.Context, what string, r Remote, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ErrTransfer, ctx.Err())
	}
	var answer *sideAnswer
	if errors.As(err, &answer) {
		// The prefill worker answered: its status is no port oracle.
		return fmt.Errorf("%w: %w", ErrTransfer, err)
	}
	s.log.Debug("KV transfer: "+what+" failed", "request", r.RequestID, "err", err)
	return fmt.Errorf("%w: %w", ErrTransfer, errUnreachable)
}

// call posts one side-channel request and maps a non-2xx answer to an error.
func (s *Service) call(ctx context.Context, r Remote, path string) error {
	body, _ := json.Marshal(pullBody{EngineID: r.EngineID, RequestID: r.RequestID, BlockIDs: r.BlockIDs})
	url := "http://" + net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.opts.ClientAPIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.opts.ClientAPIKey)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	var e errorBody
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&e)
	if e.Error == "" {
		e.Error = resp.Status
	}
	return &sideAnswer{path: path, status: resp.StatusCode, msg: e.Error}
}

// sideAnswer is a prefill worker's refusal of a side-channel call.
type sideAnswer struct {
	path   string
	status int
	msg    string
}

func (a *sideAnswer) Error() string {
	return fmt.Sprintf("the prefill worker answered %s with %d: %s", a.path, a.status, a.msg)
}
