package fleet

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// TestWorkersNameThemselvesAndDescribeTheirEngines checks the two things a
// router lab relies on: every answer of worker i carries x-mocker-worker: i
// (a stream, an error, /health), and GET /workers/{id}/engine gives the
// engine configuration the worker runs, which decodes back into the same
// engine.Config.
func TestWorkersNameThemselvesAndDescribeTheirEngines(t *testing.T) {
	members, _, err := Plan(Spec{Workers: 3, Base: testLoadOptions(map[string]any{"log_level": "warn",
		"timing_model": "fixed", "fixed_prefill_ms": 7, "fixed_decode_ms": 3, "speedup_ratio": "inf", "num_gpu_blocks": 512})})
	if err != nil {
		t.Fatal(err)
	}
	f, admin := startWithAdmin(t, members, "")
	for i := range members {
		id := members[i].ID
		url := f.Worker(i).URL()
		for _, c := range []struct{ method, path, body string }{
			{"POST", "/v1/completions", `{"model":"mocker-model","prompt":[1,2,3],"max_tokens":2,"stream":true}`},
			{"POST", "/v1/completions", `{"model":"nope","prompt":"x"}`},
			{"GET", "/health", ""},
		} {
			req, _ := http.NewRequest(c.method, url+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got := resp.Header.Values("X-Mocker-Worker"); len(got) != 1 || got[0] != id {
				t.Errorf("worker %s %s %s (HTTP %d): x-mocker-worker %q", id, c.method, c.path, resp.StatusCode, got)
			}
		}

		resp, err := http.Get(admin + "/workers/" + id + "/engine")
		if err != nil {
			t.Fatal(err)
		}
		var we WorkerEngine
		err = json.NewDecoder(resp.Body).Decode(&we)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET /workers/%s/engine: HTTP %d, %v", id, resp.StatusCode, err)
		}
		want := members[i].Config.EngineConfig(nil)
		want.SpeedupRatio = 0 // inf is written as 0: the same (no delay)
		if !reflect.DeepEqual(we.Engine, want) {
			t.Errorf("worker %s engine\n got %+v\nwant %+v", id, we.Engine, want)
		}
		if we.ID != id || we.Seed != members[i].Config.Seed || we.DPSize != 1 || we.VocabSize <= 0 ||
			we.Engine.Timing.Model != engine.TimingFixed || we.Engine.NumBlocks != 512 {
			t.Errorf("worker %s described as %+v", id, we)
		}
	}
	resp, err := http.Get(admin + "/workers/7/engine")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("engine of an unknown worker: HTTP %d, want 404", resp.StatusCode)
	}
}
