package api

import "net/http"

// CORS puts Access-Control-Allow-Origin on every response and answers every
// OPTIONS request as a CORS preflight (200, empty body), before
// authentication and routing, as vLLM's CORSMiddleware does for every
// route. The worker wraps the routes it serves beside the API (sleep mode)
// in it too.
func CORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "*")
			h.Set("Access-Control-Allow-Headers", "*")
			h.Set("Content-Length", "0")
			w.WriteHeader(http.StatusOK)
			return
		}
		next.ServeHTTP(w, r)
	})
}
