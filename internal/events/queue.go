package events

import "sync"

// boundedQueue is the hand-off between an engine goroutine (push, never
// blocks) and a publisher goroutine (take). It behaves like a buffered
// channel of capacity limit used with a non-blocking send, except that its
// storage grows on demand: a channel would allocate max_queue_size slots
// (100,000 by default) up front for every DP rank, although the queue is
// normally almost empty. The consumer takes everything queued at once.
type boundedQueue[T any] struct {
	mu    sync.Mutex
	items []T
	limit int
	// wake has a value whenever items may be queued.
	wake chan struct{}
}

func newBoundedQueue[T any](limit int) *boundedQueue[T] {
	return &boundedQueue[T]{limit: max(limit, 1), wake: make(chan struct{}, 1)}
}

// push queues v, or reports false when limit items are already queued.
func (q *boundedQueue[T]) push(v T) bool {
	q.mu.Lock()
	if len(q.items) >= q.limit {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, v)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// take returns everything queued, in order. buf (the slice the previous
// take returned, or nil) is cleared and recycled as the next queue storage,
// so a steady state allocates nothing.
func (q *boundedQueue[T]) take(buf []T) []T {
	clear(buf)
	q.mu.Lock()
	items := q.items
	q.items = buf[:0]
	q.mu.Unlock()
	return items
}

// len returns the number of queued items.
func (q *boundedQueue[T]) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
