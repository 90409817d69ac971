package kvtransfer

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// sideChannel starts a prefill Service behind a real HTTP server and a
// decode Service (its client) without listeners.
func sideChannel(t *testing.T) (e *engine.Engine, prefillSide, decodeSide *Service, remote Remote) {
	t.Helper()
	e = startEngine(t)
	var err error
	prefillSide, err = New([]*engine.Engine{e}, Options{EngineID: "prefill-0", AdvertiseHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prefillSide.Close)
	srv := httptest.NewServer(prefillSide.Handler())
	t.Cleanup(srv.Close)
	prefillSide.SetHTTPPort(testutil.Port(srv.Listener.Addr()))
	decodeSide, err = New(nil, Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(decodeSide.Close)
	return e, prefillSide, decodeSide, Remote{Host: "127.0.0.1", Port: testutil.Port(srv.Listener.Addr()),
		EngineID: "prefill-0", RequestID: "req-7"}
}

func TestSideChannelPullThenReleaseFreesTheHeldBlocks(t *testing.T) {
	e, p, d, remote := sideChannel(t)
	remote.BlockIDs = prefill(t, e, p, HandoffSpec{RequestID: "req-7", Timeout: time.Minute})
	if got := p.Held("req-7", remote.BlockIDs, false); got.Port != remote.Port || got.EngineID != "prefill-0" {
		t.Errorf("address %+v, want the HTTP port and engine id", got)
	}
	rk, err := d.Prepare(context.Background(), remote)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if e.Load().HeldBlocks != 3 {
		t.Errorf("held blocks %d before the pull completes, want 3", e.Load().HeldBlocks)
	}
	rk.OnPulled(true) // the decode engine's transfer completed
	testutil.WaitFor(t, 2*time.Second, "held blocks freed after the pull", func() bool {
		return e.Load().HeldBlocks == 0 && p.NumHandoffs() == 0
	})
	// A second decode for the same handoff finds nothing held.
	if _, err := d.Prepare(context.Background(), remote); !errors.Is(err, ErrTransfer) || !strings.Contains(err.Error(), "410") {
		t.Errorf("pull after release: %v, want a 410 ErrTransfer", err)
	}
}

func TestSideChannelRefusals(t *testing.T) {
	e, p, d, remote := sideChannel(t)
	blocks := prefill(t, e, p, HandoffSpec{RequestID: "req-7", Timeout: time.Minute})
	for _, tc := range []struct {
		name   string
		mutate func(r *Remote)
		want   string
	}{
		{"unknown request", func(r *Remote) { r.RequestID = "nope" }, "410"},
		{"another engine", func(r *Remote) { r.EngineID = "other" }, "404"},
		{"other blocks", func(r *Remote) { r.BlockIDs = []int{9} }, "409"},
		// Transport failures are one generic message: no closed, filtered
		// or open port to tell apart, no resolver named.
		{"unreachable worker", func(r *Remote) { r.Port = 1 }, "prefill worker not reachable"},
		{"host outside the allow-list", func(r *Remote) { r.Host = "10.9.9.9" }, "not allowed"},
		{"name outside the allow-list", func(r *Remote) { r.Host = "prefill.invalid" }, "not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := remote
			r.BlockIDs = slices.Clone(blocks)
			tc.mutate(&r)
			_, err := d.Prepare(context.Background(), r)
			if !errors.Is(err, ErrTransfer) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrTransfer with %q", err, tc.want)
			}
		})
	}
	if e.Load().HeldBlocks != 3 {
		t.Errorf("refused pulls changed the hold: %d blocks", e.Load().HeldBlocks)
	}
}

func TestSideChannelHoldTimesOutAndThePullIsRefused(t *testing.T) {
	e, p, d, remote := sideChannel(t)
	remote.BlockIDs = prefill(t, e, p, HandoffSpec{RequestID: "req-7", Timeout: 100 * time.Millisecond})
	// The engine's load snapshot may not show the hold yet when prefill
	// returns, so wait for both the released blocks and the emptied
	// directory rather than for the blocks alone.
	testutil.WaitFor(t, 5*time.Second, "hold timed out and left the directory", func() bool {
		return e.Load().HeldBlocks == 0 && p.NumHandoffs() == 0
	})
	if _, err := d.Prepare(context.Background(), remote); !errors.Is(err, ErrTransfer) {
		t.Errorf("pull after the timeout: %v, want ErrTransfer", err)
	}
}

func TestPrepareWithoutSideChannelLeavesTheTransferToTheEngine(t *testing.T) {
	d, err := New(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rk, err := d.Prepare(context.Background(), Remote{Host: "127.0.0.1"})
	if err != nil || rk == nil || rk.NoTransferTime || rk.OnPulled != nil {
		t.Errorf("Prepare = %+v, %v; want a plain remote request", rk, err)
	}
}
