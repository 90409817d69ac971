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

// BenchmarkRepeatedImage is the cost of an image a request repeats: the
// fingerprint of its data URL and a cache hit, against the first sight's
// decode, probe and hash (BenchmarkImageDataURL/*/all).
func BenchmarkRepeatedImage(b *testing.B) {
	for _, noisy := range []bool{false, true} {
		raw := benchPNG(b, noisy)
		url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(raw)
		c := NewItemCache(16)
		c.Put(Fingerprint(url), Item{Width: 1024})
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
