package profile

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// maxNPYMemberBytes bounds one decompressed .npy member: real profiles are
// a few kilobytes, and the bound keeps a crafted archive from inflating
// into gigabytes.
const maxNPYMemberBytes = 64 << 20

// parseNPZ reads the five "<name>.npy" members of an NPZ archive. Other
// members are ignored; a missing member leaves its array nil (missing).
func parseNPZ(data []byte) (*engine.Profile, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("invalid NPZ archive: %w", err)
	}
	members := map[string]*zip.File{}
	for _, f := range zr.File {
		name, ok := strings.CutSuffix(f.Name, ".npy")
		if !ok {
			continue
		}
		if _, dup := members[name]; !dup {
			members[name] = f
		}
	}
	p := &engine.Profile{}
	for _, v := range vectors(p) {
		a, err := readMember(members, v.name, 1)
		if err != nil {
			return nil, err
		}
		if a != nil {
			*v.dst = a.data
		}
	}
	a, err := readMember(members, engine.ProfileDecodeITL, 2)
	if err != nil {
		return nil, err
	}
	if a != nil {
		rows, cols := a.shape[0], a.shape[1]
		if rows == 0 || cols == 0 {
			// An empty matrix can never match two axes of at least two
			// points; refusing it here also avoids allocating rows for a
			// shape such as (1000000000, 0).
			return nil, arrayErr(engine.ProfileDecodeITL, "%s.npy: empty array of shape %v", engine.ProfileDecodeITL, a.shape)
		}
		p.DecodeITL = make([][]float64, rows)
		for i := range rows {
			p.DecodeITL[i] = a.data[i*cols : (i+1)*cols : (i+1)*cols]
		}
	}
	// The optional cached-context coefficient: a scalar (numpy saves a
	// Python float as a 0-d array) or a one-element vector.
	a, err = readMember(members, engine.ProfilePrefillCachedMsPerMTok, -1)
	if err != nil {
		return nil, err
	}
	if a != nil {
		if len(a.shape) > 1 || len(a.data) != 1 {
			return nil, arrayErr(engine.ProfilePrefillCachedMsPerMTok, "want a scalar, got shape %v", a.shape)
		}
		p.PrefillCachedMsPerMTok = a.data[0]
	}
	return p, nil
}

// readMember decodes the member "<name>.npy" as a dims-dimensional array
// (any shape when dims < 0); a missing member gives (nil, nil).
func readMember(members map[string]*zip.File, name string, dims int) (*npyArray, error) {
	f, ok := members[name]
	if !ok {
		return nil, nil
	}
	rc, err := f.Open()
	if err != nil {
		return nil, arrayErr(name, "open %s: %v", f.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxNPYMemberBytes+1))
	if err != nil {
		return nil, arrayErr(name, "read %s: %v", f.Name, err)
	}
	if len(b) > maxNPYMemberBytes {
		return nil, arrayErr(name, "%s is larger than %d bytes", f.Name, maxNPYMemberBytes)
	}
	a, err := parseNPY(b)
	if err != nil {
		return nil, arrayErr(name, "%s: %v", f.Name, err)
	}
	if dims >= 0 && len(a.shape) != dims {
		return nil, arrayErr(name, "%s: want a %d-D array, got shape %v", f.Name, dims, a.shape)
	}
	return a, nil
}
