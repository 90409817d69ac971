package testutil

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	zmq "github.com/pebbe/zmq4"
)

// Listen returns a TCP listener on 127.0.0.1 whose port the kernel chose,
// closed when the test ends. Read the port with Port(l.Addr()).
func Listen(t testing.TB) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.1:0: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// Port returns the port of a TCP address (a listener's Addr).
func Port(addr net.Addr) int {
	return addr.(*net.TCPAddr).Port
}

// AnyLoopbackPort is the ZMQ endpoint that binds a loopback port the kernel
// chooses; read the port back with LastEndpoint.
const AnyLoopbackPort = "tcp://127.0.0.1:*"

// BindZMQ binds s to AnyLoopbackPort and returns the endpoint it is bound
// to ("tcp://127.0.0.1:PORT"), for the socket under test to connect to.
func BindZMQ(t testing.TB, s *zmq.Socket) string {
	t.Helper()
	if err := s.Bind(AnyLoopbackPort); err != nil {
		t.Fatalf("zmq bind %s: %v", AnyLoopbackPort, err)
	}
	return LastEndpoint(t, s)
}

// LastEndpoint returns the endpoint s was last bound to, as libzmq reports
// it (ZMQ_LAST_ENDPOINT): a "*" port reads back as the chosen port.
func LastEndpoint(t testing.TB, s *zmq.Socket) string {
	t.Helper()
	ep, err := s.GetLastEndpoint()
	if err != nil {
		t.Fatalf("zmq last endpoint: %v", err)
	}
	return ep
}

// EndpointPort returns the port of a "tcp://host:port" endpoint.
func EndpointPort(t testing.TB, endpoint string) int {
	t.Helper()
	i := strings.LastIndexByte(endpoint, ':')
	port, err := strconv.Atoi(endpoint[i+1:])
	if !strings.HasPrefix(endpoint, "tcp://") || err != nil {
		t.Fatalf("endpoint %q has no tcp port", endpoint)
	}
	return port
}

// portRunAttempts bounds WithPortRuns: each attempt fails only when another
// process took one of the ports in the instant between the check and the
// bind, so a handful is plenty.
const portRunAttempts = 10

// WithPortRuns is for configurations that derive ports from a base port
// (data-parallel rank r publishes on base+r) and bind them themselves, so
// that no port can be held for them. It finds count bases, each the first of
// runLen consecutive loopback ports that are free, the first one chosen by
// the kernel, and calls attempt with them. When attempt fails (a port was
// taken in between), it tries again with new ports; after a few failures
// the test fails with the last error.
func WithPortRuns(t testing.TB, count, runLen int, attempt func(bases []int) error) {
	t.Helper()
	var last error
	for range portRunAttempts {
		bases, err := freePortRuns(count, runLen)
		if err != nil {
			// A busy loopback: say so only if no attempt ever ran, whose
			// own failure says more.
			if last == nil {
				last = err
			}
			continue
		}
		if last = attempt(bases); last == nil {
			return
		}
	}
	t.Fatalf("no run of %d free ports worked after %d attempts: %v", runLen, portRunAttempts, last)
}

// freePortRuns holds every port of every run until all runs are found, so
// that the runs do not overlap, then releases them.
func freePortRuns(count, runLen int) (bases []int, err error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	for len(bases) < count {
		first, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("listen on 127.0.0.1:0: %w", err)
		}
		held = append(held, first)
		base := Port(first.Addr())
		ok := true
		for i := 1; i < runLen && ok; i++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if ok = err == nil; ok {
				held = append(held, l)
			}
		}
		if ok {
			bases = append(bases, base)
		}
		if len(held) > 64*count*runLen {
			return nil, errors.New("no run of consecutive free ports on 127.0.0.1")
		}
	}
	return bases, nil
}

// RestartablePortRun returns the first of n consecutive loopback ports that
// are free and lie below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range; 32768 when unreadable), for a
// server that a test stops and restarts on the same port. A port the OS
// hands out for ":0" or for an outgoing connection can be taken by another
// test process in the instant the server is down ("bind: address already in
// use" on restart); ports below that range are only ever taken by someone
// who names them. The run starts at a random place, so that parallel test
// processes seldom try the same ports.
func RestartablePortRun(t testing.TB, n int) int {
	t.Helper()
	const lowest = 10000
	highest := ephemeralLow() - n
	if highest <= lowest {
		t.Fatalf("no room for %d ports below the ephemeral range", n)
	}
	for range 200 {
		base := lowest + rand.IntN(highest-lowest)
		var held []net.Listener
		for i := range n {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				break
			}
			held = append(held, l)
		}
		for _, l := range held {
			_ = l.Close()
		}
		if len(held) == n {
			return base
		}
	}
	t.Fatalf("found no %d consecutive free ports below the ephemeral range", n)
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= 1024 {
		return 32768
	}
	return low
}
