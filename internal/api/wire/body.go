package wire

import (
	"bytes"
	"io"
)

// Body is a request body read completely before its handler runs (the
// pipeline's ReadBodies): a reader over the bytes that DecodeBody takes
// as they are instead of copying them again.
type Body struct {
	bytes.Reader
	b []byte
}

// NewBody returns a Body over b, which it does not copy.
func NewBody(b []byte) *Body {
	rb := &Body{b: b}
	rb.Reset(b)
	return rb
}

// Close does nothing: the connection's body was read to its end.
func (*Body) Close() error { return nil }

// take returns the bytes when none have been read yet and marks them read.
func (rb *Body) take() ([]byte, bool) {
	if rb.Len() != len(rb.b) {
		return nil, false
	}
	_, _ = rb.Seek(0, io.SeekEnd)
	return rb.b, true
}

// ReadAllSized reads r to its end like io.ReadAll, growing its buffer
// towards size bytes (a request's Content-Length; <= 0 when unknown) in a
// few large steps, so that a body of megabytes is copied a few times
// instead of at every doubling of a growing buffer. The buffer starts at
// firstRead and grows only as bytes arrive, at most fourfold at a time:
// a client that declares a large body and sends little gets no large
// allocation.
func ReadAllSized(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	// One byte more than announced: the read that returns io.EOF needs
	// room not to grow the buffer.
	b := make([]byte, 0, min(size+1, firstRead))
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			// Towards the declared size; past it (a reader longer
			// than announced), on by the same factor.
			next := 4 * int64(cap(b))
			if int64(cap(b)) < size+1 {
				next = min(next, size+1)
			}
			grown := make([]byte, len(b), next)
			copy(grown, b)
			b = grown
		}
	}
}

// firstRead is the buffer ReadAllSized starts with: a typical request
// body in one allocation.
const firstRead = 64 << 10
