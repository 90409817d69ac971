package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/events"
	"github.com/mocker-server/mocker-server/internal/worker"
)

// MaxWorkers is the largest fleet one process runs. Each idle worker costs
// a few MiB (its KV pool bookkeeping, metrics registry, goroutines), so
// the limit keeps a typo from exhausting the machine.
const MaxWorkers = 4096

// DefaultBasePort is the HTTP port of worker 0 unless --base-port or
// --port says otherwise.
const DefaultBasePort = 8000

// Spec describes a fleet to build from command-line settings.
type Spec struct {
	// Workers is --workers: the fleet size. With a fleet file it may be 0
	// (the file's counts decide) or must equal the sum of the counts.
	Workers int
	// File is the parsed --fleet-file, nil for N identical workers.
	File *File
	// Base holds the command line's serve settings (flags, --config,
	// --extra-engine-args), applied to every worker before its group's.
	Base config.LoadOptions
	// BasePort is worker 0's HTTP port; worker i listens on BasePort + i.
	// 0 lets the OS pick every worker's port.
	BasePort int
	// AdminPort is the admin API's port, checked against the workers'
	// ports; 0 or negative: not checked.
	AdminPort int
}

// Member is one planned worker: its admin id and validated configuration.
type Member struct {
	// ID is the worker's admin id: its index in the fleet ("0", "1", ...).
	ID     string
	Config *config.Config
}

// Plan turns a Spec into the members of the fleet, every configuration
// going through config.Load, and lays out the ports (see docs/fleet.md):
//
//   - worker i: HTTP port BasePort + i, seed + i;
//   - worker i, DP rank r: every KV-event, replay and FPM port is the
//     configured port + i·stride + r, stride = the fleet's largest dp_size;
//   - worker_id stays the configured one unless two workers would share
//     it; then each such worker gets "-<i>" appended.
//
// Every problem is reported in a *config.Error (exit status 2).
// The startup warnings of config.Load come back once per distinct text.
func Plan(spec Spec) ([]Member, []string, error) {
	groups, err := groupsOf(spec)
	if err != nil {
		return nil, nil, err
	}
	var members []Member
	var probs, warnings []string
	index := 0 // of the group's first worker
	seenWarning := map[string]bool{}
	for gi, g := range groups {
		opts, err := groupOptions(spec.Base, g)
		if err != nil {
			return nil, nil, fleetError("fleet group %d: %v", gi+1, err)
		}
		if hasPortFlag(g.Args) {
			return nil, nil, fleetError("fleet group %d: --port cannot be set per group: worker i listens on the base port + i", gi+1)
		}
		first := index
		index += g.Count
		for i := first; i < index; i++ {
			o := opts
			o.Overlay = maps.Clone(opts.Overlay)
			port := 0
			if spec.BasePort > 0 {
				port = spec.BasePort + i
			}
			o.Overlay["port"] = json.Number(strconv.Itoa(port))
			cfg, warns, err := config.Load(o)
			if err != nil {
				var ce *config.Error
				if errors.As(err, &ce) {
					for _, p := range ce.Problems {
						if spec.File != nil {
							// Say which group of the file is at fault; without
							// a file every worker has the command line's
							// configuration, which the problem names already.
							p = fmt.Sprintf("fleet worker %d (group %d): %s", i, gi+1, p)
						}
						probs = append(probs, p)
					}
					// One group's workers share their problems: report once.
					break
				}
				return nil, nil, err
			}
			for _, w := range warns {
				if !seenWarning[w] {
					seenWarning[w] = true
					warnings = append(warnings, w)
				}
			}
			cfg.Seed += int64(i)
			members = append(members, Member{ID: strconv.Itoa(i), Config: cfg})
		}
	}
	if len(probs) > 0 {
		return nil, nil, &config.Error{Problems: probs}
	}
	if err := layOutEventPorts(members); err != nil {
		return nil, nil, err
	}
	distinctWorkerIDs(members)
	if err := checkCollisions(members, spec.AdminPort); err != nil {
		return nil, nil, err
	}
	return members, warnings, nil
}

func fleetError(format string, args ...any) error {
	return &config.Error{Problems: []string{fmt.Sprintf(format, args...)}}
}

