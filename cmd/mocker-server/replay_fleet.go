package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/fleet"
	"github.com/mocker-server/mocker-server/internal/replay"
	"github.com/mocker-server/mocker-server/internal/worker"
)

// fleetSpec is one fleet to replay on: a fleet file (the format of
// `mocker-server fleet --fleet-file`), or count workers of one --config.
type fleetSpec struct {
	label  string
	file   *fleet.File
	count  int
	config string
}

func readFleetSpec(path string) (fleetSpec, error) {
	f, err := fleet.ReadFile(path)
	if err != nil {
		return fleetSpec{}, usageErr("%v", err)
	}
	return fleetSpec{label: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), file: f}, nil
}

// buildWorkers plans the fleet the way `mocker-server fleet` does — each
// group's config replaces --config and its args override the command
// line's serve flags (fleet.Plan) — and returns one replay worker per
// member and the seed of worker 0. files reads each timing profile once.
func buildWorkers(cmd *cobra.Command, fl fleetSpec, files worker.Loaders, stderr io.Writer) ([]replay.WorkerSpec, uint64, error) {
	base := config.OptionsFromFlags(cmd.Flags())
	base.ConfigPath = fl.config
	members, warnings, err := fleet.Plan(fleet.Spec{Workers: fl.count, File: fl.file, Base: base})
	if err != nil {
		return nil, 0, err
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	gpus, err := memberGPUs(cmd.Flags(), fl, len(members))
	if err != nil {
		return nil, 0, err
	}
	workers := make([]replay.WorkerSpec, len(members))
	for i, m := range members {
		if m.Config.Disaggregated() {
			// A replayed request carries no kv_transfer_params, so a
			// prefill or decode role would quietly serve it aggregated.
			what := "--disaggregation-mode " + string(m.Config.WorkerType)
			if t := m.Config.PDConnector(); t != nil {
				what = "--kv-transfer-config with " + t.KVConnector
			}
			return nil, 0, &config.Error{Problems: []string{fmt.Sprintf(
				"not supported in replay: disaggregated prefill/decode (worker %s: %s); replay simulates aggregated workers",
				m.ID, what)}}
		}
		prof, err := files.TimingProfile(m.Config)
		if err != nil {
			return nil, 0, err
		}
		workers[i] = replay.WorkerSpec{Name: "w" + m.ID, Engine: m.Config.EngineConfig(prof), DPSize: m.Config.DPSize,
			GPUsPerRank: gpus[i]}
	}
	// fleet.Plan gives worker i the seed + i; the replay's own random
	// choices use worker 0's, the configured seed.
	return workers, uint64(members[0].Config.Seed), nil
}
