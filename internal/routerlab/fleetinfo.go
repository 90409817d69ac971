package routerlab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// admin talks to a fleet's admin API (docs/fleet.md).
type admin struct {
	base string
	key  string
	http *http.Client
}

func newAdmin(base, key string) *admin {
	return &admin{base: strings.TrimRight(base, "/"), key: key, http: &http.Client{Timeout: 35 * time.Second}}
}

// workerInfo is the part of an admin listing entry the lab uses.
type workerInfo struct {
	ID    string `json:"id"`
	URL   string `json:"url"`
	State string `json:"state"`
	Model string `json:"model"`
}

// workerEngine mirrors the admin API's GET /workers/{id}/engine.
type workerEngine struct {
	ID        string        `json:"id"`
	Seed      int64         `json:"seed"`
	DPSize    int           `json:"dp_size"`
	VocabSize int           `json:"vocab_size"`
	Engine    engine.Config `json:"engine"`
}

// fleetInfo is what the admin API told about the fleet before the run.
type fleetInfo struct {
	Workers []workerInfo
	Engines []workerEngine
}

func (a *admin) call(ctx context.Context, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	if a.key != "" {
		req.Header.Set("Authorization", "Bearer "+a.key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("admin %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("admin %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("admin %s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("admin %s %s: %w", method, path, err)
		}
	}
	return nil
}

// describe reads every worker and its engine configuration.
func (a *admin) describe(ctx context.Context) (*fleetInfo, error) {
	fi := &fleetInfo{}
	if err := a.call(ctx, http.MethodGet, "/workers", nil, &fi.Workers); err != nil {
		return nil, err
	}
	if len(fi.Workers) == 0 {
		return nil, fmt.Errorf("admin API at %s lists no workers", a.base)
	}
	for _, w := range fi.Workers {
		var we workerEngine
		if err := a.call(ctx, http.MethodGet, "/workers/"+w.ID+"/engine", nil, &we); err != nil {
			return nil, err
		}
		fi.Engines = append(fi.Engines, we)
	}
	return fi, nil
}
