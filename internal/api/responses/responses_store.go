package responses

import (
	"container/list"
	"net/http"
	"sync"

	"github.com/go-chi/chi/v5"
	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/httperr"
)

// ResponseStoreSize bounds the in-memory store of responses: the oldest
// response is forgotten when a new one would exceed it. (vLLM keeps every
// stored response forever when VLLM_ENABLE_RESPONSES_API_STORE is set and
// stores nothing otherwise.)
const ResponseStoreSize = 1024

// StoredResponse is what previous_response_id and GET /v1/responses/{id}
// need of a finished response.
type StoredResponse struct {
	Body         []byte                // the response object as answered
	conversation []input.ChatMessageIn // the chat messages it was generated from
	output       []input.ChatMessageIn // its output as assistant messages
}

// responseStore is a bounded FIFO map of stored responses, safe for
// concurrent use.
type responseStore struct {
	mu    sync.Mutex
	limit int
	byID  map[string]*list.Element
	order *list.List // of string ids, oldest first
	items map[string]*StoredResponse
}

func NewResponseStore(limit int) *responseStore {
	return &responseStore{limit: limit, byID: map[string]*list.Element{}, order: list.New(),
		items: map[string]*StoredResponse{}}
}

func (rs *responseStore) Get(id string) *StoredResponse {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.items[id]
}

func (rs *responseStore) Put(id string, r *StoredResponse) {
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

// HandleRetrieveResponse serves GET /v1/responses/{id}: a stored response
// as it was answered.
func HandleRetrieveResponse(store *responseStore) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		if sr := store.Get(id); sr != nil {
			httperr.Write(w, http.StatusOK, sr.Body)
			return
		}
		wire.WriteError(w, errResponseNotFound(id))
	})
}

// HandleCancelResponse serves POST /v1/responses/{id}/cancel as vLLM does
// for responses that did not run in the background (the only kind the mock
// serves): a stored response cannot be cancelled (400), an unknown one is a
// 404.
func HandleCancelResponse(store *responseStore) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		if store.Get(id) == nil {
			wire.WriteError(w, errResponseNotFound(id))
			return
		}
		wire.WriteError(w, &wire.APIError{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: "Cannot cancel a synchronous response.", Param: "response_id"})
	})
}
