package media

import (
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
)

func TestFingerprint(t *testing.T) {
	if Fingerprint("ab") == Fingerprint("a", "b") || Fingerprint("a", "bc") == Fingerprint("ab", "c") {
		t.Fatal("part boundaries are not part of the key")
	}
	if Fingerprint("x", "y") != Fingerprint("x", "y") || Fingerprint("x") == Fingerprint("y") {
		t.Fatal("not a function of its input")
	}
}

func TestItemCache(t *testing.T) {
	// Items of no kind are charged their size, at least a byte: a budget
	// of 2 bytes holds two of them.
	c := NewItemCache(2)
	a, b, d := Fingerprint("a"), Fingerprint("b"), Fingerprint("d")
	c.Put(a, Item{Width: 1})
	c.Put(b, Item{Width: 2})
	if it, ok := c.Get(a); !ok || it.Width != 1 { // a is now the most recent
		t.Fatalf("get a: %+v %v", it, ok)
	}
	c.Put(d, Item{Width: 4}) // evicts b
	if _, ok := c.Get(b); ok {
		t.Fatal("b survived past the capacity")
	}
	if it, ok := c.Get(d); !ok || it.Width != 4 {
		t.Fatalf("get d: %+v %v", it, ok)
	}
	c.Put(d, Item{Width: 5})
	if it, _ := c.Get(d); it.Width != 5 {
		t.Fatalf("update: %+v", it)
	}
	if n, hits, misses := c.Stats(); n != 2 || hits != 3 || misses != 1 {
		t.Fatalf("stats %d %d %d", n, hits, misses)
	}
	// Concurrent use stays bounded (run with -race).
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				k := Fingerprint(fmt.Sprint(g, i%50))
				if _, ok := c.Get(k); !ok {
					c.Put(k, Item{Width: i})
				}
			}
		})
	}
	wg.Wait()
	if n, _, _ := c.Stats(); n > 2 {
		t.Fatalf("%d entries in a cache of 2", n)
	}
}

// An image is charged its processed pixel tensor (3 × bfloat16 a pixel):
// a budget of two 100×100 images keeps the two most recent; an image
// larger than the budget is never kept; a budget of 0 keeps nothing.
func TestItemCacheChargesProcessedBytes(t *testing.T) {
	img := func(side int) Item { return Item{Kind: KindImage, Width: side, Height: side} }
	if got := ProcessedBytes(img(100)); got != 60000 {
		t.Fatalf("a 100×100 image is charged %d bytes, want 60000", got)
	}
	c := NewItemCache(2 * 60000)
	a, b, d := Fingerprint("a"), Fingerprint("b"), Fingerprint("d")
	c.Put(a, img(100))
	c.Put(b, img(100))
	c.Put(d, img(100)) // evicts a
	if _, ok := c.Get(a); ok {
		t.Fatal("a survived past the byte budget")
	}
	if _, ok := c.Get(d); !ok {
		t.Fatal("d was not kept")
	}
	big := Fingerprint("big")
	c.Put(big, img(1000))
	if _, ok := c.Get(big); ok {
		t.Fatal("an item larger than the budget was kept")
	}
	off := NewItemCache(0)
	off.Put(a, img(1))
	if _, ok := off.Get(a); ok || off.Enabled() {
		t.Fatal("a cache with no budget kept an item")
	}
}

// BenchmarkRepeatedImage is the cost of an image a request repeats: the
// fingerprint of its data URL and a cache hit, against the first sight's
// decode, probe and hash (BenchmarkImageDataURL/*/all).
func BenchmarkRepeatedImage(b *testing.B) {
	for _, noisy := range []bool{false, true} {
		raw := benchPNG(b, noisy)
		url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(raw)
		c := NewItemCache(1 << 30)
		c.Put(Fingerprint(url), Item{Kind: KindImage, Width: 1024, Height: 1024})
		name := "smooth"
		if noisy {
			name = "noisy"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(url)))
			for b.Loop() {
				if _, ok := c.Get(Fingerprint(url)); !ok {
					b.Fatal("miss")
				}
			}
		})
	}
}
