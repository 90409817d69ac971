package replay

import (
	"container/heap"
	"time"
)

// timedItem is an event due at a virtual instant; order breaks ties
// between events due at the same instant, so the queue is deterministic.
type timedItem[T any] struct {
	at    time.Duration
	order int
	value T
}

// eventQueue is a min-heap of timed items: earliest first, then by order.
type eventQueue[T any] struct{ items []timedItem[T] }

func (q *eventQueue[T]) Len() int { return len(q.items) }
func (q *eventQueue[T]) Less(i, j int) bool {
	a, b := &q.items[i], &q.items[j]
	if a.at != b.at {
		return a.at < b.at
	}
	return a.order < b.order
}
func (q *eventQueue[T]) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *eventQueue[T]) Push(x any)    { q.items = append(q.items, x.(timedItem[T])) }
func (q *eventQueue[T]) Pop() any {
	last := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return last
}

// push adds value due at at.
func (q *eventQueue[T]) push(at time.Duration, order int, value T) {
	heap.Push(q, timedItem[T]{at: at, order: order, value: value})
}

// peek returns the earliest due time; ok is false when the queue is empty.
func (q *eventQueue[T]) peek() (at time.Duration, ok bool) {
	if len(q.items) == 0 {
		return 0, false
	}
	return q.items[0].at, true
}

// pop removes and returns the earliest item.
func (q *eventQueue[T]) pop() timedItem[T] { return heap.Pop(q).(timedItem[T]) }
