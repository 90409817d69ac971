package wire

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// ReadAllSized returns exactly the bytes of the reader whatever the
// declared size (exact, short, long, unknown), read in small pieces.
func TestReadAllSizedReadsEverything(t *testing.T) {
	for _, n := range []int{0, 1, firstRead - 1, firstRead, firstRead + 1, 5*firstRead + 7} {
		data := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		for _, declared := range []int64{-1, 0, int64(n), int64(n) / 2, int64(n) * 3} {
			got, err := ReadAllSized(iotest.HalfReader(bytes.NewReader(data)), declared)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("n=%d declared=%d: %d bytes, %v", n, declared, len(got), err)
			}
		}
	}
}

// A client that declares 32 MB and sends 10 bytes gets a buffer of the
// first read's size, not one of 32 MB; the buffer grows with what arrives.
func TestReadAllSizedAllocatesWhatArrives(t *testing.T) {
	got, err := ReadAllSized(bytes.NewReader([]byte("0123456789")), 32<<20)
	if err != nil || string(got) != "0123456789" {
		t.Fatalf("%q, %v", got, err)
	}
	if cap(got) > firstRead {
		t.Errorf("declared 32 MB, sent 10 bytes: buffer of %d bytes", cap(got))
	}
	body := make([]byte, 3*firstRead)
	got, _ = ReadAllSized(bytes.NewReader(body), 32<<20)
	if len(got) != len(body) || cap(got) > 16*firstRead {
		t.Errorf("sent %d bytes of a declared 32 MB: len %d, buffer %d", len(body), len(got), cap(got))
	}
}

// A reader's error is returned with what was read before it.
func TestReadAllSizedReturnsTheError(t *testing.T) {
	r := io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(io.ErrUnexpectedEOF))
	got, err := ReadAllSized(r, 100)
	if err != io.ErrUnexpectedEOF || string(got) != "abc" {
		t.Errorf("%q, %v", got, err)
	}
}
