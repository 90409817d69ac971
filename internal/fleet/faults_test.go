package fleet

import (
	"net/http"
	"strings"
	"testing"
)

// The admin API serves each worker's failure settings; a change applies to
// that worker's next request only.
func TestAdminFaultsPerWorker(t *testing.T) {
	members, _, err := Plan(Spec{Workers: 2, Base: testLoadOptions(map[string]any{"log_level": "warn"})})
	if err != nil {
		t.Fatal(err)
	}
	f, admin := startWithAdmin(t, members, "k")
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	if code, _ := adminCall(t, client, http.MethodGet, admin+"/workers/1/faults", "", ""); code != 401 {
		t.Errorf("without the admin key: %d", code)
	}
	code, v := adminCall(t, client, http.MethodPost, admin+"/workers/1/faults", "k", `{"failure_script":"first 1: server_error"}`)
	if code != 200 || v.(map[string]any)["failure_script"] != "first 1: server_error" {
		t.Fatalf("POST: %d %v", code, v)
	}
	if code, _ := adminCall(t, client, http.MethodGet, admin+"/workers/7/faults", "k", ""); code != 404 {
		t.Errorf("unknown worker: %d", code)
	}
	body := `{"prompt":"a","max_tokens":1}`
	post := func(i int) int {
		resp, err := client.Post(f.Worker(i).URL()+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := []int{post(0), post(1), post(1)}; got[0] != 200 || got[1] != 500 || got[2] != 200 {
		t.Errorf("worker 0, worker 1, worker 1 = %v, want [200 500 200]", got)
	}
}
