package media

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"unsafe"
)

// ParseDataURL decodes an RFC 2397 data URL ("data:image/png;base64,…")
// into its media type and payload. limit bounds the payload: the decoded
// length is computed from the encoded length before anything is allocated,
// so a 100 MB data URL costs no allocation when limit is 20 MB. A limit <= 0
// means no limit. Errors wrap ErrNotDataURL, ErrCorrupt (bad base64, bad
// percent-encoding) or ErrTooLarge.
//
// The media type is lowercased with its parameters removed; an omitted type
// is "text/plain", as RFC 2397 says.
func ParseDataURL(s string, limit int) (mime string, data []byte, err error) {
	if len(s) < 5 || !strings.EqualFold(s[:5], "data:") {
		return "", nil, ErrNotDataURL
	}
	rest := s[5:]
	comma := strings.IndexByte(rest, ',')
	if comma < 0 {
		return "", nil, fmt.Errorf("%w: data URL has no comma", ErrCorrupt)
	}
	header, payload := rest[:comma], rest[comma+1:]
	isBase64 := false
	if i := strings.LastIndexByte(header, ';'); i >= 0 && strings.EqualFold(strings.TrimSpace(header[i+1:]), "base64") {
		isBase64 = true
		header = header[:i]
	}
	mime = header
	if i := strings.IndexByte(mime, ';'); i >= 0 {
		mime = mime[:i]
	}
	mime = strings.ToLower(strings.TrimSpace(mime))
	if mime == "" {
		mime = "text/plain"
	}
	if !isBase64 {
		if limit > 0 && len(payload) > 3*limit { // each byte is at most "%XX"
			// The unescaped form may still fit; check after unescaping.
			if strings.Count(payload, "%") == 0 {
				return "", nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(payload), limit)
			}
		}
		u, err := url.PathUnescape(payload)
		if err != nil {
			return "", nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if limit > 0 && len(u) > limit {
			return "", nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(u), limit)
		}
		return mime, []byte(u), nil
	}
	data, err = decodeBase64(payload, limit)
	if err != nil {
		return "", nil, err
	}
	return mime, data, nil
}

// decodeBase64 decodes standard base64, with or without padding, checking
// the decoded size against limit before allocating.
func decodeBase64(payload string, limit int) ([]byte, error) {
	enc := base64.StdEncoding
	n := len(payload)
	if n%4 != 0 {
		enc = base64.RawStdEncoding
	}
	if limit > 0 && enc.DecodedLen(n)-2 > limit {
		return nil, fmt.Errorf("%w: about %d bytes, limit %d", ErrTooLarge, enc.DecodedLen(n), limit)
	}
	buf := make([]byte, enc.DecodedLen(n))
	// Decode only reads its source: viewing the string's bytes saves a copy
	// as large as the payload.
	m, err := enc.Decode(buf, unsafe.Slice(unsafe.StringData(payload), n))
	if err != nil {
		return nil, fmt.Errorf("%w: base64: %v", ErrCorrupt, err)
	}
	if limit > 0 && m > limit {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, m, limit)
	}
	return buf[:m], nil
}
