package ui

import (
	"crypto/subtle"
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

//go:embed assets
var assetFS embed.FS

var pages = template.Must(template.ParseFS(assetFS, "assets/*.html"))

// keyCookie carries the API key for the browser, which cannot add an
// Authorization header to an EventSource.
const keyCookie = "mocker_ui_key"

// MaxRate is the most updates per second a stream sends.
const MaxRate = 10

// keepAliveEvery is how often an idle stream sends an SSE comment, so
// that a dead viewer is noticed even when nothing changes.
const keepAliveEvery = 15 * time.Second

// auth checks the API keys (none: open) on every UI route. A key may come
// as a Bearer token, or once as ?key= on a page, which stores it in a
// cookie and redirects to the same page without it.
type auth struct{ keys [][]byte }

func newAuth(keys []string) auth {
	a := auth{}
	for _, k := range keys {
		a.keys = append(a.keys, []byte(k))
	}
	return a
}

func (a auth) ok(key string) bool {
	for _, k := range a.keys {
		if subtle.ConstantTimeCompare([]byte(key), k) == 1 {
			return true
		}
	}
	return false
}

// wrap guards h; isPage says whether ?key= may log the browser in.
func (a auth) wrap(h http.HandlerFunc, isPage bool) http.HandlerFunc {
	if len(a.keys) == 0 {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if isPage {
			if k := r.URL.Query().Get("key"); k != "" && a.ok(k) {
				http.SetCookie(w, &http.Cookie{Name: keyCookie, Value: k, Path: "/ui", HttpOnly: true, SameSite: http.SameSiteStrictMode})
				u := *r.URL
				q := u.Query()
				q.Del("key")
				u.RawQuery = q.Encode()
				http.Redirect(w, r, u.String(), http.StatusSeeOther)
				return
			}
		}
		if bearer, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && a.ok(bearer) {
			h(w, r)
			return
		}
		if c, err := r.Cookie(keyCookie); err == nil && a.ok(c.Value) {
			h(w, r)
			return
		}
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
	}
}

// HandlerOptions configure a worker's UI handler.
type HandlerOptions struct {
	// APIKeys, when not empty, are required on every UI route (--api-key).
	APIKeys []string
}

// Handler serves one worker's UI under /ui: the engine and requests page,
// its stream, the request and block details and the embedded assets.
func Handler(h *Hub, opts HandlerOptions) http.Handler {
	a := newAuth(opts.APIKeys)
	mux := http.NewServeMux()
	mux.Handle("GET /ui/assets/", a.wrap(serveAssets, false))
	mux.HandleFunc("GET /ui", a.wrap(func(w http.ResponseWriter, r *http.Request) {
		renderPage(w, http.StatusOK, "engine.html", pageData{Title: h.Name(), Base: "/ui"})
	}, true))
	mountWorker(mux, "/ui", h, a)
	mux.HandleFunc("/ui/", a.wrap(notFoundPage, true))
	return mux
}

// mountWorker adds a worker's stream and detail endpoints under base.
func mountWorker(mux *http.ServeMux, base string, h *Hub, a auth) {
	mux.HandleFunc("GET "+base+"/stream", a.wrap(func(w http.ResponseWriter, r *http.Request) {
		stream(w, r, &h.viewers, "engine", h.encodeEngine)
	}, false))
	mux.HandleFunc("GET "+base+"/api/request", a.wrap(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		if id == "" {
			badRequest(w, "id", "query parameter id (a request id) is required")
			return
		}
		found := h.reqs.find(id)
		if len(found) == 0 {
			writeJSON(w, http.StatusNotFound, errorBody("no recent request "+strconv.Quote(id), "NotFoundError", "id", http.StatusNotFound))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"sequences": found})
	}, false))
	mux.HandleFunc("GET "+base+"/api/block", a.wrap(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		rank, err1 := strconv.Atoi(q.Get("rank"))
		block, err2 := strconv.Atoi(q.Get("block"))
		if err1 != nil || err2 != nil {
			badRequest(w, "block", "query parameters rank and block must be integers")
			return
		}
		rv := h.rankView(rank)
		if rv == nil {
			badRequest(w, "rank", "no DP rank "+strconv.Itoa(rank))
			return
		}
		d, ok := rv.block(block, h)
		if !ok {
			badRequest(w, "block", "block "+strconv.Itoa(block)+" is out of range")
			return
		}
		writeJSON(w, http.StatusOK, d)
	}, false))
}

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

func serveAssets(w http.ResponseWriter, r *http.Request) {
	sub, _ := fs.Sub(assetFS, "assets")
	http.StripPrefix("/ui/assets/", http.FileServerFS(sub)).ServeHTTP(w, r)
}

// pageData fills the page templates.
type pageData struct {
	Title string
	// Base is the URL prefix of the worker's stream and API.
	Base string
	// Fleet links back to the fleet page.
	Fleet   bool
	Message string
}

func renderPage(w http.ResponseWriter, status int, name string, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = pages.ExecuteTemplate(w, name, d)
}

func notFoundPage(w http.ResponseWriter, r *http.Request) {
	renderPage(w, http.StatusNotFound, "notfound.html", pageData{Title: "not found", Message: "No UI page at " + r.URL.Path})
}

func errorBody(msg, typ, param string, code int) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": param, "code": code}}
}

func badRequest(w http.ResponseWriter, param, msg string) {
	writeJSON(w, http.StatusBadRequest, errorBody(msg, "BadRequestError", param, http.StatusBadRequest))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Route sends /ui and /ui/... to view and every other path to rest, so a
// server can add the live view without its own router knowing of it.
func Route(rest, view http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/ui" || strings.HasPrefix(p, "/ui/") {
			view.ServeHTTP(w, r)
			return
		}
		rest.ServeHTTP(w, r)
	})
}
