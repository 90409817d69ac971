package kv

// noBlock terminates the intrusive lists and marks an unlinked block.
const noBlock BlockID = -1

// freeList is the pool's free queue: an intrusive doubly
// linked list threaded through per-block prev/next arrays, so that every
// operation is O(1) and none allocates. The head is the next block to be
// reused; released blocks join at the tail, which makes eviction LRU.
type freeList struct {
	prev, next []BlockID
	head, tail BlockID
	n          int
}

// reset links all n blocks in id order, the state of a fresh or reset pool.
func (l *freeList) reset(n int) {
	if len(l.prev) != n {
		l.prev = make([]BlockID, n)
		l.next = make([]BlockID, n)
	}
	for i := range n {
		l.prev[i] = BlockID(i) - 1
		l.next[i] = BlockID(i) + 1
	}
	l.head, l.tail = noBlock, noBlock
	if n > 0 {
		l.next[n-1] = noBlock
		l.head, l.tail = 0, BlockID(n-1)
	}
	l.n = n
}

// pushBack appends b, which must not be in the list, at the tail.
func (l *freeList) pushBack(b BlockID) {
	l.prev[b] = l.tail
	l.next[b] = noBlock
	if l.tail == noBlock {
		l.head = b
	} else {
		l.next[l.tail] = b
	}
	l.tail = b
	l.n++
}

// popFront unlinks and returns the head; the list must not be empty.
func (l *freeList) popFront() BlockID {
	b := l.head
	l.remove(b)
	return b
}

// remove unlinks b, which must be in the list.
func (l *freeList) remove(b BlockID) {
	p, n := l.prev[b], l.next[b]
	if p == noBlock {
		l.head = n
	} else {
		l.next[p] = n
	}
	if n == noBlock {
		l.tail = p
	} else {
		l.prev[n] = p
	}
	l.prev[b], l.next[b] = noBlock, noBlock
	l.n--
}
