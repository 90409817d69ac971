package ui

import (
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// MaxRate is the most updates per second a stream sends.
const MaxRate = 10

// keepAliveEvery is how often an idle stream sends an SSE comment, so
// that a dead viewer is noticed even when nothing changes.
const keepAliveEvery = 15 * time.Second

// streamQuery checks a stream's query: view (only want) and rate (1 to
// MaxRate updates per second, default MaxRate); anything else is an error.
func streamQuery(q url.Values, want string) (rate int, param, msg string) {
	rate = MaxRate
	for k, v := range q {
		switch k {
		case "view":
			if len(v) != 1 || v[0] != want {
				return 0, "view", "view must be " + strconv.Quote(want)
			}
		case "rate":
			n, err := strconv.Atoi(v[0])
			if len(v) != 1 || err != nil || n < 1 || n > MaxRate {
				return 0, "rate", "rate must be an integer from 1 to " + strconv.Itoa(MaxRate)
			}
			rate = n
		default:
			return 0, k, "unknown query parameter " + strconv.Quote(k)
		}
	}
	return rate, "", ""
}

// stream sends encode's output as SSE "data:" events whenever it changed,
// at most rate times per second: updates in between are coalesced into
// the next one. A write that blocks longer than the stall timeout
// ends the stream, so a stuck viewer holds at most one encoded update.
func stream(w http.ResponseWriter, r *http.Request, vs *viewers, view string, encode func() (uint64, []byte)) {
	rate, param, msg := streamQuery(r.URL.Query(), view)
	if msg != "" {
		badRequest(w, param, msg)
		return
	}
	vs.open.Add(1)
	defer vs.open.Add(-1)
	rc := http.NewResponseController(w)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	sent, lastWrite := uint64(0), time.Time{}
	first := true
	for {
		v, data := encode()
		var err error
		switch {
		case first || v != sent:
			err = writeEvent(rc, w, vs.stall, "data: ", data)
			sent, first, lastWrite = v, false, time.Now()
		case time.Since(lastWrite) >= keepAliveEvery:
			err = writeEvent(rc, w, vs.stall, ": keep-alive", nil)
			lastWrite = time.Now()
		}
		if err != nil {
			// The viewer is gone or stuck: drop it. ErrAbortHandler makes
			// net/http close the connection rather than try to finish a
			// response nobody reads.
			panic(http.ErrAbortHandler)
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

func writeEvent(rc *http.ResponseController, w http.ResponseWriter, stall time.Duration, prefix string, data []byte) error {
	if err := rc.SetWriteDeadline(time.Now().Add(stall)); err != nil {
		return err
	}
	if _, err := w.Write([]byte(prefix)); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if _, err := w.Write([]byte("\n\n")); err != nil {
		return err
	}
	return rc.Flush()
}