// groupsOf checks the fleet size and returns the groups to build.
func groupsOf(spec Spec) ([]Group, error) {
	if spec.File == nil {
		if spec.Workers < 1 || spec.Workers > MaxWorkers {
			return nil, fleetError("--workers must be between 1 and %d, got %d", MaxWorkers, spec.Workers)
		}
		return []Group{{Count: spec.Workers}}, nil
	}
	total := 0
	for _, g := range spec.File.Workers {
		total += g.Count
	}
	if total > MaxWorkers {
		return nil, fleetError("the fleet file asks for %d workers; the limit is %d", total, MaxWorkers)
	}
	if spec.Workers != 0 && spec.Workers != total {
		return nil, fleetError("--workers %d does not match the fleet file's %d workers", spec.Workers, total)
	}
	if spec.Workers < 0 {
		return nil, fleetError("--workers must be between 1 and %d, got %d", MaxWorkers, spec.Workers)
	}
	return spec.File.Workers, nil
}

// groupOptions layers a group's settings over the command line's: its
// config file replaces --config, its flags override the command line's.
func groupOptions(base config.LoadOptions, g Group) (config.LoadOptions, error) {
	o := base
	o.Overlay = deepCopy(base.Overlay)
	if g.Config != "" {
		o.ConfigPath = g.Config
	}
	if len(g.Args) == 0 {
		return o, nil
	}
	fs := pflag.NewFlagSet("fleet group", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	config.RegisterFlags(fs)
	if err := fs.Parse(config.RewriteArgs(g.Args)); err != nil {
		return o, fmt.Errorf("args: %w", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("args: unexpected positional arguments %q", fs.Args())
	}
	group := config.OptionsFromFlags(fs)
	if group.ConfigPath != "" {
		o.ConfigPath = group.ConfigPath
	}
	if group.ExtraEngineArgs != "" {
		o.ExtraEngineArgs = group.ExtraEngineArgs
	}
	mergeInto(o.Overlay, group.Overlay)
	return o, nil
}

func hasPortFlag(args []string) bool {
	for _, a := range args {
		if a == "--port" || strings.HasPrefix(a, "--port=") {
			return true
		}
	}
	return false
}

// mergeInto copies src over dst, merging nested objects key by key.
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, sm)
				continue
			}
			v = deepCopy(sm)
		}
		dst[k] = v
	}
}

func deepCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	mergeInto(out, m)
	return out
}

// layOutEventPorts moves every worker's KV-event, replay and FPM endpoints
// and its disaggregation bootstrap port by i·stride so that no two workers
// (and no two DP ranks) share one, and its gRPC port by i.
func layOutEventPorts(members []Member) error {
	stride := 1
	for _, m := range members {
		stride = max(stride, m.Config.DPSize)
	}
	var probs []string
	for i, m := range members {
		cfg := m.Config
		off := i * stride
		shift := func(key string, port *int) {
			if *port > 0 {
				*port += off
				if *port+cfg.DPSize-1 > 65535 {
					probs = append(probs, fmt.Sprintf("fleet worker %d: %s %d (+ %d DP ranks) exceeds 65535", i, key, *port, cfg.DPSize-1))
				}
			}
		}
		// One gRPC server per worker: worker i on the configured port + i
		// (0 = OS-assigned for every worker).
		if cfg.GRPCPort > 0 {
			cfg.GRPCPort += i
			if cfg.GRPCPort > 65535 {
				probs = append(probs, fmt.Sprintf("fleet worker %d: grpc_port %d exceeds 65535", i, cfg.GRPCPort))
			}
		}
		shift("zmq_kv_events_port", &cfg.ZMQKVEventsPort)
		shift("zmq_replay_port", &cfg.ZMQReplayPort)
		// One bootstrap listener per worker (all its ranks share it).
		shift("bootstrap_port", &cfg.BootstrapPort)
		if k := cfg.KVEventsConfig; k != nil {
			kc := *k
			var err error
			if kc.Endpoint, err = workerEndpoint(kc.Endpoint, i, off); err != nil {
				probs = append(probs, fmt.Sprintf("fleet worker %d: kv_events_config.endpoint: %v", i, err))
			}
			if kc.ReplayEndpoint != nil && *kc.ReplayEndpoint != "" {
				ep, err := workerEndpoint(*kc.ReplayEndpoint, i, off)
				if err != nil {
					probs = append(probs, fmt.Sprintf("fleet worker %d: kv_events_config.replay_endpoint: %v", i, err))
				}
				kc.ReplayEndpoint = &ep
			}
			cfg.KVEventsConfig = &kc
		}
		if cfg.FPMEndpoint != "" {
			var err error
			if cfg.FPMEndpoint, err = workerEndpoint(cfg.FPMEndpoint, i, off); err != nil {
				probs = append(probs, fmt.Sprintf("fleet worker %d: fpm_endpoint: %v", i, err))
			}
		}
	}
	if len(probs) > 0 {
		return &config.Error{Problems: probs}
	}
	return nil
}

