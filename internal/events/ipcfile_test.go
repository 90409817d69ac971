package events

import (
	"os"
	"strings"
	"testing"

	zmq "github.com/pebbe/zmq4"
)

// TestFPMIPCSocketFileRemovedOnClose binds the FPM publisher on an ipc://
// endpoint, with its own ZMQ context and with a shared one that outlives
// it: after Close the socket file is gone either way.
func TestFPMIPCSocketFileRemovedOnClose(t *testing.T) {
	shared, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Term()
	for _, zctx := range []*zmq.Context{nil, shared} {
		ep := ipcEndpoint(t, "fpm")
		path := strings.TrimPrefix(ep, "ipc://")
		p, err := NewFPMPublisher(FPMPublisherOptions{FPMSettings: FPMSettings{Endpoint: ep, Bind: true}, Context: zctx})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("socket file missing while bound: %v", err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("shared context %v: socket file %s still there after Close (%v)", zctx != nil, path, err)
		}
	}
}
