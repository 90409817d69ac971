package events

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	zmq "github.com/pebbe/zmq4"
	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// unhex parses a spaced hex dump ("93 cb 41 ..."), ignoring whitespace.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex: %v", err)
	}
	return b
}

// decodeAny decodes a msgpack value generically: maps → map[string]any,
// arrays → []any, integers → int64 or uint64, floats → float64.
func decodeAny(t testing.TB, b []byte) any {
	t.Helper()
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	dec.UseLooseInterfaceDecoding(true)
	v, err := dec.DecodeInterface()
	if err != nil {
		t.Fatalf("msgpack decode: %v", err)
	}
	if _, err := dec.DecodeInterface(); err == nil {
		t.Fatalf("trailing data after msgpack value")
	}
	return v
}

// num converts a generically decoded msgpack integer to uint64.
func num(t testing.TB, v any) uint64 {
	t.Helper()
	switch x := v.(type) {
	case int64:
		if x < 0 {
			t.Fatalf("negative integer %d", x)
		}
		return uint64(x)
	case uint64:
		return x
	}
	t.Fatalf("not an integer: %#v", v)
	return 0
}

func newCtx(t testing.TB) *zmq.Context {
	t.Helper()
	zctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs after the sockets' cleanups.
	t.Cleanup(func() {
		if err := zctx.Term(); err != nil {
			t.Errorf("term: %v", err)
		}
	})
	return zctx
}

// ipcEndpoint returns a fresh ipc:// endpoint with a short path.
func ipcEndpoint(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mkev")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return "ipc://" + filepath.Join(dir, name)
}

// debianPython returns the first python3 on PATH (or Debian's) that can
// import zmq and msgpack, or "".
func debianPython() string {
	cands := []string{}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		cands = append(cands, filepath.Join(dir, "python3"))
	}
	cands = append(cands, "/usr/bin/python3")
	for _, c := range cands {
		if err := exec.Command(c, "-c", "import zmq, msgpack").Run(); err == nil {
			return c
		}
	}
	return ""
}

func be64(seq uint64) []byte {
	return []byte{byte(seq >> 56), byte(seq >> 48), byte(seq >> 40), byte(seq >> 32),
		byte(seq >> 24), byte(seq >> 16), byte(seq >> 8), byte(seq)}
}

func hexs(b []byte) string { return fmt.Sprintf("% x", b) }
