package kv

import (
	"cmp"
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
)

// A RadixCache is SGLang's prefix cache for one DP rank: a radix tree over
// token ids whose edges hold whole pages of PageSize tokens, with a lock
// count per node for the paths running requests use, LRU eviction of
// unlocked leaves, and the page pool the tree and the requests draw from.
//
// Every page is in exactly one of three places: free, owned by the tree
// (evictable when its node is unlocked, protected when locked) or owned by a
// request that has not handed it to the tree yet. The cache counts the first
// two; the caller accounts for the third (Allocate takes pages out of the
// free count, FreePages puts them back, Insert adopts them into the tree).
//
// With events enabled the cache records SGLang's KV events: one BlockStored
// per page when a node is created and one BlockRemoved per page when it is
// evicted, with position-aware page hashes (see RadixPageHash). A node split
// changes no page's identity and records nothing.
//
// It is deterministic and not safe for concurrent use.
type RadixCache struct {
	pageSize   int
	totalPages int
	freePages  int
	// roots holds one tree per namespace ("" is the default); requests of
	// different namespaces (cache salt, LoRA adapter) never share pages.
	roots  map[string]*RadixNode
	events bool
	rec    recorder

	evictable, protected int // tokens in unlocked / locked nodes
	clock                uint64
	nextID               uint64
	numNodes             int

	leaves  leafHeap // scratch for Evict
	scratch []byte   // scratch for page digests
}

// A RadixNode is one edge of the tree: the pages from its parent to it.
// Callers hold nodes only as lock handles returned by Match.
type RadixNode struct {
	id       uint64
	parent   *RadixNode
	children map[uint64]*RadixNode // by pageKey of the child's first page
	tokens   []uint32              // a whole number of pages; empty for the root
	// digests holds each page's full SHA-256 chain digest, only when
	// events are on; the published hash is its first 8 bytes.
	digests [][sha256.Size]byte
	lockRef int
	// namespace names a root's namespace (roots only).
	namespace string
	// lastAccess orders eviction: the least recently matched or inserted
	// leaf goes first (SGLang's LRU strategy), ties by creation order.
	lastAccess uint64
}

// NewRadixCache returns an empty tree over a pool of totalPages pages of
// pageSize tokens, all free. With events true it records KV events for
// TakeEvents. It panics on a non-positive page size or a negative pool;
// configuration validation rejects such values long before.
func NewRadixCache(totalPages, pageSize int, events bool) *RadixCache {
	if pageSize <= 0 || totalPages < 0 {
		panic(fmt.Sprintf("kv: invalid radix cache of %d pages of %d tokens", totalPages, pageSize))
	}
	c := &RadixCache{pageSize: pageSize, totalPages: totalPages, freePages: totalPages, events: events}
	c.roots = map[string]*RadixNode{}
	return c
}

// PageSize returns the tokens per page.
func (c *RadixCache) PageSize() int { return c.pageSize }

// TotalTokens returns the pool's size in tokens.
func (c *RadixCache) TotalTokens() int { return c.totalPages * c.pageSize }

// AvailableTokens returns the free pages in tokens (SGLang's available_size).
func (c *RadixCache) AvailableTokens() int { return c.freePages * c.pageSize }

// EvictableTokens returns the tokens in unlocked nodes.
func (c *RadixCache) EvictableTokens() int { return c.evictable }

// ProtectedTokens returns the tokens in locked nodes.
func (c *RadixCache) ProtectedTokens() int { return c.protected }

// NumNodes returns the number of nodes below the root.
func (c *RadixCache) NumNodes() int { return c.numNodes }

// Allocate takes pages from the free pool for a request and reports whether
// there were enough; it never evicts (call Evict first, as SGLang does).
func (c *RadixCache) Allocate(pages int) bool {
	if pages > c.freePages {
		return false
	}
	c.freePages -= pages
	return true
}

// FreePages returns a request's pages to the pool.
func (c *RadixCache) FreePages(pages int) {
	c.freePages += pages
	if c.freePages > c.totalPages {
		panic(fmt.Sprintf("kv: radix pool has %d free pages of %d", c.freePages, c.totalPages))
	}
}

// aligned cuts n down to a whole number of pages.
func (c *RadixCache) aligned(n int) int { return n / c.pageSize * c.pageSize }

// pageKey identifies a child edge by its first page. For one-token pages it
// is the token itself; for larger pages a mix of the page's tokens, checked
// against the tokens on every lookup so a collision is a miss, never a
// false hit.
func (c *RadixCache) pageKey(page []uint32) uint64 {
	if c.pageSize == 1 {
		return uint64(page[0])
	}
	h := uint64(len(page)) * 0x9e3779b97f4a7c15
	for _, t := range page {
		h ^= uint64(t)
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 31
	}
	return h
}

