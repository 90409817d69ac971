package sglang

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
)

// tokenizerChunk is the size of one GetTokenizerChunk (the gateway's
// client reads 64 KiB chunks).
const tokenizerChunk = 64 << 10

// maxTokenizerBundle bounds the bundle held in memory: real tokenizer
// directories are tens of megabytes.
const maxTokenizerBundle = 256 << 20

// tokenizerFiles are the files of a tokenizer directory the bundle carries
// (the set SGLang's gateway reads: tokenizer, its configuration, chat
// template, vocabularies), and tokenizerGlobs the patterns of the others.
var (
	tokenizerFiles = []string{"tokenizer.json", "tokenizer_config.json", "config.json",
		"generation_config.json", "special_tokens_map.json", "vocab.json", "merges.txt",
		"tokenizer.model", "tiktoken.model", "chat_template.json", "preprocessor_config.json"}
	tokenizerGlobs = []string{"*.tiktoken", "*.jinja", "*.model"}
)

// GetTokenizer streams the model's tokenizer files as one ZIP archive in
// 64 KiB chunks, the last carrying the archive's SHA-256, as SGLang's
// servicer does, so a gateway builds its tokenizer from the server.
func (sv *Service) GetTokenizer(_ *pb.GetTokenizerRequest, stream pb.SglangScheduler_GetTokenizerServer) error {
	if sv.opts.TokenizerDir == "" {
		return status.Error(codes.FailedPrecondition, "Tokenizer path is not configured on this server.")
	}
	data, err := tokenizerZip(sv.opts.TokenizerDir)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	for off := 0; off < len(data); off += tokenizerChunk {
		end := min(off+tokenizerChunk, len(data))
		c := &pb.GetTokenizerChunk{Data: data[off:end]}
		if end == len(data) {
			c.Sha256 = digest
		}
		if err := stream.Send(c); err != nil {
			return err
		}
	}
	return nil
}

// tokenizerZip archives dir's tokenizer files (deflated, named by their
// base name).
func tokenizerZip(dir string) ([]byte, error) {
	var names []string
	for _, n := range tokenizerFiles {
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil && fi.Mode().IsRegular() {
			names = append(names, n)
		}
	}
	for _, pat := range tokenizerGlobs {
		matches, _ := filepath.Glob(filepath.Join(dir, pat))
		slices.Sort(matches)
		for _, m := range matches {
			n := filepath.Base(m)
			if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no tokenizer files found in %s", dir)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		if err := addFile(zw, filepath.Join(dir, n), n); err != nil {
			return nil, err
		}
		if buf.Len() > maxTokenizerBundle {
			return nil, fmt.Errorf("tokenizer bundle of %s exceeds %d bytes", dir, maxTokenizerBundle)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("tokenizer bundle: %w", err)
	}
	return buf.Bytes(), nil
}

func addFile(zw *zip.Writer, path, name string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("tokenizer bundle: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("tokenizer bundle: %w", err)
	}
	hdr, err := zip.FileInfoHeader(fi)
	if err != nil {
		return fmt.Errorf("tokenizer bundle: %w", err)
	}
	hdr.Name, hdr.Method = name, zip.Deflate
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return fmt.Errorf("tokenizer bundle: %w", err)
	}
	if _, err := io.Copy(w, io.LimitReader(f, maxTokenizerBundle+1)); err != nil {
		return fmt.Errorf("tokenizer bundle: %w", err)
	}
	return nil
}
