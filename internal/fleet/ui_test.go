package fleet

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// The admin port serves one page for all workers and each worker's engine
// page, behind the admin key; a worker with --ui=false has a tile but no
// page.
func TestAdminUI_FleetPageAndWorkerPages(t *testing.T) {
	members, _, err := Plan(Spec{Workers: 3, Base: testLoadOptions(map[string]any{"log_level": "warn", "speedup_ratio": "inf"})})
	if err != nil {
		t.Fatal(err)
	}
	members[2].Config.UI = false
	f, admin := startWithAdmin(t, members, "k")
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	get := func(path, key string) *http.Response {
		req, _ := http.NewRequest("GET", admin+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	resp, err := client.Post(f.Worker(1).URL()+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a","max_tokens":3}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	for _, tc := range []struct {
		path, key string
		want      int
	}{
		{"/ui", "", 401},
		{"/ui", "k", 200},
		{"/ui/worker/0", "k", 200},
		{"/ui/worker/2", "k", 404}, // ui off on that worker
		{"/ui/worker/9", "k", 404},
		{"/ui/stream?view=engine", "k", 400},
		{"/workers", "k", 200}, // the admin API is still there
	} {
		res := get(tc.path, tc.key)
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("GET %s: %d, want %d", tc.path, res.StatusCode, tc.want)
		}
	}

	res := get("/ui/stream?view=fleet", "k")
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	res.Body.Close()
	var v struct {
		Workers []struct {
			ID       string `json:"id"`
			State    string `json:"state"`
			UI       bool   `json:"ui"`
			Finished int64  `json:"finished"`
		} `json:"workers"`
	}
	if err != nil || json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &v) != nil || len(v.Workers) != 3 {
		t.Fatalf("fleet stream: %q %v", line, err)
	}
	for i, w := range v.Workers {
		if w.ID != members[i].ID || w.State != "running" || w.UI != (i != 2) || (w.Finished == 1) != (i == 1) {
			t.Errorf("tile %d: %+v", i, w)
		}
	}
	res = get("/ui/worker/1/stream?view=engine", "k")
	line, err = bufio.NewReader(res.Body).ReadString('\n')
	res.Body.Close()
	if err != nil || !strings.Contains(line, `"requests":[["cmpl-`) {
		t.Errorf("worker 1's stream: %.300q %v", line, err)
	}
}
