package engine

// waitQueue is the waiting queue: a FIFO deque under fcfs, or kept sorted by
// (priority, arrival) under the priority policy, lower priority first.
//
// A cancelled request is removed lazily (Remove marks it, the next access by
// position compacts the queue once), so a storm of K cancellations in a
// queue of N costs O(N + K) instead of O(N·K): a disconnect of a request with
// 2,000 prompts × n=128 cancels 256,000 queued sequences in one mailbox batch.
type waitQueue struct {
	byPriority bool
	items      []*sequence // items[head:] are queued, or removed but not yet compacted
	head       int
	dead       int // entries of items[head:] removed by Remove and not yet compacted
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

func (q *waitQueue) Len() int { return len(q.items) - q.head - q.dead }

func (q *waitQueue) Front() *sequence { q.compact(); return q.items[q.head] }

func (q *waitQueue) At(i int) *sequence { q.compact(); return q.items[q.head+i] }

// compact drops the entries Remove marked, keeping the order of the rest.
func (q *waitQueue) compact() {
	if q.dead == 0 {
		return
	}
	kept := q.items[:0]
	for _, s := range q.items[q.head:] {
		if s.queueDead {
			s.queueDead = false
			continue
		}
		kept = append(kept, s)
	}
	clear(q.items[len(kept):])
	q.items = kept
	q.head = 0
	q.dead = 0
}

func (q *waitQueue) PopFront() *sequence {
	q.compact()
	s := q.items[q.head]
	q.count(s, -1)
	s.inQueue = false
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
	q.compact()
	if i == 0 {
		return q.PopFront()
	}
	s := q.items[q.head+i]
	q.count(s, -1)
	s.inQueue = false
	copy(q.items[q.head+i:], q.items[q.head+i+1:])
	q.items[len(q.items)-1] = nil
	q.items = q.items[:len(q.items)-1]
	return s
}

// PushBack enqueues a new request.
func (q *waitQueue) PushBack(s *sequence) {
	if s.queueDead {
		q.compact() // s is still in items from an earlier Remove
	}
	q.count(s, +1)
	s.inQueue = true
	if q.byPriority {
		q.insertSorted(s)
		return
	}
	q.items = append(q.items, s)
}

// PushPreempted re-queues a preempted request: at the front under fcfs, by
// key under priority.
func (q *waitQueue) PushPreempted(s *sequence) {
	q.compact()
	q.count(s, +1)
	s.inQueue = true
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

// Remove deletes s from the queue in O(1); it reports whether s was queued.
// The entry is only marked; the next positional access compacts.
func (q *waitQueue) Remove(s *sequence) bool {
	if !s.inQueue {
		return false
	}
	q.count(s, -1)
	s.inQueue = false
	if q.items[q.head] == s {
		q.items[q.head] = nil
		q.head++
		if q.head == len(q.items) {
			q.items = q.items[:0]
			q.head = 0
		}
		return true
	}
	s.queueDead = true
	q.dead++
	return true
}

// less orders by priority ascending, then arrival ascending.
func less(a, b *sequence) bool {
	if a.req.Priority != b.req.Priority {
		return a.req.Priority < b.req.Priority
	}
	return a.arrival.Before(b.arrival)
}

func (q *waitQueue) insertSorted(s *sequence) {
	q.compact()
	i := len(q.items)
	for i > q.head && less(s, q.items[i-1]) {
		i--
	}
	q.items = append(q.items, nil)
	copy(q.items[i+1:], q.items[i:])
	q.items[i] = s
}
