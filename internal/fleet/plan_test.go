package fleet

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
)

func TestParseFileIsStrict(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown top-level key", "workers: [{count: 1}]\nreplicas: 3\n", `line 2: unknown key "replicas"`},
		{"unknown group key", "workers:\n  - count: 2\n    flags: [\"--seed\", \"1\"]\n", `line 3: unknown key "flags"`},
		{"misspelled key, said in YAML terms", "workers:\n  - count: 2\n    cofig: a.yaml\n",
			`line 3: unknown key "cofig" (did you mean "config"?)`},
		{"duplicate key", "workers: [{count: 1}]\nworkers: [{count: 2}]\n", `key "workers" already set`},
		{"count zero", "workers: [{count: 0}]\n", "workers[0].count must be >= 1"},
		{"no groups", "workers: []\n", "no worker groups"},
		{"wrong type", "workers: [{count: many}]\n", "count"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFile([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseFile = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	f, err := ParseFile([]byte("workers:\n  - count: 4\n    config: a.yaml\n    args: [\"--speedup-ratio\", \"10\"]\n  - count: 12\n"))
	if err != nil || len(f.Workers) != 2 || f.Workers[0].Config != "a.yaml" || f.Workers[1].Count != 12 {
		t.Errorf("valid file: %+v, %v", f, err)
	}
}

func TestPlanLaysOutPortsSeedsAndIDs(t *testing.T) {
	file, err := ParseFile([]byte(`
workers:
  - count: 2
    args: ["--data-parallel-size", "3", "--seed", "100"]
  - count: 2
`))
	if err != nil {
		t.Fatal(err)
	}
	dynamo := map[string]any{"seed": 7, "zmq_kv_events_port": 20000, "zmq_replay_port": 21000,
		"fpm_endpoint": "tcp://*:22000", "worker_type": "prefill", "bootstrap_port": 25000}
	vllm := map[string]any{"seed": 7, "kv_events_config": map[string]any{"enable_kv_cache_events": true,
		"publisher": "zmq", "endpoint": "tcp://*:23000", "replay_endpoint": "tcp://*:24000"}}
	var members []Member
	for _, style := range []map[string]any{dynamo, vllm} {
		members, _, err = Plan(Spec{File: file, BasePort: 9100, Base: testLoadOptions(style)})
		if err != nil {
			t.Fatal(err)
		}
		const stride = 3 // the largest dp_size
		for i, m := range members {
			cfg := m.Config
			wantSeed := int64(7 + i)
			if i < 2 {
				wantSeed = int64(100 + i)
			}
			if m.ID != fmt.Sprint(i) || cfg.Port != 9100+i || cfg.Seed != wantSeed {
				t.Errorf("worker %d: id %s port %d seed %d", i, m.ID, cfg.Port, cfg.Seed)
			}
			if want := fmt.Sprintf("testhost:%d", 9100+i); cfg.WorkerID != want {
				t.Errorf("worker %d: worker_id %q, want %q", i, cfg.WorkerID, want)
			}
			off := i * stride
			if _, ok := style["bootstrap_port"]; ok && cfg.BootstrapPort != 25000+off {
				t.Errorf("worker %d: bootstrap_port %d, want %d", i, cfg.BootstrapPort, 25000+off)
			}
			kv, replay, fpm := eventEndpoints(cfg)
			kvHost, kvBase, replayBase := "127.0.0.1", 20000, 21000
			if _, ok := style["kv_events_config"]; ok {
				kvHost, kvBase, replayBase = "*", 23000, 24000
			} else if len(fpm) != cfg.DPSize || fpm[cfg.DPSize-1] != fmt.Sprintf("tcp://*:%d", 22000+off+cfg.DPSize-1) {
				t.Errorf("worker %d: fpm endpoints %v", i, fpm)
			}
			if len(kv) != cfg.DPSize || len(replay) != cfg.DPSize {
				t.Fatalf("worker %d: endpoints %v %v", i, kv, replay)
			}
			for r := range cfg.DPSize {
				if kv[r] != fmt.Sprintf("tcp://%s:%d", kvHost, kvBase+off+r) || replay[r] != fmt.Sprintf("tcp://%s:%d", kvHost, replayBase+off+r) {
					t.Errorf("worker %d rank %d: kv %s replay %s", i, r, kv[r], replay[r])
				}
			}
		}
	}
	// The shared configuration objects are not aliased between workers.
	if members[0].Config.KVEventsConfig == members[1].Config.KVEventsConfig {
		t.Error("workers share one kv_events_config")
	}
}

func TestPlanMakesExplicitWorkerIDsDistinct(t *testing.T) {
	members, _, err := Plan(Spec{Workers: 3, Base: testLoadOptions(map[string]any{"worker_id": "pod-a"})})
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range members {
		if want := fmt.Sprintf("pod-a-%d", i); m.Config.WorkerID != want {
			t.Errorf("worker %d: %q, want %q", i, m.Config.WorkerID, want)
		}
	}
	one, _, err := Plan(Spec{Workers: 1, Base: testLoadOptions(map[string]any{"worker_id": "pod-a"})})
	if err != nil || one[0].Config.WorkerID != "pod-a" {
		t.Errorf("a fleet of one keeps its worker_id: %v %v", one, err)
	}
}

func TestPlanRefusesBadFleets(t *testing.T) {
	file := func(y string) *File {
		f, err := ParseFile([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	cases := []struct {
		name string
		spec Spec
		want string
	}{
		{"no workers", Spec{Workers: 0}, "--workers must be between 1 and 4096, got 0"},
		{"too many workers", Spec{Workers: MaxWorkers + 1}, "--workers must be between 1 and 4096, got 4097"},
		{"file above the limit", Spec{File: file("workers: [{count: 4000}, {count: 97}]")}, "asks for 4097 workers"},
		{"count mismatch", Spec{Workers: 3, File: file("workers: [{count: 2}]")}, "--workers 3 does not match the fleet file's 2 workers"},
		{"HTTP port against KV port", Spec{Workers: 4, BasePort: 8000,
			Base: testLoadOptions(map[string]any{"zmq_kv_events_port": 8002})},
			"port collision: port 8002 is used by worker 0 KV events (dp rank 0) and worker 2 HTTP"},
		{"admin port inside the HTTP range", Spec{Workers: 4, BasePort: 8000, AdminPort: 8003},
			"port collision: port 8003 is used by the admin API and worker 3 HTTP"},
		{"KV and replay ranges overlap", Spec{Workers: 4, BasePort: 8000,
			Base: testLoadOptions(map[string]any{"zmq_kv_events_port": 20000, "zmq_replay_port": 20002})},
			"port collision: port 20002"},
		{"port per group", Spec{File: file(`workers: [{count: 2, args: ["--port", "9000"]}]`)},
			"--port cannot be set per group"},
		{"bad group flag", Spec{File: file(`workers: [{count: 2, args: ["--no-such-flag"]}]`)},
			"fleet group 1: args: unknown flag: --no-such-flag"},
		{"group configuration problem", Spec{File: file(`workers: [{count: 1}, {count: 2, args: ["--max-num-seqs", "0"]}]`)},
			"fleet worker 1 (group 2): "},
		{"missing group config file", Spec{File: file(`workers: [{count: 1, config: /no/such/file.yaml}]`)},
			"fleet worker 0 (group 1): --config /no/such/file.yaml"},
		{"event port past 65535", Spec{Workers: 3, Base: testLoadOptions(map[string]any{"zmq_kv_events_port": 65534})},
			"zmq_kv_events_port 65536"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.spec.Base.Overlay == nil {
				tc.spec.Base = testLoadOptions(nil)
			}
			_, _, err := Plan(tc.spec)
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("Plan = %v, want a *config.Error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Plan = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// Worker i serves gRPC on grpc_port + i (0: a port of its own the OS
// picks), and a gRPC port that lands on another listener is refused.
func TestPlanLaysOutGRPCPorts(t *testing.T) {
	members, _, err := Plan(Spec{Workers: 3, BasePort: 9100, Base: testLoadOptions(map[string]any{"grpc_port": 50051})})
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range members {
		if m.Config.GRPCPort != 50051+i {
			t.Errorf("worker %d: grpc_port %d, want %d", i, m.Config.GRPCPort, 50051+i)
		}
	}
	members, _, err = Plan(Spec{Workers: 2, Base: testLoadOptions(map[string]any{"grpc_port": 0})})
	if err != nil || members[0].Config.GRPCPort != 0 || members[1].Config.GRPCPort != 0 {
		t.Errorf("grpc_port 0: %v", err)
	}
	_, _, err = Plan(Spec{Workers: 3, BasePort: 9100, Base: testLoadOptions(map[string]any{"grpc_port": 9101})})
	if err == nil || !strings.Contains(err.Error(), "port 9102 is used by worker 1 gRPC and worker 2 HTTP") {
		t.Errorf("colliding gRPC ports: %v", err)
	}
	// serve is a fleet of one: the same check.
	_, _, err = Plan(Spec{Workers: 1, BasePort: 9100, Base: testLoadOptions(map[string]any{"grpc_port": 9100})})
	if err == nil || !strings.Contains(err.Error(), "port 9100 is used by worker 0 HTTP and worker 0 gRPC") {
		t.Errorf("gRPC on the HTTP port: %v", err)
	}
}
