package chartcheck

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/mocker-server/mocker-server/internal/config"
)

const (
	fleetComposeFile    = "../../docker-compose.fleet.yml"
	fleetPrometheusFile = "../../configs/prometheus-fleet.yml"
	fleetService        = "mocker-fleet"
)

// composeFile holds the parts of docker-compose.fleet.yml the test reads.
type composeFile struct {
	Services map[string]struct {
		Command []string `json:"command"`
		Ports   []string `json:"ports"`
		Volumes []string `json:"volumes"`
	} `json:"services"`
}

// prometheusConfig holds the parts of a Prometheus configuration the test
// reads.
type prometheusConfig struct {
	ScrapeConfigs []struct {
		JobName       string `json:"job_name"`
		MetricsPath   string `json:"metrics_path"`
		StaticConfigs []struct {
			Targets []string          `json:"targets"`
			Labels  map[string]string `json:"labels"`
		} `json:"static_configs"`
	} `json:"scrape_configs"`
}

// fleetCommand is the fleet command line of the compose file: the fleet's
// own flags, and the serve flags every worker gets.
type fleetCommand struct {
	workers, basePort, adminPort int
	adminHost, adminKey          string
	serveArgs                    []string
}

// parseFleetCommand splits `fleet --workers N [--fleet-file FILE]
// [--base-port P] [--admin-port P] [serve flags]` into its parts, with the
// documented defaults (base port 8000, admin port 9000).
func parseFleetCommand(command []string) (fleetCommand, error) {
	fc := fleetCommand{basePort: 8000, adminPort: 9000, adminHost: "127.0.0.1"}
	// The fleet's own flags that take a string value; the rest are serve flags.
	strs := map[string]*string{"--admin-host": &fc.adminHost, "--admin-key": &fc.adminKey,
		"--stagger-delay": new(string), "--fleet-file": new(string)}
	if len(command) == 0 || command[0] != "fleet" {
		return fc, fmt.Errorf("command %q does not start with the fleet subcommand", command)
	}
	ints := map[string]*int{"--workers": &fc.workers, "--base-port": &fc.basePort, "--admin-port": &fc.adminPort}
	for i := 1; i < len(command); i++ {
		arg := command[i]
		name, value, hasValue := strings.Cut(arg, "=")
		target, isInt := ints[name]
		str, isStr := strs[name]
		if !isInt && !isStr {
			fc.serveArgs = append(fc.serveArgs, arg)
			continue
		}
		if !hasValue {
			if i+1 >= len(command) {
				return fc, fmt.Errorf("%s needs a value", name)
			}
			i++
			value = command[i]
		}
		if isStr {
			*str = value
		}
		if isInt {
			n, err := strconv.Atoi(value)
			if err != nil {
				return fc, fmt.Errorf("%s %q: %w", name, value, err)
			}
			*target = n
		}
	}
	if fc.workers < 1 {
		return fc, fmt.Errorf("--workers %d: want at least 1", fc.workers)
	}
	return fc, nil
}

