package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/fleet"
)

// fleetSection is the --help section of fleet's own flags.
const fleetSection = "Fleet"

func newFleetCmd(stderr io.Writer) *cobra.Command {
	var (
		admin     adminFlags
		workers   int
		fleetFile string
		basePort  int
	)
	cmd := &cobra.Command{
		Use:   "fleet [MODEL]",
		Short: "Run N simulated workers in one process, with an admin API to break them",
		Long: "fleet runs --workers N complete servers in one process (worker i on --base-port + i),\n" +
			"or the groups of a --fleet-file, each configured by the serve flags given here.\n" +
			"See docs/fleet.md for the port layout and the admin API.",
		Example: "  mocker-server fleet --workers 4 --base-port 8000 --admin-port 9000\n" +
			"  mocker-server fleet --fleet-file fleet.yaml --stagger-delay 100ms --admin-key s3cret",
		Args: atMostModel,
		RunE: func(cmd *cobra.Command, args []string) error {
			base, err := serveLoadOptions(cmd, args)
			if err != nil {
				return err
			}
			spec := fleet.Spec{Workers: workers, Base: base, BasePort: basePort, AdminPort: admin.port}
			if f := cmd.Flags().Lookup("port"); f.Changed {
				// --port is the base when given.
				p, err := portFlag(f.Value.String())
				if err != nil {
					return err
				}
				if cmd.Flags().Changed("base-port") && p != basePort {
					return &config.Error{Problems: []string{"--port and --base-port disagree: give one of them (worker i listens on the base + i)"}}
				}
				spec.BasePort = p
			}
			switch {
			case !cmd.Flags().Changed("workers") && fleetFile == "":
				return &config.Error{Problems: []string{"fleet needs --workers N or --fleet-file FILE"}}
			case cmd.Flags().Changed("workers") && (workers < 1 || workers > fleet.MaxWorkers):
				return &config.Error{Problems: []string{fmt.Sprintf("--workers must be between 1 and %d, got %d", fleet.MaxWorkers, workers)}}
			}
			if fleetFile != "" {
				if spec.File, err = fleet.ReadFile(fleetFile); err != nil {
					return &config.Error{Problems: []string{err.Error()}}
				}
			}
			members, warnings, err := fleet.Plan(spec)
			if err != nil {
				return err
			}
			printWarnings(stderr, warnings)
			printNoEffect(cmd, stderr)
			if err := startPprof(stderr); err != nil {
				return err
			}
			return fleetFunc(cmd, members, admin.fleetOptions(stderr))
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&workers, "workers", 0, "number of workers (1.."+strconv.Itoa(fleet.MaxWorkers)+"); with --fleet-file, the sum of its counts")
	fs.StringVar(&fleetFile, "fleet-file", "", "YAML file of worker groups (count, config, args)")
	fs.IntVar(&basePort, "base-port", fleet.DefaultBasePort, "HTTP port of worker 0; worker i listens on base + i (0: free ports)")
	fs.DurationVar(&admin.staggerDelay, "stagger-delay", 0, "start worker i after i × this delay")
	config.RegisterFlags(fs)
	addAdminFlags(fs, &admin, 9000)
	setGroup(fs, fleetSection, "workers", "fleet-file", "base-port", "stagger-delay")
	setGroupedHelp(cmd, fleetSection)
	return cmd
}

// fleetFunc runs the planned fleet until the command's context ends.
var fleetFunc = func(cmd *cobra.Command, members []fleet.Member, opts fleet.Options) error {
	return fleet.Run(cmd.Context(), members, opts)
}

// portFlag parses the --port text given to fleet.
func portFlag(text string) (int, error) {
	p, err := strconv.Atoi(text)
	if err != nil || p < 0 || p > 65535 {
		return 0, &config.Error{Problems: []string{fmt.Sprintf("--port: invalid port %q", text)}}
	}
	return p, nil
}
