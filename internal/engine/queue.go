package engine

// waitQueue is the waiting queue: a FIFO deque under fcfs, or kept sorted by
// (priority, arrival) under the priority policy, lower priority first.
type waitQueue struct {
	byPriority bool
	items      []*sequence // items[head:] are queued
	head       int
}

func (q *waitQueue) Len() int { return len(q.items) - q.head }

func (q *waitQueue) Front() *sequence { return q.items[q.head] }

func (q *waitQueue) At(i int) *sequence { return q.items[q.head+i] }

func (q *waitQueue) PopFront() *sequence {
	s := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items = q.items[:0]
		q.head = 0
	}
	return s
}

// RemoveAt removes and returns the i-th queued request (i = 0 is the front).
func (q *waitQueue) RemoveAt(i int) *sequence {
	if i == 0 {
		return q.PopFront()
	}
	s := q.items[q.head+i]
	q.Remove(s)
	return s
}

// PushBack enqueues a new request.
func (q *waitQueue) PushBack(s *sequence) {
	if q.byPriority {
		q.insertSorted(s)
		return
	}
	q.items = append(q.items, s)
}

// PushPreempted re-queues a preempted request: at the front under fcfs, by
// key under priority.
func (q *waitQueue) PushPreempted(s *sequence) {
	if q.byPriority {
		q.insertSorted(s)
		return
	}
	if q.head > 0 {
		q.head--
		q.items[q.head] = s
		return
	}
	q.items = append(q.items, nil)
	copy(q.items[1:], q.items)
	q.items[0] = s
}

// Remove deletes s from the queue; it reports whether s was queued.
func (q *waitQueue) Remove(s *sequence) bool {
	for i := q.head; i < len(q.items); i++ {
		if q.items[i] == s {
			copy(q.items[i:], q.items[i+1:])
			q.items[len(q.items)-1] = nil
			q.items = q.items[:len(q.items)-1]
			if q.head == len(q.items) {
				q.items = q.items[:0]
				q.head = 0
			}
			return true
		}
	}
	return false
}

// less orders by priority ascending, then arrival ascending.
func less(a, b *sequence) bool {
	if a.req.Priority != b.req.Priority {
		return a.req.Priority < b.req.Priority
	}
	return a.arrival.Before(b.arrival)
}

func (q *waitQueue) insertSorted(s *sequence) {
	i := len(q.items)
	for i > q.head && less(s, q.items[i-1]) {
		i--
	}
	q.items = append(q.items, nil)
	copy(q.items[i+1:], q.items[i:])
	q.items[i] = s
}
