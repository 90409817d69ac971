package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteReport covers --json's three destinations (none, stdout, a file)
// shared by the load, floor and grpc subcommands, and a file that cannot be
// created.
func TestWriteReport(t *testing.T) {
	table := func(w io.Writer) { io.WriteString(w, "TABLE\n") }
	report := func(w io.Writer) error { _, err := io.WriteString(w, "{\"ok\":true}\n"); return err }
	file := filepath.Join(t.TempDir(), "r.json")
	for _, tc := range []struct {
		jsonOut, stdout, file string
	}{
		{"", "TABLE\n", ""},
		{"-", "{\"ok\":true}\n", ""},
		{file, "TABLE\n", "{\"ok\":true}\n"},
	} {
		var out bytes.Buffer
		if err := writeReport(&out, tc.jsonOut, table, report); err != nil {
			t.Fatalf("--json %q: %v", tc.jsonOut, err)
		}
		if out.String() != tc.stdout {
			t.Errorf("--json %q: stdout %q, want %q", tc.jsonOut, out.String(), tc.stdout)
		}
		if tc.file != "" {
			got, err := os.ReadFile(tc.jsonOut)
			if err != nil || string(got) != tc.file {
				t.Errorf("--json %q: file %q (%v), want %q", tc.jsonOut, got, err, tc.file)
			}
		}
	}
	bad := filepath.Join(t.TempDir(), "missing", "r.json")
	if err := writeReport(io.Discard, bad, table, report); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--json into a missing directory: %v, want ErrNotExist", err)
	}
	failing := func(io.Writer) error { return errors.New("encode failed") }
	if err := writeReport(io.Discard, "-", table, failing); err == nil || !strings.Contains(err.Error(), "encode failed") {
		t.Errorf("failing report: %v", err)
	}
}
