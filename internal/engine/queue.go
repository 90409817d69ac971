package engine

// waitQueue is the waiting queue: a FIFO deque under fcfs, or kept sorted by
// (priority, arrival) under the priority policy, lower priority first.
type waitQueue struct {
	byPriority bool
	items      []*sequence // items[head:] are queued
	head       int
	// perAdapter counts the queued requests of each LoRA adapter id (0 =
	// base model), so the scheduler can stop looking once none it could
	// admit is left. Nil until the first adapter request.
	perAdapter map[int]int
}

// count adjusts the per-adapter count of s by delta; callers call it before
// they insert or remove s.
func (q *waitQueue) count(s *sequence, delta int) {
	id := s.req.Adapter.ID
	if q.perAdapter == nil {
		if id == 0 {
			return // base-model requests only: nothing to track yet
		}
		// The first adapter request: everything queued so far is base.
		q.perAdapter = map[int]int{0: q.Len()}
	}
	q.perAdapter[id] += delta
}

// numQueued returns how many queued requests belong to the base model or to
// one of the adapters.
func (q *waitQueue) numQueued(adapters []int) int {
	if q.perAdapter == nil {
		return q.Len()
	}
	n := q.perAdapter[0]
	for _, id := range adapters {
		n += q.perAdapter[id]
	}
	return n
}

func (q *waitQueue) Len() int { return len(q.items) - q.head }

func (q *waitQueue) Front() *sequence { return q.items[q.head] }

func (q *waitQueue) At(i int) *sequence { return q.items[q.head+i] }

func (q *waitQueue) PopFront() *sequence {
	s := q.items[q.head]
	q.count(s, -1)
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
	q.count(s, +1)
	if q.byPriority {
		q.insertSorted(s)
		return
	}
	q.items = append(q.items, s)
}

// PushPreempted re-queues a preempted request: at the front under fcfs, by
// key under priority.
func (q *waitQueue) PushPreempted(s *sequence) {
	q.count(s, +1)
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
			q.count(s, -1)
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
