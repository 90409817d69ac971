package profile

import (
	"archive/zip"
	"encoding/binary"
	"strings"
	"testing"
)

// rawNPY builds a .npy file with the given format version, header text and
// data bytes, the header padded the way numpy pads it.
func rawNPY(major byte, header string, data []byte) []byte {
	preamble := 10
	if major >= 2 {
		preamble = 12
	}
	for (preamble+len(header)+1)%64 != 0 {
		header += " "
	}
	header += "\n"
	b := []byte(npyMagic)
	b = append(b, major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(header)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(header)))
	}
	b = append(b, header...)
	return append(b, data...)
}

func TestParseNPYRefusesHostileHeadersQuickly(t *testing.T) {
	tests := []struct {
		name    string
		npy     []byte
		wantMsg string // "" = parses
	}{
		{"empty Fortran-order array of enormous shape", rawNPY(1,
			"{'descr': '<f8', 'fortran_order': True, 'shape': (0, 1000000000000000000), }", nil), ""},
		{"shape whose element count overflows", rawNPY(1,
			"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", make([]byte, 64)),
			"needs more data"},
		{"integer too large for int", rawNPY(1,
			"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999999,), }", nil), "bad integer"},
		{"negative dimension", rawNPY(1,
			"{'descr': '<f8', 'fortran_order': False, 'shape': (-3,), }", nil), "not a non-negative integer"},
		{"deeply nested header", rawNPY(2, strings.Repeat("[", 60000), nil), "nested deeper than 16"},
		{"header larger than 64 KiB", rawNPY(2,
			"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), '"+strings.Repeat("x", 70000)+"': 1}",
			make([]byte, 16)), "larger than 65536"},
		{"unterminated string", rawNPY(1, "{'descr': '<f8", nil), "unterminated string"},
		{"key that is not a string", rawNPY(1, "{1: '<f8'}", nil), "dict key is not a string"},
		{"trailing text after the dict", rawNPY(1,
			"{'descr': '<f8', 'fortran_order': False, 'shape': (0,), } x", nil), "after the dict"},
		{"three-dimensional Fortran order", rawNPY(1,
			"{'descr': '<f8', 'fortran_order': True, 'shape': (1, 1, 1), }", make([]byte, 8)), "3 dimensions"},
		{"Python 2 long integers in the shape", rawNPY(1,
			"{'descr': '<i4', 'fortran_order': False, 'shape': (2L,), }", make([]byte, 8)), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseNPY(tc.npy)
			if tc.wantMsg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.wantMsg)
			}
		})
	}
}

func TestLoadRefusesAnEmptyDecodeITLBeforeAllocatingRows(t *testing.T) {
	members := replaceMember(profileMembers("<f8", "<f8", 1, false), "decode_itl.npy", &npyMember{
		name: "decode_itl.npy",
		// 1 MiB of data is enough to declare a million empty rows.
		raw: rawNPY(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1048576, 0), }", make([]byte, 1<<20)),
	})
	path := writeNPZ(t, t.TempDir(), "profile.npz", zip.Deflate, members)
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), "decode_itl") || !strings.Contains(err.Error(), "empty array of shape [1048576 0]") {
		t.Errorf("err = %v, want decode_itl's empty array named", err)
	}
}
