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
	size         int64                 // footprint, set by Put
}

// responseStore is a FIFO map of stored responses bounded by count and
// by bytes, safe for concurrent use. The oldest responses are forgotten
// first; a response larger than the whole byte budget is not kept.
type responseStore struct {
	mu       sync.Mutex
	limit    int
	maxBytes int64 // <= 0: no byte bound
	bytes    int64
	byID     map[string]*list.Element
	order    *list.List // of string ids, oldest first
	items    map[string]*StoredResponse
}

// NewResponseStore returns a store of at most limit responses taking at
// most maxBytes (--max-responses-store-bytes; <= 0: no byte bound).
func NewResponseStore(limit int, maxBytes int64) *responseStore {
	return &responseStore{limit: limit, maxBytes: maxBytes, byID: map[string]*list.Element{},
		order: list.New(), items: map[string]*StoredResponse{}}
}

// Bytes is what the stored responses take, as the byte budget counts it.
func (rs *responseStore) Bytes() int64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.bytes
}

// Len is the number of stored responses.
func (rs *responseStore) Len() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.items)
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
		rs.remove(el)
	}
	r.size = r.footprint()
	rs.byID[id] = rs.order.PushBack(id)
	rs.items[id] = r
	rs.bytes += r.size
	for rs.order.Len() > rs.limit || (rs.maxBytes > 0 && rs.bytes > rs.maxBytes) {
		rs.remove(rs.order.Front())
	}
}

// remove forgets the response at el.
func (rs *responseStore) remove(el *list.Element) {
	id := rs.order.Remove(el).(string)
	rs.bytes -= rs.items[id].size
	delete(rs.byID, id)
	delete(rs.items, id)
}

// storedOverhead approximates a stored response's fixed cost (map entries,
// list element, slice and string headers) so that many tiny responses are
// counted too.
const storedOverhead = 256

// footprint approximates the bytes r holds: its body and the text of its
// messages. Messages shared with the response it continued are counted
// again; the budget errs on the safe side.
func (r *StoredResponse) footprint() int64 {
	n := int64(storedOverhead + len(r.Body))
	for _, msgs := range [][]input.ChatMessageIn{r.conversation, r.output} {
		for _, m := range msgs {
			n += int64(64 + len(m.Role) + len(m.Content))
			if m.ToolCallID != nil {
				n += int64(len(*m.ToolCallID))
			}
			for _, c := range m.ToolCalls {
				n += int64(64 + len(c.ID) + len(c.Type) + len(c.Function.Name) + len(c.Function.Arguments))
			}
		}
	}
	return n
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
