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
	mime, data, _, err = appendDataURL(dst, s, limit, nil)
	return mime, data, err
}

// AppendDataURLHashed is AppendDataURL that also returns the payload's
// Hash for an item of kind, computed while decoding: the payload is
// decoded and hashed in chunks of decodeChunk characters, each hashed
// while it is in the CPU's cache, instead of a decode of megabytes and
// then a second pass reading them back. When the hash cannot be computed
// (an unknown algorithm or kind) sum is empty and the decode is as
// AppendDataURL's, so the caller's own Hash call reports the error where
// it always did.
func AppendDataURLHashed(dst []byte, s string, limit int, kind Kind, opt HashOptions) (mime string, data []byte, sum string, err error) {
	return appendDataURL(dst, s, limit, &hashSpec{kind, opt})
}

// AppendBase64 decodes a bare base64 payload (input_audio's data) as
// AppendDataURL decodes a data URL's, with the same checks and errors.
func AppendBase64(dst []byte, payload string, limit int) ([]byte, error) {
	data, _, err := decodeBase64(dst, payload, limit, nil)
	return data, err
}

// AppendBase64Hashed is AppendBase64 with the hash of AppendDataURLHashed.
func AppendBase64Hashed(dst []byte, payload string, limit int, kind Kind, opt HashOptions) (data []byte, sum string, err error) {
	return decodeBase64(dst, payload, limit, &hashSpec{kind, opt})
}

// hashSpec is what an item is hashed as while it is decoded.
type hashSpec struct {
	kind Kind
	opt  HashOptions
}

func appendDataURL(dst []byte, s string, limit int, hs *hashSpec) (mime string, data []byte, sum string, err error) {
	if len(s) < 5 || !strings.EqualFold(s[:5], "data:") {
		return "", nil, "", ErrNotDataURL
	}
	spec, payload, ok := strings.Cut(s[5:], ",")
	if !ok {
		return "", nil, "", fmt.Errorf("%w: data URL %.32q has no ',' separator", ErrCorrupt, s)
	}
	i := strings.LastIndexByte(spec, ';')
	if i < 0 || spec[i+1:] != "base64" {
		return "", nil, "", fmt.Errorf("%w: only base64 data URLs are supported", ErrUnsupported)
	}
	mime, _, _ = strings.Cut(spec[:i], ";")
	mime = strings.ToLower(strings.TrimSpace(mime))
	data, sum, err = decodeBase64(dst, payload, limit, hs)
	if err != nil {
		return "", nil, "", err
	}
	return mime, data, sum, nil
}

// decodeChunk is how many base64 characters are decoded and hashed at a
// time: 36 KiB decoded, well inside a core's L2 cache.
const decodeChunk = 48 << 10

// decodeBase64 decodes padded standard base64, checking the decoded size
// against limit before allocating, into dst's spare capacity when it fits;
// with hs, it hashes the bytes chunk by chunk as it decodes them.
func decodeBase64(dst []byte, payload string, limit int, hs *hashSpec) ([]byte, string, error) {
	n := len(payload)
	if n%4 != 0 {
		return nil, "", fmt.Errorf("%w: base64: incorrect padding (%d characters)", ErrCorrupt, n)
	}
	enc := base64.StdEncoding
	if limit > 0 && enc.DecodedLen(n)-2 > limit {
		return nil, "", fmt.Errorf("%w: about %d bytes, limit %d", ErrTooLarge, enc.DecodedLen(n), limit)
	}
	buf := dst[len(dst):]
	if cap(buf) < enc.DecodedLen(n) {
		buf = make([]byte, enc.DecodedLen(n))
	}
	buf = buf[:enc.DecodedLen(n)]
	want := n/4*3 - padding(payload)
	if hs != nil {
		if data, sum, ok := decodeHashed(buf, payload, want, hs); ok {
			if limit > 0 && len(data) > limit {
				return nil, "", fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), limit)
			}
			return data, sum, nil
		}
		// Something is off (or the hash cannot start): the whole decode
		// below gives the error, as without hashing.
	}
	// Decode only reads its source: viewing the string's bytes saves a copy
	// as large as the payload.
	m, err := enc.Decode(buf, unsafe.Slice(unsafe.StringData(payload), n))
	if err != nil {
		return nil, "", fmt.Errorf("%w: base64: %v", ErrCorrupt, err)
	}
	// Go's decoder skips CR and LF, which Python's validating decoder
	// refuses. Skipped characters make the output shorter than the
	// payload's length says, so the length tells, without another scan,
	// whether there were any.
	if m != want {
		if i := indexCRLF(payload); i >= 0 {
			return nil, "", fmt.Errorf("%w: base64: non-alphabet character at %d", ErrCorrupt, i)
		}
		return nil, "", fmt.Errorf("%w: base64: %d bytes decoded from %d characters", ErrCorrupt, m, n)
	}
	if limit > 0 && m > limit {
		return nil, "", fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, m, limit)
	}
	// With hs, the hash could not start: the caller's Hash says why.
	return buf[:m], "", nil
}

// decodeHashed decodes payload into buf and hashes it, decodeChunk
// characters at a time. ok is false when the hash cannot start or a chunk
// is not clean base64 of the expected length (an error, which the caller's
// whole decode reports with its usual text).
func decodeHashed(buf []byte, payload string, want int, hs *hashSpec) (data []byte, sum string, ok bool) {
	ih, err := NewItemHasher(hs.kind, want, hs.opt)
	if err != nil {
		return nil, "", false
	}
	enc := base64.StdEncoding
	out := 0
	for off := 0; off < len(payload); off += decodeChunk {
		c := payload[off:min(off+decodeChunk, len(payload))]
		last := off+len(c) == len(payload)
		pad := padding(c)
		if pad > 0 && !last {
			return nil, "", false // padding inside the payload
		}
		m, err := enc.Decode(buf[out:], unsafe.Slice(unsafe.StringData(c), len(c)))
		if err != nil || m != len(c)/4*3-pad {
			return nil, "", false
		}
		ih.Write(buf[out : out+m])
		out += m
	}
	if out != want {
		return nil, "", false
	}
	sum, _, err = ih.Sum()
	if err != nil {
		return nil, "", false
	}
	return buf[:out], sum, true
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
