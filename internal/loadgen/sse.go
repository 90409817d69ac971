package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// EventKind classifies one SSE line of an OpenAI-compatible stream.
type EventKind uint8

const (
	// EvNone is a blank line, a comment or a non-data field.
	EvNone EventKind = iota
	// EvToken is a content chunk: counted as one token.
	EvToken
	// EvRole is the chat role chunk (no token).
	EvRole
	// EvUsage is the usage chunk ("choices":[]).
	EvUsage
	// EvDone is `data: [DONE]`.
	EvDone
	// EvError is a mid-stream error event (`data: {"error":…}`).
	EvError
)

var (
	dataPrefix   = []byte("data:")
	doneTok      = []byte("[DONE]")
	errorPrefix  = []byte(`{"error"`)
	emptyChoices = []byte(`"choices":[]`)
	roleDelta    = []byte(`"delta":{"role"`)
	keyComplTok  = []byte(`"completion_tokens":`)
	keyPromptTok = []byte(`"prompt_tokens":`)
)

// Classify returns the kind of one SSE line (with or without its line
// ending) and its data payload. It never decodes JSON: it looks only at a
// few fixed byte patterns, which is what keeps a client able to follow
// thousands of streams from one core. Any data chunk that is not the role
// chunk, the usage chunk, an error or [DONE] counts as a token.
func Classify(line []byte) (EventKind, []byte) {
	line = trimEOL(line)
	if !bytes.HasPrefix(line, dataPrefix) {
		return EvNone, nil
	}
	p := line[len(dataPrefix):]
	if len(p) > 0 && p[0] == ' ' {
		p = p[1:]
	}
	switch {
	case bytes.Equal(p, doneTok):
		return EvDone, p
	case bytes.HasPrefix(p, errorPrefix):
		return EvError, p
	case bytes.Contains(p, emptyChoices):
		return EvUsage, p
	case bytes.Contains(p, roleDelta):
		return EvRole, p
	}
	return EvToken, p
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// ParseUsage extracts prompt_tokens and completion_tokens from a usage
// payload without a JSON decoder; -1 marks a missing field.
func ParseUsage(p []byte) (prompt, completion int) {
	return scanInt(p, keyPromptTok), scanInt(p, keyComplTok)
}

// scanInt returns the non-negative integer following key in p, or -1.
func scanInt(p, key []byte) int {
	i := bytes.Index(p, key)
	if i < 0 {
		return -1
	}
	p = p[i+len(key):]
	for len(p) > 0 && p[0] == ' ' {
		p = p[1:]
	}
	n, digits := 0, 0
	for _, c := range p {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
		digits++
	}
	if digits == 0 {
		return -1
	}
	return n
}

// chunkedReader decodes an HTTP/1.1 chunked body from a bufio.Reader. The
// CRLF after a chunk's data is consumed lazily, on the next Read, so data
// is handed on as soon as it arrives.
type chunkedReader struct {
	r        *bufio.Reader
	n        int64 // bytes left in the current chunk
	needCRLF bool
	eof      bool
}

var errBadChunk = errors.New("malformed chunked encoding")

func (c *chunkedReader) reset(r *bufio.Reader) { *c = chunkedReader{r: r} }

func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.eof {
		return 0, io.EOF
	}
	for c.n == 0 {
		if c.needCRLF {
			if err := c.crlf(); err != nil {
				return 0, err
			}
			c.needCRLF = false
		}
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, unexpected(err)
		}
		size, ok := parseHex(trimEOL(line))
		if !ok {
			return 0, errBadChunk
		}
		if size == 0 {
			// Trailers until an empty line.
			for {
				line, err := c.r.ReadSlice('\n')
				if err != nil {
					return 0, unexpected(err)
				}
				if len(trimEOL(line)) == 0 {
					break
				}
			}
			c.eof = true
			return 0, io.EOF
		}
		c.n = size
		c.needCRLF = true
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (c *chunkedReader) crlf() error {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return unexpected(err)
	}
	if len(trimEOL(line)) != 0 {
		return errBadChunk
	}
	return nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseHex parses a chunk-size line (extensions after ';' ignored).
func parseHex(b []byte) (int64, bool) {
	if i := bytes.IndexByte(b, ';'); i >= 0 {
		b = b[:i]
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | int64(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | int64(c-'a'+10)
		case c >= 'A' && c <= 'F':
			n = n<<4 | int64(c-'A'+10)
		default:
			return 0, false
		}
	}
	return n, true
}

// readLine returns the next line (with its '\n') from r; lines longer than
// r's buffer are assembled in *scratch.
func readLine(r *bufio.Reader, scratch *[]byte) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, err
	}
	s := append((*scratch)[:0], line...)
	for {
		line, err = r.ReadSlice('\n')
		s = append(s, line...)
		if err != bufio.ErrBufferFull {
			*scratch = s
			return s, err
		}
	}
}
