// Package profile loads the measured timing profiles of the interpolated
// timing model from NPZ archives (as numpy's savez and savez_compressed
// write them) and JSON files into an engine.Profile.
//
// Loading happens once per process, before any engine is built: the engine
// reads no files, and every DP rank shares the one validated profile.
package profile

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// zipMagic starts every ZIP archive with at least one member (local file
// header); zipEmptyMagic starts an empty one (end of central directory).
var (
	zipMagic      = []byte("PK\x03\x04")
	zipEmptyMagic = []byte("PK\x05\x06")
)

// isNPZ reports whether a profile file's content starts like a ZIP archive.
// The format is chosen by content, never by extension, so a profile saved
// under the "wrong" name still loads.
func isNPZ(data []byte) bool {
	return bytes.HasPrefix(data, zipMagic) || bytes.HasPrefix(data, zipEmptyMagic)
}

// Load reads, parses and validates the profile file at path. Errors are
// wrapped with the path; a problem with one array is an
// *engine.ProfileArrayError naming it, and a file that cannot be read keeps
// its fs error (errors.Is(err, fs.ErrNotExist) works).
func Load(path string) (*engine.Profile, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, fmt.Errorf("load planner profile %q: %w", path, err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load planner profile %q: %w", path, err)
	}
	return p, nil
}

// maxFileBytes bounds a profile file. Real profiles are a few kilobytes;
// the bound turns a wrong path such as /dev/zero into an error instead of a
// startup that never ends.
const maxFileBytes = 64 << 20

// readBounded reads the file at path, refusing one larger than maxFileBytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("file is larger than %d bytes", maxFileBytes)
	}
	return data, nil
}

// Parse decodes and validates a profile held in memory: NPZ when it starts
// like a ZIP archive, JSON otherwise. The result has passed
// engine.Profile.Validate.
func Parse(data []byte) (*engine.Profile, error) {
	var (
		p   *engine.Profile
		err error
	)
	if isNPZ(data) {
		p, err = parseNPZ(data)
	} else {
		p, err = parseJSON(data)
	}
	if err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// arrayErr reports a problem with one named array.
func arrayErr(array, format string, args ...any) error {
	return &engine.ProfileArrayError{Array: array, Msg: fmt.Sprintf(format, args...)}
}

// vector names one 1-D array of a profile and where it is stored.
type vector struct {
	name string
	dst  *[]float64
}

// vectors lists p's four 1-D arrays in file order, so both formats fill
// them the same way.
func vectors(p *engine.Profile) []vector {
	return []vector{
		{engine.ProfilePrefillISL, &p.PrefillISL},
		{engine.ProfilePrefillTTFTMs, &p.PrefillTTFTMs},
		{engine.ProfileDecodeActiveKVTokens, &p.DecodeActiveKVTokens},
		{engine.ProfileDecodeContextLength, &p.DecodeContextLength},
	}
}