// commonPages returns the length, in whole pages' tokens, of the common
// prefix of a and b.
func (c *RadixCache) commonPages(a, b []uint32) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return c.aligned(i)
}

func (c *RadixCache) tick() uint64 {
	c.clock++
	return c.clock
}

// Match returns the length of the longest cached prefix of key (whole pages
// only) and the node where it ends, as SGLang's match_prefix does: every
// node on the path is marked as accessed, and a partial match inside an
// edge splits it so that the returned node ends exactly at the match. Lock
// the node with IncLock to keep the prefix resident.
func (c *RadixCache) Match(ns string, key []uint32) (int, *RadixNode) {
	key = key[:c.aligned(len(key))]
	node := c.Root(ns)
	node.lastAccess = c.tick()
	matched := 0
	for matched < len(key) {
		child := node.children[c.pageKey(key[matched:matched+c.pageSize])]
		if child == nil {
			break
		}
		child.lastAccess = c.tick()
		n := c.commonPages(child.tokens, key[matched:])
		if n == 0 {
			break // a page-key collision: a miss
		}
		if n < len(child.tokens) {
			node = c.split(child, n)
			matched += n
			break
		}
		matched += n
		node = child
	}
	return matched, node
}

// MatchLen is Match without side effects: no access marks, no split.
func (c *RadixCache) MatchLen(ns string, key []uint32) int {
	key = key[:c.aligned(len(key))]
	node, matched := c.roots[ns], 0
	if node == nil {
		return 0
	}
	for matched < len(key) {
		child := node.children[c.pageKey(key[matched:matched+c.pageSize])]
		if child == nil {
			break
		}
		n := c.commonPages(child.tokens, key[matched:])
		matched += n
		if n < len(child.tokens) {
			break
		}
		node = child
	}
	return matched
}

// split cuts child after its first n tokens (whole pages) and returns the
// new upper node, which inherits the child's lock count and access time.
func (c *RadixCache) split(child *RadixNode, n int) *RadixNode {
	upper := &RadixNode{
		id:         c.newID(),
		parent:     child.parent,
		tokens:     child.tokens[:n:n],
		lockRef:    child.lockRef,
		lastAccess: child.lastAccess,
	}
	if c.events {
		pages := n / c.pageSize
		upper.digests = child.digests[:pages:pages]
		child.digests = child.digests[pages:]
	}
	upper.children = map[uint64]*RadixNode{c.pageKey(child.tokens[n : n+c.pageSize]): child}
	child.parent.children[c.pageKey(upper.tokens[:c.pageSize])] = upper
	child.tokens = child.tokens[n:]
	child.parent = upper
	c.numNodes++
	return upper
}

func (c *RadixCache) newID() uint64 {
	c.nextID++
	return c.nextID
}

// Insert adds key (cut to whole pages) to the tree and returns how many of
// its leading tokens were already cached. The pages after that prefix are
// adopted from the caller (they become the tree's), so the caller frees its
// own copies of the already-cached range [its previous prefix, returned
// length) and stops counting the rest, as SGLang's cache_finished_req and
// cache_unfinished_req do. Nodes on the path are marked as accessed. If a
// page-key collision stops the walk, the rest of key is not cached and is
// reported as cached so that the caller frees it.
func (c *RadixCache) Insert(ns string, key []uint32) int {
	key = key[:c.aligned(len(key))]
	node := c.Root(ns)
	node.lastAccess = c.tick()
	done := 0
	for done < len(key) {
		k := c.pageKey(key[done : done+c.pageSize])
		child := node.children[k]
		if child == nil {
			c.addLeaf(node, k, key[done:])
			return done
		}
		child.lastAccess = c.tick()
		n := c.commonPages(child.tokens, key[done:])
		if n == 0 {
			return len(key) // collision: give the pages back to the caller
		}
		if n < len(child.tokens) {
			child = c.split(child, n)
		}
		done += n
		node = child
	}
	return done
}

// addLeaf creates a node under parent holding a copy of tokens.
func (c *RadixCache) addLeaf(parent *RadixNode, key uint64, tokens []uint32) {
	leaf := &RadixNode{
		id:         c.newID(),
		parent:     parent,
		tokens:     append([]uint32(nil), tokens...),
		lastAccess: c.tick(),
	}
	if parent.children == nil {
		parent.children = make(map[uint64]*RadixNode, 2)
	}
	parent.children[key] = leaf
	c.numNodes++
	c.evictable += len(tokens)
	if c.events {
		var prior *[sha256.Size]byte
		switch {
		case parent.parent != nil:
			prior = &parent.digests[len(parent.digests)-1]
		case parent.namespace != "":
			// A namespace's chain starts from a digest of its name, so
			// equal tokens in two namespaces publish different hashes.
			d := sha256.Sum256([]byte(parent.namespace))
			prior = &d
		}
		leaf.digests = radixPageDigests(leaf.digests, prior, leaf.tokens, c.pageSize, &c.scratch)
		c.recordStored(leaf, prior)
	}
}

