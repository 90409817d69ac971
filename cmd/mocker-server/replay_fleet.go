package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/replay"
)

// fleetSpec is one fleet to replay on: groups of identical workers.
type fleetSpec struct {
	label  string
	groups []fleetGroup
}

// fleetGroup is one entry of a fleet file's workers list: count workers
// configured like `serve --config Config Args...`.
type fleetGroup struct {
	Count  int    `json:"count"`
	Config string `json:"config"`
	// Args are serve flags, as a list or one string split on spaces.
	Args fleetArgs `json:"args"`
}

type fleetArgs []string

// UnmarshalJSON accepts ["--max-num-seqs", "64"] or "--max-num-seqs 64".
func (a *fleetArgs) UnmarshalJSON(b []byte) error {
	var list []string
	if err := yaml.Unmarshal(b, &list); err == nil {
		*a = list
		return nil
	}
	var line string
	if err := yaml.Unmarshal(b, &line); err != nil {
		return errors.New("args must be a list of strings or one string")
	}
	*a = strings.Fields(line)
	return nil
}

// readFleet reads a fleet file (YAML or JSON): {workers: [{count, config,
// args}]}. A relative config path is relative to the fleet file.
func readFleet(path string) (fleetSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return fleetSpec{}, err
	}
	var doc struct {
		Workers []fleetGroup `json:"workers"`
	}
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return fleetSpec{}, err
	}
	if len(doc.Workers) == 0 {
		return fleetSpec{}, errors.New("no workers")
	}
	for i := range doc.Workers {
		g := &doc.Workers[i]
		if g.Count < 1 {
			return fleetSpec{}, fmt.Errorf("workers[%d]: count must be ≥ 1, got %d", i, g.Count)
		}
		if g.Config != "" && !filepath.IsAbs(g.Config) {
			g.Config = filepath.Join(filepath.Dir(path), g.Config)
		}
	}
	label := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return fleetSpec{label: label, groups: doc.Workers}, nil
}

// buildWorkers loads each group's configuration the way serve does —
// defaults < group config < --extra-engine-args < the command line's serve
// flags < the group's args — and returns the workers and the fleet's seed
// (its first group's).
func buildWorkers(cmd *cobra.Command, fl fleetSpec, stderr io.Writer) ([]replay.WorkerSpec, uint64, error) {
	var workers []replay.WorkerSpec
	var seed uint64
	for gi, g := range fl.groups {
		opts := config.OptionsFromFlags(cmd.Flags())
		opts.ConfigPath = g.Config
		if len(g.Args) > 0 {
			fs := pflag.NewFlagSet("args", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			config.RegisterFlags(fs)
			if err := fs.Parse(config.RewriteArgs(g.Args)); err != nil {
				return nil, 0, usageErr("fleet %s, workers[%d].args: %v", fl.label, gi, err)
			}
			if fs.NArg() > 0 {
				return nil, 0, usageErr("fleet %s, workers[%d].args: unexpected arguments %q", fl.label, gi, fs.Args())
			}
			group := config.OptionsFromFlags(fs)
			if group.ConfigPath != "" || group.ExtraEngineArgs != "" {
				return nil, 0, usageErr("fleet %s, workers[%d].args: use the group's config key, not --config or --extra-engine-args", fl.label, gi)
			}
			maps.Copy(opts.Overlay, group.Overlay)
		}
		cfg, warnings, err := config.Load(opts)
		if err != nil {
			return nil, 0, err
		}
		for _, w := range warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
		prof, err := loadTimingProfile(cfg)
		if err != nil {
			return nil, 0, err
		}
		if gi == 0 {
			seed = uint64(cfg.Seed)
		}
		for range g.Count {
			workers = append(workers, replay.WorkerSpec{Name: fmt.Sprintf("w%d", len(workers)),
				Engine: cfg.EngineConfig(prof), DPSize: cfg.DPSize})
		}
	}
	return workers, seed, nil
}