// readYAML decodes the parts of a YAML file that target names; duplicate
// keys are errors, other keys are left to the file's own validator
// (docker-compose config).
func readYAML(t *testing.T, path string, target any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sigsyaml.YAMLToJSONStrict(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := json.Unmarshal(raw, target); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestFleetCompose_PrometheusScrapesEveryWorker keeps the compose fleet, its
// published ports and Prometheus' targets in step: worker i of N serves on
// base port + i, every one of them is published and scraped exactly once,
// and the serve flags the fleet passes on are accepted by serve.
func TestFleetCompose_PrometheusScrapesEveryWorker(t *testing.T) {
	var compose composeFile
	readYAML(t, fleetComposeFile, &compose)
	svc, ok := compose.Services[fleetService]
	if !ok {
		t.Fatalf("%s has no service %s", fleetComposeFile, fleetService)
	}
	fc, err := parseFleetCommand(svc.Command)
	if err != nil {
		t.Fatal(err)
	}
	if fc.workers != 8 {
		t.Errorf("fleet runs %d workers, want 8", fc.workers)
	}
	last := fc.basePort + fc.workers - 1
	wantPorts := []string{
		fmt.Sprintf("%d-%d:%d-%d", fc.basePort, last, fc.basePort, last),
		fmt.Sprintf("%d:%d", fc.adminPort, fc.adminPort),
	}
	for _, want := range wantPorts {
		if !slices.Contains(svc.Ports, want) {
			t.Errorf("%s publishes %q, want %q among them", fleetService, svc.Ports, want)
		}
	}
	if fc.adminHost != "0.0.0.0" {
		t.Errorf("the admin API listens on %q; in a container it must listen on 0.0.0.0 to be published", fc.adminHost)
	}
	// Published beyond loopback, the admin API needs its key (the fleet
	// refuses to start without one), taken from the environment.
	if !strings.HasPrefix(fc.adminKey, "${MOCKER_ADMIN_KEY:?") {
		t.Errorf("the admin key is %q, want one from ${MOCKER_ADMIN_KEY:?…}", fc.adminKey)
	}
	if fc.adminPort >= fc.basePort && fc.adminPort <= last {
		t.Errorf("admin port %d is inside the workers' ports %d-%d", fc.adminPort, fc.basePort, last)
	}

	// The serve flags the fleet passes to every worker.
	cfg, _, err := loadServeFlags(fc.serveArgs, config.LoadOptions{})
	if err != nil {
		t.Fatalf("serve flags %q: %v", fc.serveArgs, err)
	}
	if cfg.Host != "0.0.0.0" {
		t.Errorf("workers listen on %q; in a container they must listen on 0.0.0.0", cfg.Host)
	}

	prom, ok := compose.Services["prometheus"]
	if !ok || !slices.Contains(prom.Volumes, "./configs/prometheus-fleet.yml:/etc/prometheus/prometheus.yml:ro") {
		t.Errorf("prometheus does not mount configs/prometheus-fleet.yml: %v", prom.Volumes)
	}
	var pc prometheusConfig
	readYAML(t, fleetPrometheusFile, &pc)
	scraped := map[string]string{} // target -> worker label
	for _, sc := range pc.ScrapeConfigs {
		if sc.MetricsPath != "/metrics" {
			t.Errorf("job %s scrapes %q, want /metrics", sc.JobName, sc.MetricsPath)
		}
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				if _, dup := scraped[target]; dup {
					t.Errorf("target %s is scraped twice", target)
				}
				scraped[target] = st.Labels["worker"]
			}
		}
	}
	for worker := range fc.workers {
		target := fmt.Sprintf("%s:%d", fleetService, fc.basePort+worker)
		label, ok := scraped[target]
		if !ok {
			t.Errorf("worker %d (%s) is not scraped", worker, target)
			continue
		}
		if label != strconv.Itoa(worker) {
			t.Errorf("target %s has worker label %q, want %d", target, label, worker)
		}
		delete(scraped, target)
	}
	for target := range scraped {
		t.Errorf("target %s is not a worker of the fleet", target)
	}
}

func TestParseFleetCommand_ReadsTheFleetFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command []string
		want    fleetCommand
		wantErr string
	}{
		{"defaults", []string{"fleet", "--workers", "2"}, fleetCommand{workers: 2, basePort: 8000, adminPort: 9000, adminHost: "127.0.0.1"}, ""},
		{"equals form and serve flags", []string{"fleet", "--workers=3", "--base-port=7000", "--fleet-file", "f.yaml", "--host", "0.0.0.0"},
			fleetCommand{workers: 3, basePort: 7000, adminPort: 9000, adminHost: "127.0.0.1", serveArgs: []string{"--host", "0.0.0.0"}}, ""},
		{"admin flags are the fleet's", []string{"fleet", "--workers", "1", "--admin-host", "0.0.0.0", "--admin-key=k", "--stagger-delay", "1s"},
			fleetCommand{workers: 1, basePort: 8000, adminPort: 9000, adminHost: "0.0.0.0", adminKey: "k"}, ""},
		{"not the fleet command", []string{"serve"}, fleetCommand{}, "fleet subcommand"},
		{"no workers", []string{"fleet"}, fleetCommand{}, "--workers 0"},
		{"missing value", []string{"fleet", "--workers"}, fleetCommand{}, "needs a value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseFleetCommand(tc.command)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.workers != tc.want.workers || got.basePort != tc.want.basePort || got.adminPort != tc.want.adminPort ||
				got.adminHost != tc.want.adminHost ||
				!slices.Equal(got.serveArgs, tc.want.serveArgs) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
