package kvtransfer

import (
	"bufio"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// An independent implementation of the bootstrap byte format, in Python's
// struct module: 8-byte little-endian room id, one 0x01 byte.
const pyBootstrapClient = `
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(struct.pack("<Q", int(sys.argv[2])))
ack = s.recv(1)
print(ack.hex())
`

const pyBootstrapServer = `
import socket, struct, sys
ln = socket.socket()
ln.bind(("127.0.0.1", 0))
ln.listen(1)
print(ln.getsockname()[1], flush=True)
c, _ = ln.accept()
data = b""
while len(data) < 8:
    data += c.recv(8 - len(data))
print(struct.unpack("<Q", data)[0], flush=True)
c.sendall(b"\x01")
c.close()
`

func TestBootstrapBytesAgainstPythonClient(t *testing.T) {
	py := testutil.DebianPython(t, "socket", "struct")
	e := startEngine(t)
	s := startService(t, nil, 5*time.Second)
	s.engines = append(s.engines, e)
	const room = 18446744073709551557 // > 2^63: the id is unsigned
	prefill(t, e, s, HandoffSpec{RequestID: "r", Room: room, HasRoom: true, Timeout: time.Minute})
	out, err := exec.Command(py, "-c", pyBootstrapClient, strconv.Itoa(s.BootstrapPort()), strconv.FormatUint(room, 10)).CombinedOutput()
	if err != nil {
		t.Fatalf("python client: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "01" {
		t.Errorf("python client got ACK %q, want 01", got)
	}
	testutil.WaitFor(t, 2*time.Second, "blocks released", func() bool { return e.Load().HeldBlocks == 0 })
}

func TestBootstrapBytesAgainstPythonServer(t *testing.T) {
	py := testutil.DebianPython(t, "socket", "struct")
	cmd := exec.Command(py, "-c", pyBootstrapServer)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatal("python server printed no port")
	}
	port, _ := strconv.Atoi(lines.Text())
	const room = 0x0102030405060708
	if err := Rendezvous(context.Background(), "127.0.0.1", port, room, 5*time.Second); err != nil {
		t.Fatalf("rendezvous with the python server: %v", err)
	}
	if !lines.Scan() || lines.Text() != strconv.FormatUint(room, 10) {
		t.Errorf("python server decoded room %q, want %d", lines.Text(), uint64(room))
	}
}
