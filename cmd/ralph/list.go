package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/agentfleet/fleet/cmd/internal/ralphloop"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	"github.com/agentfleet/fleet/internal/statedir"
	ucli "github.com/urfave/cli/v2"
)

// listEntry is one loop in ralph list --json: Kind "aiwg" (Loop set) or "swarm" (Swarm set).
type listEntry struct {
	Kind  string            `json:"kind"`
	Loop  *aiwg.LoopSummary `json:"aiwg,omitempty"`
	Swarm *loop.Summary     `json:"swarm,omitempty"`
}

// listCommand is `ralph list` (also ls): the AIWG loops of the current directory's workspace,
// then swarm's loops ($SWARM_DIR). With --format or --status it is `swarm ralph list`: swarm's
// loops alone, as the Python swarm listed them (docs/ralph.md).
func listCommand() *cli.Command {
	// --format and --status are swarm ralph list's, which runs with them; --json is ours too.
	var o ralphloop.ListOptions
	var formatGiven, statusGiven bool
	return &cli.Command{
		Name: "list", Aliases: []string{"ls"}, OwnSignals: true,
		Help: "ralph list [--json] - AIWG's loops of this workspace and swarm's loops ($SWARM_DIR)\n" +
			"ralph list --format table|json|names [--status all|running|paused|stopped|failed]\n" +
			"    - swarm's loops alone, as 'swarm ralph list' prints them\n",
		Flags: []ucli.Flag{&ucli.BoolFlag{Name: "json", Destination: &o.JSON},
			&cli.EnumFlag{StringFlag: ucli.StringFlag{Name: "format", Value: "table", Destination: &o.Format, Action: cli.Given[string](&formatGiven)},
				Choices: ralphloop.ListFormats, Dialect: cli.Labelled},
			&cli.EnumFlag{StringFlag: ucli.StringFlag{Name: "status", Value: "all", Destination: &o.Status, Action: cli.Given[string](&statusGiven)},
				Choices: ralphloop.ListStatuses, Dialect: cli.Labelled}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			if c.NArg() > 0 {
				return cli.Usagef("ralph list takes no operand")
			}
			if formatGiven || statusGiven {
				// The Python swarm's ralph list: swarm's loops, its formats and filter.
				return loopConfig().ListAction(&o)(ctx, c, s)
			}
			ws, err := workspace()
			if err != nil {
				return err
			}
			loops, err := ws.List(ctx)
			if err != nil {
				return err
			}
			entries := []listEntry{}
			for i := range loops {
				entries = append(entries, listEntry{Kind: "aiwg", Loop: &loops[i]})
			}
			if sw, err := statedir.SwarmFromEnv(os.LookupEnv); err == nil {
				swarm, err := loop.List(ctx, sw.Root)
				if err != nil {
					// AIWG's loops are still worth listing.
					fmt.Fprintf(s.Err, "%s: warning: swarm's loops in %s: %v\n", tool, sw.Root, err)
				}
				for i := range swarm {
					entries = append(entries, listEntry{Kind: "swarm", Swarm: &swarm[i]})
				}
			}
			if o.JSON {
				return writeJSON(s.Out, entries)
			}
			if len(entries) == 0 {
				fmt.Fprintln(s.Out, "No ralph loops")
				return nil
			}
			tw := tabwriter.NewWriter(s.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tLOOP\tSTATUS\tITERATION\tTASK")
			for _, e := range entries {
				if e.Loop != nil {
					fmt.Fprintln(tw, e.Loop.Row())
					continue
				}
				sl := e.Swarm
				fmt.Fprintf(tw, "swarm\t%s\t%s\t%d/%d\t\n", aiwg.Clean(sl.Name), sl.Status, sl.Iteration, sl.MaxIterations)
			}
			return tw.Flush()
		},
	}
}
