package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// utf8BOM is skipped before a JSON profile: some Windows editors write it.
var utf8BOM = []byte("\xef\xbb\xbf")

// parseJSON decodes a JSON object holding the five arrays. Unknown keys are
// ignored; a missing or null key leaves its array nil (missing), which
// validation then reports.
func parseJSON(data []byte) (*engine.Profile, error) {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(data, utf8BOM))
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, errors.New("not an NPZ archive (PK\\x03\\x04) or a JSON object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, fmt.Errorf("invalid JSON profile: %w", err)
	}
	p := &engine.Profile{}
	for _, v := range vectors(p) {
		if msg, ok := raw[v.name]; ok {
			vec, err := jsonVector(msg)
			if err != nil {
				return nil, arrayErr(v.name, "want an array of numbers: %v", err)
			}
			*v.dst = vec
		}
	}
	if msg, ok := raw[engine.ProfileDecodeITL]; ok {
		var rows []json.RawMessage
		if err := json.Unmarshal(msg, &rows); err != nil {
			return nil, arrayErr(engine.ProfileDecodeITL, "want an array of arrays of numbers: %v", err)
		}
		if rows != nil {
			p.DecodeITL = make([][]float64, len(rows))
		}
		for i, r := range rows {
			vec, err := jsonVector(r)
			if err == nil && vec == nil {
				err = errors.New("null")
			}
			if err != nil {
				return nil, arrayErr(engine.ProfileDecodeITL, "row %d: want an array of numbers: %v", i, err)
			}
			p.DecodeITL[i] = vec
		}
	}
	if msg, ok := raw[engine.ProfilePrefillCachedMsPerMTok]; ok {
		var c *float64
		if err := json.Unmarshal(msg, &c); err != nil || c == nil {
			return nil, arrayErr(engine.ProfilePrefillCachedMsPerMTok, "want a number, got %s", msg)
		}
		p.PrefillCachedMsPerMTok = *c
	}
	return p, nil
}

// jsonVector decodes a JSON array of numbers; null gives nil, and a null
// element is an error (encoding/json would silently turn it into 0).
func jsonVector(msg json.RawMessage) ([]float64, error) {
	var ptrs []*float64
	if err := json.Unmarshal(msg, &ptrs); err != nil {
		return nil, err
	}
	if ptrs == nil {
		return nil, nil
	}
	vec := make([]float64, len(ptrs))
	for i, x := range ptrs {
		if x == nil {
			return nil, fmt.Errorf("element %d is null", i)
		}
		vec[i] = *x
	}
	return vec, nil
}
