package kvtransfer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

func TestBootstrapRendezvousEitherSideFirst(t *testing.T) {
	for _, decodeFirst := range []bool{false, true} {
		name := "prefill first"
		if decodeFirst {
			name = "decode first"
		}
		t.Run(name, func(t *testing.T) {
			e := startEngine(t)
			s := startService(t, nil, 5*time.Second)
			s.engines = append(s.engines, e)
			const room, delay = 0x1122334455667788, 40 * time.Millisecond
			spec := HandoffSpec{RequestID: "req-1", Room: room, HasRoom: true, Delay: delay, Timeout: time.Minute}
			start := time.Now()
			acked := make(chan error, 1)
			rendezvous := func() { acked <- Rendezvous(context.Background(), "127.0.0.1", s.BootstrapPort(), room, time.Second) }
			if decodeFirst {
				go rendezvous()
				time.Sleep(30 * time.Millisecond) // the decode side is waiting
			}
			blocks := prefill(t, e, s, spec)
			heldAt := time.Now()
			if len(blocks) != 3 {
				t.Fatalf("held blocks %v, want 3", blocks)
			}
			if !decodeFirst {
				go rendezvous()
			}
			if err := <-acked; err != nil {
				t.Fatalf("rendezvous: %v", err)
			}
			// The ACK comes once the modeled transfer has elapsed.
			if got := time.Since(heldAt); got < delay-2*time.Millisecond {
				t.Errorf("ACK %v after the first token, want >= %v", got, delay)
			}
			if got := time.Since(start); got > 2*time.Second {
				t.Errorf("rendezvous took %v", got)
			}
			testutil.WaitFor(t, 2*time.Second, "held blocks released after the ACK", func() bool {
				return e.Load().HeldBlocks == 0 && s.NumHandoffs() == 0
			})
		})
	}
}

func TestBootstrapUnknownRoomTimesOutWithoutACK(t *testing.T) {
	s := startService(t, nil, 150*time.Millisecond)
	start := time.Now()
	err := Rendezvous(context.Background(), "127.0.0.1", s.BootstrapPort(), 99, time.Second)
	if !errors.Is(err, ErrNoAck) {
		t.Fatalf("err = %v, want ErrNoAck", err)
	}
	if got := time.Since(start); got < 150*time.Millisecond || got > time.Second {
		t.Errorf("closed after %v, want the 150ms room timeout", got)
	}
}

func TestBootstrapClientGivesUpOnASilentPrefillSide(t *testing.T) {
	ln := testutil.Listen(t) // accepts (backlog) but never answers
	start := time.Now()
	err := Rendezvous(context.Background(), "127.0.0.1", testutil.Port(ln.Addr()), 1, 100*time.Millisecond)
	if err == nil || errors.Is(err, ErrNoAck) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if got := time.Since(start); got > time.Second {
		t.Errorf("gave up after %v", got)
	}
}

func TestBootstrapClientReportsARefusedConnection(t *testing.T) {
	ln := testutil.Listen(t)
	port := testutil.Port(ln.Addr())
	_ = ln.Close()
	if err := Rendezvous(context.Background(), "127.0.0.1", port, 1, time.Second); err == nil {
		t.Fatal("rendezvous with a closed port succeeded")
	}
}
