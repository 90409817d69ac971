package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mocker-server/mocker-server/internal/config"
)

// checkAdminExposure refuses an admin API reachable from other machines
// without a key: it can kill workers and inject faults. Loopback hosts
// (127.0.0.0/8, ::1, localhost) need no key; any other host — a wildcard,
// an interface address, a name — needs --admin-key, unless the operator
// says --admin-allow-insecure (a network they trust). The error is a
// configuration error: one line, exit status 2.
func checkAdminExposure(addr, key string, allowInsecure bool) error {
	if addr == "" || key != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return &config.Error{Problems: []string{fmt.Sprintf("admin API address %q: %v", addr, err)}}
	}
	if isLoopbackHost(host) {
		return nil
	}
	if allowInsecure {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "every interface"
	}
	return &config.Error{Problems: []string{fmt.Sprintf(
		"--admin-host %s exposes the admin API (kill, restart, faults) beyond this machine without --admin-key: "+
			"set --admin-key (or MOCKER_ADMIN_KEY in the compose files), bind 127.0.0.1, or pass --admin-allow-insecure on a trusted network", shown)}}
}

// isLoopbackHost reports whether host names only this machine.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// The admin port's slow-client policy: a request's header must arrive
// within adminHeaderTimeout and its body within adminBodyTimeout, or the
// connection is closed; an idle keep-alive connection is closed after
// adminIdleTimeout.
const (
	adminHeaderTimeout = 10 * time.Second
	adminBodyTimeout   = 10 * time.Second
	adminIdleTimeout   = 60 * time.Second
	// adminMaxBody bounds every admin request body (an action's own bound
	// is smaller).
	adminMaxBody = 1 << 20
)

// adminBodyTimeoutForTest lets a test shorten the body deadline.
var adminBodyTimeoutForTest time.Duration

// closeUnread makes the answer being written the connection's last and
// stops net/http from reading what is left of the request body: its read
// deadline is moved to now, so the server's discard of an unread body
// (up to 256 KiB) fails at once and the connection is closed.
func closeUnread(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// guardBody reads a request's whole body before next runs, under a read
// deadline: a client that declares a body and sends it slowly (or never)
// gets 408 and a closed connection after adminBodyTimeout instead of
// holding a handler and its connection. Requests without a body pass
// through untouched.
func guardBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		limit := adminBodyTimeout
		if adminBodyTimeoutForTest > 0 {
			limit = adminBodyTimeoutForTest
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(limit))
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, adminMaxBody))
		if err != nil {
			closeUnread(w)
			var tooBig *http.MaxBytesError
			switch {
			case errors.As(err, &tooBig):
				adminError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLargeError",
					fmt.Sprintf("request body over %d bytes", adminMaxBody))
			case errors.Is(err, os.ErrDeadlineExceeded):
				adminError(w, http.StatusRequestTimeout, "RequestTimeoutError",
					fmt.Sprintf("request body not received within %v", limit))
			default:
				adminError(w, http.StatusBadRequest, "BadRequestError", "could not read the request body")
			}
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(bytes.NewReader(data))
		next.ServeHTTP(w, r)
	})
}
