package ui

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/mocker-server/mocker-server/internal/httperr"
)

// keyCookie carries the API key for the browser, which cannot add an
// Authorization header to an EventSource.
const keyCookie = "mocker_ui_key"

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
		httperr.Write(w, http.StatusUnauthorized, append(httperr.Flat("Unauthorized"), '\n')) // json.Encoder's newline, as before
	}
}