// recordStored records one BlockStored per page of a new node, each
// chained to the page before it (the parent's last page for the first).
func (c *RadixCache) recordStored(n *RadixNode, prior *[sha256.Size]byte) {
	for i := range n.digests {
		ev := Event{
			Kind:         Stored,
			BlockHashes:  carve(&c.rec.hashes, 1, hashChunk),
			TokenIDs:     carve(&c.rec.tokens, c.pageSize, tokenChunk),
			BlockSize:    c.pageSize,
			SignedHashes: true,
		}
		ev.BlockHashes[0] = publishedHash(&n.digests[i])
		copy(ev.TokenIDs, n.tokens[i*c.pageSize:(i+1)*c.pageSize])
		if prior != nil {
			ev.ParentBlockHash, ev.HasParent = publishedHash(prior), true
		}
		prior = &n.digests[i]
		c.rec.events = append(c.rec.events, ev)
		c.rec.counts[Stored]++
	}
}

// IncLock protects the path from node to the root (SGLang's inc_lock_ref).
func (c *RadixCache) IncLock(node *RadixNode) {
	for n := node; n.parent != nil; n = n.parent {
		if n.lockRef == 0 {
			c.evictable -= len(n.tokens)
			c.protected += len(n.tokens)
		}
		n.lockRef++
	}
}

// DecLock releases a lock taken with IncLock.
func (c *RadixCache) DecLock(node *RadixNode) {
	for n := node; n.parent != nil; n = n.parent {
		if n.lockRef <= 0 {
			panic(fmt.Sprintf("kv: radix node %d unlocked twice", n.id))
		}
		n.lockRef--
		if n.lockRef == 0 {
			c.evictable += len(n.tokens)
			c.protected -= len(n.tokens)
		}
	}
}

// Root returns the root of namespace ns, creating it: the lock handle of an
// empty match (locking it is a no-op).
func (c *RadixCache) Root(ns string) *RadixNode {
	r := c.roots[ns]
	if r == nil {
		r = &RadixNode{namespace: ns}
		c.roots[ns] = r
	}
	return r
}

// Roots appends the namespace roots to dst, sorted by namespace.
func (c *RadixCache) Roots(dst []*RadixNode) []*RadixNode {
	start := len(dst)
	for _, r := range c.roots {
		dst = append(dst, r)
	}
	slices.SortFunc(dst[start:], func(a, b *RadixNode) int { return cmp.Compare(a.namespace, b.namespace) })
	return dst
}

// Evict frees at least tokens tokens of unlocked cached pages, fewer only if
// not that many are evictable, and returns how many it freed. Like SGLang's
// evict it takes whole unlocked leaves, least recently accessed first; a
// parent left childless and unlocked becomes a candidate in turn.
func (c *RadixCache) Evict(tokens int) int {
	if tokens <= 0 || c.evictable == 0 {
		return 0
	}
	c.leaves = c.leaves[:0]
	for _, r := range c.roots {
		c.collectLeaves(r)
	}
	heap.Init(&c.leaves)
	freed := 0
	for freed < tokens && len(c.leaves) > 0 {
		leaf := heap.Pop(&c.leaves).(*RadixNode)
		freed += len(leaf.tokens)
		c.deleteLeaf(leaf)
		if p := leaf.parent; p.parent != nil && p.lockRef == 0 && len(p.children) == 0 {
			heap.Push(&c.leaves, p)
		}
	}
	return freed
}

// collectLeaves appends the unlocked leaves under n.
func (c *RadixCache) collectLeaves(n *RadixNode) {
	for _, child := range n.children {
		if len(child.children) == 0 {
			if child.lockRef == 0 {
				c.leaves = append(c.leaves, child)
			}
			continue
		}
		c.collectLeaves(child)
	}
}

// deleteLeaf removes an unlocked leaf, frees its pages and records its
// BlockRemoved events.
func (c *RadixCache) deleteLeaf(leaf *RadixNode) {
	p := leaf.parent
	delete(p.children, c.pageKey(leaf.tokens[:c.pageSize]))
	if p.parent == nil && p.namespace != "" && len(p.children) == 0 {
		// An emptied namespace is forgotten, so that one-off cache salts do
		// not accumulate roots; a request still holding the old root as its
		// (no-op) lock handle is unaffected.
		delete(c.roots, p.namespace)
	}
	c.evictable -= len(leaf.tokens)
	c.freePages += len(leaf.tokens) / c.pageSize
	c.numNodes--
	for i := range leaf.digests {
		hs := carve(&c.rec.hashes, 1, hashChunk)
		hs[0] = publishedHash(&leaf.digests[i])
		c.rec.events = append(c.rec.events, Event{Kind: Removed, BlockHashes: hs, SignedHashes: true})
		c.rec.counts[Removed]++
	}
}

