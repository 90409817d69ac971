package events

import (
	"errors"
	"net"
	"testing"
)

func TestShouldBind(t *testing.T) {
	cases := map[string]bool{
		"tcp://*:5557":          true,
		"tcp://[::]:5557":       true,
		"tcp://:::5557":         true,
		"ipc:///tmp/kv":         true,
		"inproc://kv":           true,
		"tcp://indexer:5557":    false,
		"tcp://0.0.0.0:5557":    false, // connects under vLLM's rule
		"tcp://127.0.0.1:5557":  false,
		"tcp://[fe80::1]:5557":  true, // contains "::"
		"tcp://[2001:db8:1]:55": false,
	}
	for ep, want := range cases {
		if got := ShouldBind(ep); got != want {
			t.Errorf("ShouldBind(%q) = %v, want %v", ep, got, want)
		}
	}
}

func TestOffsetEndpoint(t *testing.T) {
	cases := []struct {
		ep   string
		rank int
		want string
		err  bool
	}{
		{"tcp://*:5557", 0, "tcp://*:5557", false},
		{"tcp://*:5557", 1, "tcp://*:5558", false},
		{"tcp://indexer:5557", 3, "tcp://indexer:5560", false},
		{"tcp://[::1]:6000", 2, "tcp://[::1]:6002", false},
		{"inproc://kv", 0, "inproc://kv", false},
		{"inproc://kv", 2, "inproc://kv_dp2", false},
		{"ipc:///tmp/kv", 0, "ipc:///tmp/kv", false},
		{"ipc:///tmp/kv", 1, "", true},
		{"tcp://host", 1, "", true},
		{"tcp://host:65535", 1, "", true},
		{"tcp://host:abc", 1, "", true},
	}
	for _, c := range cases {
		got, err := OffsetEndpoint(c.ep, c.rank)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("OffsetEndpoint(%q, %d) = %q, %v; want %q (error %v)", c.ep, c.rank, got, err, c.want, c.err)
		}
	}
}

func fakeLookup(table map[string][]string) LookupIP {
	return func(host string) ([]net.IP, error) {
		addrs, ok := table[host]
		if !ok {
			return nil, errors.New("no such host")
		}
		var ips []net.IP
		for _, a := range addrs {
			ips = append(ips, net.ParseIP(a))
		}
		return ips, nil
	}
}

func TestHostEndpoint(t *testing.T) {
	lookup := fakeLookup(map[string][]string{
		"localhost": {"::1", "127.0.0.1"},
		"v6only":    {"fd00::5"},
		"empty":     {},
	})
	cases := []struct {
		host string
		port int
		want string
		err  bool
	}{
		{"127.0.0.1", 5557, "tcp://127.0.0.1:5557", false},
		{"0.0.0.0", 5558, "tcp://0.0.0.0:5558", false},
		{"::", 5557, "tcp://[::]:5557", false},
		{"[::1]", 5557, "tcp://[::1]:5557", false},
		{"fe80::1", 1, "tcp://[fe80::1]:1", false},
		{"localhost", 5557, "tcp://127.0.0.1:5557", false}, // IPv4 preferred
		{"v6only", 5557, "tcp://[fd00::5]:5557", false},
		{"", 5557, "tcp://*:5557", false},
		{"nowhere", 5557, "", true},
		{"empty", 5557, "", true},
	}
	for _, c := range cases {
		got, err := HostEndpoint(c.host, c.port, lookup)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("HostEndpoint(%q, %d) = %q, %v; want %q (error %v)", c.host, c.port, got, err, c.want, c.err)
		}
	}
}

func TestNeedsIPv6(t *testing.T) {
	for ep, want := range map[string]bool{
		"tcp://[::1]:5": true, "tcp://[::]:5": true, "tcp://*:5": false, "tcp://127.0.0.1:5": false,
		"ipc:///a:b:c": false, "tcp://:::5": true,
	} {
		if got := needsIPv6(ep); got != want {
			t.Errorf("needsIPv6(%q) = %v", ep, got)
		}
	}
}
