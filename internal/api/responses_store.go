package api

import (
	"container/list"
	"net/http"
	"sync"

	"github.com/go-chi/chi/v5"
	"github.com/mocker-server/mocker-server/internal/httperr"
)

// responseStoreSize bounds the in-memory store of responses: the oldest
// response is forgotten when a new one would exceed it. (vLLM keeps every
// stored response forever when VLLM_ENABLE_RESPONSES_API_STORE is set and
// stores nothing otherwise.)
const responseStoreSize = 1024

// storedResponse is what previous_response_id and GET /v1/responses/{id}
// need of a finished response.
type storedResponse struct {
	body         []byte          // the response object as answered
	conversation []chatMessageIn // the chat messages it was generated from
	output       []chatMessageIn // its output as assistant messages
}

// responseStore is a bounded FIFO map of stored responses, safe for
// concurrent use.
type responseStore struct {
	mu    sync.Mutex
	limit int
	byID  map[string]*list.Element
	order *list.List // of string ids, oldest first
	items map[string]*storedResponse
}

func newResponseStore(limit int) *responseStore {
	return &responseStore{limit: limit, byID: map[string]*list.Element{}, order: list.New(),
		items: map[string]*storedResponse{}}
}

func (rs *responseStore) get(id string) *storedResponse {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.items[id]
}

func (rs *responseStore) put(id string, r *storedResponse) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if el, ok := rs.byID[id]; ok {
		rs.order.Remove(el)
	}
	rs.byID[id] = rs.order.PushBack(id)
	rs.items[id] = r
	for rs.order.Len() > rs.limit {
		old := rs.order.Remove(rs.order.Front()).(string)
		delete(rs.byID, old)
		delete(rs.items, old)
	}
}

// handleRetrieveResponse serves GET /v1/responses/{id}: a stored response
// as it was answered.
func handleRetrieveResponse(store *responseStore) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		if sr := store.get(id); sr != nil {
			httperr.Write(w, http.StatusOK, sr.body)
			return
		}
		writeError(w, errResponseNotFound(id))
	})
}

// handleCancelResponse serves POST /v1/responses/{id}/cancel as vLLM does
// for responses that did not run in the background (the only kind the mock
// serves): a stored response cannot be cancelled (400), an unknown one is a
// 404.
func handleCancelResponse(store *responseStore) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		if store.get(id) == nil {
			writeError(w, errResponseNotFound(id))
			return
		}
		writeError(w, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: "Cannot cancel a synchronous response.", Param: "response_id"})
	})
}