// Reset empties the tree if no node is locked (SGLang's flush_cache refuses
// while requests run), returns its pages to the pool and records
// AllBlocksCleared. It reports whether it did so.
func (c *RadixCache) Reset() bool {
	if c.protected != 0 {
		return false
	}
	c.freePages += c.evictable / c.pageSize
	c.evictable = 0
	c.numNodes = 0
	clear(c.roots)
	if c.events {
		c.rec.allCleared()
	}
	return true
}

// TakeEvents returns the events recorded since the previous call.
func (c *RadixCache) TakeEvents() []Event { return c.rec.take() }

// TakeEventCounts returns how many events of each kind were recorded since
// the previous call.
func (c *RadixCache) TakeEventCounts() [NumEventKinds]int { return c.rec.takeCounts() }

// leafHeap orders eviction candidates: least recently accessed first, then
// oldest node.
type leafHeap []*RadixNode

func (h leafHeap) Len() int { return len(h) }
func (h leafHeap) Less(i, j int) bool {
	if h[i].lastAccess != h[j].lastAccess {
		return h[i].lastAccess < h[j].lastAccess
	}
	return h[i].id < h[j].id
}
func (h leafHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *leafHeap) Push(x any)   { *h = append(*h, x.(*RadixNode)) }
func (h *leafHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// pageDigest is SGLang's chained page digest: SHA-256(prior page's digest ‖
// the page's token ids as little-endian uint32), where prior is nil for a
// sequence's first page; scratch is a reusable input buffer.
func pageDigest(scratch *[]byte, prior *[sha256.Size]byte, page []uint32) [sha256.Size]byte {
	buf := (*scratch)[:0]
	if prior != nil {
		buf = append(buf, prior[:]...)
	}
	for _, t := range page {
		buf = binary.LittleEndian.AppendUint32(buf, t)
	}
	*scratch = buf
	return sha256.Sum256(buf)
}

// publishedHash is the block hash SGLang publishes for a page digest: its
// first eight bytes, big-endian (hash_str_to_int64 of the hex digest, sent
// as a signed int64; this is the same 64 bits).
func publishedHash(d *[sha256.Size]byte) uint64 { return binary.BigEndian.Uint64(d[:8]) }

// RadixPageHashes returns the published hashes of the whole pages of
// tokens, as a sequence starting at the root: the reference a consumer of
// the cache's events can recompute from token ids.
func RadixPageHashes(tokens []uint32, pageSize int) []uint64 {
	var out []uint64
	var scratch []byte
	for _, d := range radixPageDigests(nil, nil, tokens, pageSize, &scratch) {
		out = append(out, publishedHash(&d))
	}
	return out
}

// radixPageDigests appends the digests of tokens' whole pages, chained
// after prior (nil: a sequence's first page).
func radixPageDigests(dst [][sha256.Size]byte, prior *[sha256.Size]byte, tokens []uint32, pageSize int, scratch *[]byte) [][sha256.Size]byte {
	for i := 0; i+pageSize <= len(tokens); i += pageSize {
		d := pageDigest(scratch, prior, tokens[i:i+pageSize])
		dst = append(dst, d)
		prior = &dst[len(dst)-1]
	}
	return dst
}

// Parent returns the node's parent (nil for the root).
func (n *RadixNode) Parent() *RadixNode { return n.parent }

// Len returns the tokens on the node's edge.
func (n *RadixNode) Len() int { return len(n.tokens) }

// Children appends n's children to dst in creation order and returns it,
// so that walks over the tree are deterministic.
func (n *RadixNode) Children(dst []*RadixNode) []*RadixNode {
	start := len(dst)
	for _, c := range n.children {
		dst = append(dst, c)
	}
	slices.SortFunc(dst[start:], func(a, b *RadixNode) int { return cmp.Compare(a.id, b.id) })
	return dst
}

// ResidentHashes returns the published hash of every cached page, sorted:
// the set a consumer replaying the cache's Stored and Removed events
// should hold. It walks the whole tree and is meant for tests and checks.
func (c *RadixCache) ResidentHashes() []uint64 {
	var out []uint64
	var walk func(n *RadixNode)
	walk = func(n *RadixNode) {
		for i := range n.digests {
			out = append(out, publishedHash(&n.digests[i]))
		}
		for _, child := range n.children {
			walk(child)
		}
	}
	for _, r := range c.roots {
		walk(r)
	}
	slices.Sort(out)
	return out
}