// workerEndpoint is worker i's copy of a ZMQ endpoint: a tcp port moves by
// off (the DP ranks then add their rank on top); an ipc path gets "_w<i>"
// appended; an inproc name stays (each worker has its own ZMQ context).
func workerEndpoint(ep string, i, off int) (string, error) {
	switch {
	case off == 0 || strings.HasPrefix(ep, "inproc://"):
		return ep, nil
	case strings.HasPrefix(ep, "ipc://"):
		return ep + "_w" + strconv.Itoa(i), nil
	}
	return events.OffsetEndpoint(ep, off)
}

// distinctWorkerIDs suffixes worker ids that several workers share.
func distinctWorkerIDs(members []Member) {
	count := map[string]int{}
	for _, m := range members {
		count[m.Config.WorkerID]++
	}
	for i, m := range members {
		if count[m.Config.WorkerID] > 1 {
			m.Config.WorkerID += "-" + strconv.Itoa(i)
		}
	}
}

// checkCollisions refuses two listeners on one port: HTTP ports, the
// admin port and every bound KV-event, replay and FPM tcp port.
func checkCollisions(members []Member, adminPort int) error {
	owners := map[int][]string{}
	claim := func(port int, what string) {
		if port > 0 {
			owners[port] = append(owners[port], what)
		}
	}
	claim(adminPort, "the admin API")
	for i, m := range members {
		cfg := m.Config
		claim(cfg.Port, fmt.Sprintf("worker %d HTTP", i))
		claim(cfg.GRPCPort, fmt.Sprintf("worker %d gRPC", i))
		eo, err := worker.EventsOptions(cfg)
		if err != nil {
			return &config.Error{Problems: []string{fmt.Sprintf("fleet worker %d: %v", i, err)}}
		}
		for r := range max(cfg.DPSize, 1) {
			kv, ok, err := events.KVSettingsFor(eo, r, nil)
			if err != nil {
				return &config.Error{Problems: []string{fmt.Sprintf("fleet worker %d: %v", i, err)}}
			}
			if ok {
				if kv.Bind {
					claim(tcpPort(kv.Endpoint), fmt.Sprintf("worker %d KV events (dp rank %d)", i, r))
				}
				claim(tcpPort(kv.ReplayEndpoint), fmt.Sprintf("worker %d KV replay (dp rank %d)", i, r))
			}
			fpm, ok, err := events.FPMSettingsFor(eo, r)
			if err != nil {
				return &config.Error{Problems: []string{fmt.Sprintf("fleet worker %d: %v", i, err)}}
			}
			if ok && fpm.Bind {
				claim(tcpPort(fpm.Endpoint), fmt.Sprintf("worker %d FPM (dp rank %d)", i, r))
			}
		}
	}
	var probs []string
	ports := make([]int, 0, len(owners))
	for p := range owners {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	for _, p := range ports {
		if o := owners[p]; len(o) > 1 {
			probs = append(probs, fmt.Sprintf("port collision: port %d is used by %s", p, strings.Join(o, " and ")))
		}
	}
	if len(probs) > 0 {
		return &config.Error{Problems: probs}
	}
	return nil
}

// tcpPort returns a tcp:// endpoint's port, 0 for other schemes.
func tcpPort(ep string) int {
	rest, ok := strings.CutPrefix(ep, "tcp://")
	if !ok {
		return 0
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return 0
	}
	p, err := strconv.Atoi(rest[i+1:])
	if err != nil {
		return 0
	}
	return p
}
