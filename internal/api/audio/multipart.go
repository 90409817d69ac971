package audio

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/media"
)

// Limits of a multipart body besides the server's --max-request-body-bytes
// (which refuses a larger body from its Content-Length, 413, before any of
// it is read).
const (
	// MaxFileBytes is vLLM's VLLM_MAX_AUDIO_CLIP_FILESIZE_MB default, 25 MB.
	MaxFileBytes = 25 << 20
	// maxFieldBytes bounds one text field (a prompt); maxParts the parts.
	maxFieldBytes = 64 << 10
	maxParts      = 64
)

// fileKey is the key the decoded body's audio facts are kept under: the
// form's file part, probed (a text field named file is refused).
const fileKey = "file"

// fileFacts are what the endpoint keeps of the uploaded file: its header's
// facts and a hash of its bytes (the audio's "placeholder" tokens).
type fileFacts struct {
	Format   string  `json:"format"`
	Seconds  float64 `json:"seconds"`
	Bytes    int     `json:"bytes"`
	Hash     uint64  `json:"hash"`
	Filename string  `json:"filename"`
}

// stringFields are the form fields read as text whatever they look like;
// the others are read as JSON scalars when they parse as one (form values
// are strings, which vLLM's pydantic model coerces the same way).
var stringFields = map[string]bool{"model": true, "language": true, "prompt": true,
	"response_format": true, "to_language": true, "hotwords": true}

// DecodeMultipart is the audio endpoints' pipeline.BodyDecoder: it reads a
// multipart/form-data body part by part with bounded memory — the file at
// most MaxFileBytes (vLLM's "Maximum file size exceeded."), a text field at
// most 64 KiB, at most 64 parts, the whole body at most limit (413) — and
// probes the file's header for its duration (internal/media). The fields
// come back as an Object whose "file" holds the probed facts.
func DecodeMultipart(w http.ResponseWriter, r *http.Request, limit int64) (wire.Object, *wire.APIError) {
	tooLarge := &wire.APIError{Status: http.StatusRequestEntityTooLarge, Type: "Request Entity Too Large",
		Message: "Request body exceeds " + strconv.FormatInt(limit, 10) + " bytes"}
	if r.ContentLength > limit {
		return wire.Object{}, tooLarge
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return wire.Object{}, wire.ErrBadRequest("", "Unsupported Media Type: the body must be multipart/form-data with a boundary")
	}
	mr := multipart.NewReader(http.MaxBytesReader(w, r.Body, limit), params["boundary"])
	fields := map[string]json.RawMessage{}
	var facts *fileFacts
	for n := 0; ; n++ {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return wire.Object{}, bodyError(err, tooLarge)
		}
		if n == maxParts {
			return wire.Object{}, wire.ErrBadRequest("", "Too many form parts (at most %d)", maxParts)
		}
		name := p.FormName()
		if name == fileKey {
			if p.FileName() == "" {
				// vLLM: "Expected 'file' to be a file-like object, not 'str'." (422, which
				// its exception handler answers as 400).
				return wire.Object{}, wire.ErrInvalid(fileKey, "Expected 'file' to be a file-like object, not 'str'.")
			}
			f, e := readFile(p, tooLarge)
			if e != nil {
				return wire.Object{}, e
			}
			facts = f
			continue
		}
		v, err := io.ReadAll(io.LimitReader(p, maxFieldBytes+1))
		if err != nil {
			return wire.Object{}, bodyError(err, tooLarge)
		}
		if len(v) > maxFieldBytes {
			return wire.Object{}, wire.ErrInvalid(name, "Form field %q exceeds %d bytes", name, maxFieldBytes)
		}
		fields[name] = formValue(name, string(v))
	}
	if facts == nil {
		return wire.Object{}, wire.ErrInvalid(fileKey, "Field required: file (the audio file part of the multipart form)")
	}
	raw, _ := json.Marshal(facts)
	fields[fileKey] = raw
	return wire.Object{M: fields, Err: new(*wire.APIError)}, nil
}

// readFile reads the file part (at most MaxFileBytes) and probes it.
func readFile(p *multipart.Part, tooLarge *wire.APIError) (*fileFacts, *wire.APIError) {
	data, err := io.ReadAll(io.LimitReader(p, MaxFileBytes+1))
	if err != nil {
		return nil, bodyError(err, tooLarge)
	}
	if len(data) > MaxFileBytes {
		return nil, wire.ErrInvalid(fileKey, "Maximum file size exceeded.")
	}
	it, err := media.Probe(data)
	if err != nil {
		return nil, wire.ErrInvalid(fileKey, "Invalid or unsupported audio file: %v", err)
	}
	if it.Kind != media.KindAudio {
		return nil, wire.ErrInvalid(fileKey, "Invalid or unsupported audio file: %s is not audio", it.Format)
	}
	return &fileFacts{Format: it.Format.String(), Seconds: it.Duration.Seconds(), Bytes: len(data),
		Hash: fnv64(data), Filename: p.FileName()}, nil
}

// bodyError is 413 for a body over the limit, else 400.
func bodyError(err error, tooLarge *wire.APIError) *wire.APIError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge
	}
	return wire.ErrBadRequest("", "Invalid multipart body: %v", err)
}

// formValue is a form field as the JSON value the typed getters read.
func formValue(name, v string) json.RawMessage {
	if !stringFields[name] && json.Valid([]byte(v)) {
		return json.RawMessage(v)
	}
	b, _ := json.Marshal(v)
	return b
}

// fnv64 is FNV-1a over data.
func fnv64(data []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range data {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
