package media

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unsafe"
)

// ParseDataURL decodes an RFC 2397 data URL ("data:image/png;base64,…")
// into its media type and payload, as vLLM's MediaConnector reads one:
// the last parameter must be exactly "base64" (vLLM: "Only base64 data URLs
// are supported for now", here ErrUnsupported), and the payload is decoded
// as pybase64.b64decode(validate=True) decodes it — the standard alphabet,
// correct padding, no whitespace (ErrCorrupt otherwise). The media type is
// the part before any other parameter, lowercased ("" when omitted).
//
// limit bounds the payload: the decoded length is computed from the
// encoded length before anything is allocated, so a 100 MB data URL costs
// no allocation when limit is 20 MB (ErrTooLarge). A limit <= 0 means no
// limit. A string that is not a data: URL is ErrNotDataURL.
func ParseDataURL(s string, limit int) (mime string, data []byte, err error) {
	return AppendDataURL(nil, s, limit)
}

// AppendDataURL is ParseDataURL decoding the payload into dst's spare
// capacity when it fits (data then aliases dst[len(dst):]), so that a
// caller done with the bytes once they are probed and hashed can reuse
// one buffer for item after item.
func AppendDataURL(dst []byte, s string, limit int) (mime string, data []byte, err error) {
	if len(s) < 5 || !strings.EqualFold(s[:5], "data:") {
		return "", nil, ErrNotDataURL
	}
	spec, payload, ok := strings.Cut(s[5:], ",")
	if !ok {
		return "", nil, fmt.Errorf("%w: data URL %.32q has no ',' separator", ErrCorrupt, s)
	}
	i := strings.LastIndexByte(spec, ';')
	if i < 0 || spec[i+1:] != "base64" {
		return "", nil, fmt.Errorf("%w: only base64 data URLs are supported", ErrUnsupported)
	}
	mime, _, _ = strings.Cut(spec[:i], ";")
	mime = strings.ToLower(strings.TrimSpace(mime))
	data, err = decodeBase64(dst, payload, limit)
	if err != nil {
		return "", nil, err
	}
	return mime, data, nil
}

// AppendBase64 decodes a bare base64 payload (input_audio's data) as
// AppendDataURL decodes a data URL's, with the same checks and errors.
func AppendBase64(dst []byte, payload string, limit int) ([]byte, error) {
	return decodeBase64(dst, payload, limit)
}

// decodeBase64 decodes padded standard base64, checking the decoded size
// against limit before allocating, into dst's spare capacity when it fits.
func decodeBase64(dst []byte, payload string, limit int) ([]byte, error) {
	n := len(payload)
	if n%4 != 0 {
		return nil, fmt.Errorf("%w: base64: incorrect padding (%d characters)", ErrCorrupt, n)
	}
	enc := base64.StdEncoding
	if limit > 0 && enc.DecodedLen(n)-2 > limit {
		return nil, fmt.Errorf("%w: about %d bytes, limit %d", ErrTooLarge, enc.DecodedLen(n), limit)
	}
	buf := dst[len(dst):]
	if cap(buf) < enc.DecodedLen(n) {
		buf = make([]byte, enc.DecodedLen(n))
	}
	buf = buf[:enc.DecodedLen(n)]
	// Decode only reads its source: viewing the string's bytes saves a copy
	// as large as the payload.
	m, err := enc.Decode(buf, unsafe.Slice(unsafe.StringData(payload), n))
	if err != nil {
		return nil, fmt.Errorf("%w: base64: %v", ErrCorrupt, err)
	}
	// Go's decoder skips CR and LF, which Python's validating decoder
	// refuses. Skipped characters make the output shorter than the
	// payload's length says, so the length tells, without another scan,
	// whether there were any.
	if want := n/4*3 - padding(payload); m != want {
		if i := indexCRLF(payload); i >= 0 {
			return nil, fmt.Errorf("%w: base64: non-alphabet character at %d", ErrCorrupt, i)
		}
		return nil, fmt.Errorf("%w: base64: %d bytes decoded from %d characters", ErrCorrupt, m, n)
	}
	if limit > 0 && m > limit {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, m, limit)
	}
	return buf[:m], nil
}

// padding is the number of '=' that end a base64 payload (0, 1 or 2).
func padding(s string) int {
	p := 0
	for i := len(s) - 1; i >= 0 && i >= len(s)-2 && s[i] == '='; i-- {
		p++
	}
	return p
}

// indexCRLF is the index of the first CR or LF in s, or -1.
func indexCRLF(s string) int {
	i := strings.IndexByte(s, '\r')
	if j := strings.IndexByte(s, '\n'); j >= 0 && (i < 0 || j < i) {
		return j
	}
	return i
}
