package ui

import (
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mocker-server/mocker-server/internal/httperr"
)

//go:embed assets
var assetFS embed.FS

var pages = template.Must(template.ParseFS(assetFS, "assets/*.html"))

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
		_, snap := h.encodeEngine()
		renderPage(w, http.StatusOK, "engine.html", pageData{Title: h.Name(), Base: "/ui", Snapshot: scriptJSON(snap)})
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
			writeError(w, http.StatusNotFound, "NotFoundError", "id", "no recent request "+strconv.Quote(id))
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
	// Snapshot is the page's current update, embedded so that the first
	// paint does not wait for the stream to connect (under load that can
	// take seconds).
	Snapshot template.JS
}

// scriptJSON makes JSON safe inside a script element: "</" becomes "<\/",
// which JSON reads as the same text.
func scriptJSON(b []byte) template.JS {
	return template.JS(strings.ReplaceAll(string(b), "</", `<\/`))
}

func renderPage(w http.ResponseWriter, status int, name string, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = pages.ExecuteTemplate(w, name, d)
}

func notFoundPage(w http.ResponseWriter, r *http.Request) {
	renderPage(w, http.StatusNotFound, "notfound.html", pageData{Title: "not found", Message: "No UI page at " + r.URL.Path})
}

func badRequest(w http.ResponseWriter, param, msg string) {
	writeError(w, http.StatusBadRequest, "BadRequestError", param, msg)
}

// writeError answers with vLLM's nested error shape. The newline is
// json.Encoder's, which wrote the view's answers first.
func writeError(w http.ResponseWriter, status int, typ, param, msg string) {
	httperr.Write(w, status, append(httperr.Nested(status, typ, msg, param), '\n'))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Route sends /ui and /ui/... to view and every other path to rest, so a
// server can add the live view without its own router knowing of it.
//
// The view takes no request body: a /ui request that declares one is
// answered 400 at once and its connection closed, before any of the body
// is read. (net/http would otherwise read up to 256 KiB of an unread body
// after the handler, so a client sending it slowly would hold the
// connection as long as it liked.)
func Route(rest, view http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/ui" || strings.HasPrefix(p, "/ui/") {
			if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
				w.Header().Set("Connection", "close")
				_ = http.NewResponseController(w).SetReadDeadline(time.Now())
				badRequest(w, "", "the live view takes no request body")
				return
			}
			view.ServeHTTP(w, r)
			return
		}
		rest.ServeHTTP(w, r)
	})
}
