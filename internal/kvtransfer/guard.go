package kvtransfer

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// GuardedHandler is Handler behind authorize: a side-channel call it
// refuses gets 401 before its body is read. The HTTP layer mounts it on the
// API port with its --api-key check, so that nobody without the key can
// release (or probe) a handoff; the decode side's client sends
// Options.ClientAPIKey. A nil authorize is Handler.
func (s *Service) GuardedHandler(authorize func(*http.Request) bool) http.Handler {
	h := s.Handler()
	if authorize == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorize(r) {
			w.Header().Set("Connection", "close")
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
			writeSideError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// BearerAuth returns an authorize function for GuardedHandler that accepts
// "Authorization: Bearer K" for any of keys (compared in constant time);
// nil when keys is empty (no key configured: everything is allowed, as on
// the rest of the API port).
func BearerAuth(keys []string) func(*http.Request) bool {
	if len(keys) == 0 {
		return nil
	}
	want := make([][]byte, len(keys))
	for i, k := range keys {
		want[i] = []byte("Bearer " + k)
	}
	return func(r *http.Request) bool {
		got := []byte(r.Header.Get("Authorization"))
		ok := 0
		for _, k := range want {
			ok |= subtle.ConstantTimeCompare(got, k)
		}
		return ok == 1
	}
}

// ErrHostNotAllowed is wrapped (with ErrTransfer) when a decode request
// names a prefill worker outside Options.AllowedHosts.
var ErrHostNotAllowed = fmt.Errorf("prefill worker host not allowed (--kv-transfer-allowed-hosts)")

// errUnreachable is the one answer for every way a side-channel call or a
// rendezvous can fail to reach the prefill worker: refused, filtered, timed
// out, unresolvable all read the same, so that the decode worker is no port
// scanner for its clients. The detail goes to the log.
var errUnreachable = fmt.Errorf("prefill worker not reachable or refused the handoff")

// hostAllowList decides which prefill hosts a decode worker may dial:
// loopback always; the worker's own advertised host (the fleet's workers
// share it); and the operator's entries — a host name (matched exactly,
// never resolved), an IP, a CIDR, or "*" for any host.
type hostAllowList struct {
	any   bool
	names map[string]bool
	nets  []*net.IPNet
}

func newHostAllowList(advertise string, entries []string) (*hostAllowList, error) {
	l := &hostAllowList{names: map[string]bool{"localhost": true}}
	add := func(e string) error {
		e = strings.ToLower(strings.Trim(strings.TrimSpace(e), "[]"))
		switch {
		case e == "":
			return nil
		case e == "*":
			l.any = true
		case strings.Contains(e, "/"):
			_, n, err := net.ParseCIDR(e)
			if err != nil {
				return fmt.Errorf("kv_transfer_allowed_hosts: %q is not a CIDR", e)
			}
			l.nets = append(l.nets, n)
		default:
			if ip := net.ParseIP(e); ip != nil {
				bits := 32
				if ip.To4() == nil {
					bits = 128
				}
				l.nets = append(l.nets, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			} else {
				l.names[e] = true
			}
		}
		return nil
	}
	if err := add(advertise); err != nil {
		return nil, err
	}
	for _, e := range entries {
		if err := add(e); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (l *hostAllowList) allows(host string) bool {
	host = strings.ToLower(strings.Trim(host, "[]"))
	if l.any || l.names[host] {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	for _, n := range l.nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// rateLog folds a repeated warning into at most one line per interval,
// with the count of what it stands for, so that a client sending bogus
// bootstrap rooms cannot fill the log. Safe for concurrent use.
type rateLog struct {
	mu      sync.Mutex
	last    time.Time
	pending int
}

const rateLogInterval = 10 * time.Second

func (r *rateLog) warn(log *slog.Logger, msg string, attrs ...any) {
	r.mu.Lock()
	r.pending++
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < rateLogInterval {
		r.mu.Unlock()
		return
	}
	n := r.pending
	r.pending, r.last = 0, now
	r.mu.Unlock()
	log.Warn(msg, append(attrs, "count", n)...)
}
