package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mocker-server/mocker-server/internal/config"
)

// otherGroup is the --help section of flags without a group: only cobra's
// own --help (TestHelpEveryFlagHasAGroup).
const otherGroup = "Other"

// helpWidth is the column --help wraps flag descriptions at.
const helpWidth = 110

// setGroupedHelp makes cmd's --help print a usage line, the examples, the
// description and then the visible flags by section: the subcommand's own
// sections (in the order given) first, then the configuration groups.
func setGroupedHelp(cmd *cobra.Command, ownSections ...string) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[sectionsAnnotation] = strings.Join(ownSections, "\n")
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		writeGroupedHelp(c.OutOrStdout(), c)
	})
}

// sectionsAnnotation is the command annotation listing its own --help
// sections, one per line.
const sectionsAnnotation = "mocker-server/sections"

func writeGroupedHelp(w io.Writer, c *cobra.Command) {
	fmt.Fprintf(w, "%s\n\nUsage:\n  %s\n", c.Short, c.UseLine())
	if c.Example != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.Long, "\n"))
	}
	for _, sec := range helpSections(c) {
		fmt.Fprintf(w, "\n%s:\n%s", sec.title, sec.flags.FlagUsagesWrapped(helpWidth))
	}
}

// helpSection is one titled block of --help.
type helpSection struct {
	title string
	flags *pflag.FlagSet
}

// helpSections sorts the visible flags of c into their sections, in print
// order; empty sections are left out.
func helpSections(c *cobra.Command) []helpSection {
	var order []string
	if own := c.Annotations[sectionsAnnotation]; own != "" {
		order = strings.Split(own, "\n")
	}
	for _, g := range config.FlagGroups() {
		order = append(order, g.String())
	}
	order = append(order, otherGroup)
	sets := map[string]*pflag.FlagSet{}
	c.InitDefaultHelpFlag()
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		title := config.FlagGroupTitle(f)
		if title == "" || !slices.Contains(order, title) {
			title = otherGroup
		}
		if sets[title] == nil {
			sets[title] = pflag.NewFlagSet(title, pflag.ContinueOnError)
			sets[title].SortFlags = true
		}
		sets[title].AddFlag(f)
	})
	var out []helpSection
	for _, t := range order {
		if fs := sets[t]; fs != nil {
			out = append(out, helpSection{title: t, flags: fs})
		}
	}
	return out
}

// setGroup puts the flags names of fs in the --help section title.
func setGroup(fs *pflag.FlagSet, title string, names ...string) {
	for _, n := range names {
		config.SetFlagGroup(fs, n, title)
	}
}
