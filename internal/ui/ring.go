package ui

// ring is a fixed-capacity FIFO that overwrites its oldest element.
type ring[T any] struct {
	items []T
	next  int // where the next element goes
	full  bool
}

func newRing[T any](capacity int) ring[T] { return ring[T]{items: make([]T, capacity)} }

// push appends v and returns the element it overwrote (zero when none).
func (r *ring[T]) push(v T) (old T) {
	old = r.items[r.next]
	r.items[r.next] = v
	r.next++
	if r.next == len(r.items) {
		r.next, r.full = 0, true
	}
	return old
}

// len returns the number of elements held.
func (r *ring[T]) len() int {
	if r.full {
		return len(r.items)
	}
	return r.next
}

// each calls f on every element, oldest first.
func (r *ring[T]) each(f func(T)) {
	if r.full {
		for _, v := range r.items[r.next:] {
			f(v)
		}
	}
	for _, v := range r.items[:r.next] {
		f(v)
	}
}
