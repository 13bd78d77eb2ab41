package ralphloop

import (
	"context"
	"fmt"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	ucli "github.com/urfave/cli/v2"
)

// ListOptions are list's flags (ralph list binds its own to them, for its swarm form).
type ListOptions struct {
	Format, Status string
	JSON           bool // --format json
}

// AddFlags appends list's flags, each writing into o, to flags.
func (o *ListOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&cli.EnumFlag{StringFlag: ucli.StringFlag{Name: "format", Value: "table", Destination: &o.Format, Usage: "table, json or names"}, Choices: ListFormats, Dialect: cli.Labelled},
		&cli.EnumFlag{StringFlag: ucli.StringFlag{Name: "status", Value: "all", Destination: &o.Status, Usage: "all, running, paused, stopped or failed"}, Choices: ListStatuses, Dialect: cli.Labelled},
		&ucli.BoolFlag{Name: "json", Destination: &o.JSON, Usage: "the same as --format json"},
	)
}

// ListCommand is `list` (also ls): the loops of the swarm directory, as a table, JSON or names.
// (`ralph list` is cmd/ralph's own, with AIWG's loops beside these.)
func ListCommand(c Config) *cli.Command {
	var o ListOptions
	return &cli.Command{
		Name: "list", Aliases: []string{"ls"}, Usage: "list loops (also: ls)",
		UsageText: c.usageText("TOOL list [--format table|json|names] [--status all|running|paused|stopped|failed] [--json]"),
		Flags:     o.AddFlags(nil),
		Action:    c.ListAction(&o),
	}
}

// ListAction is list's action on the flags o.
func (c Config) ListAction(o *ListOptions) func(context.Context, *ucli.Context, cli.Streams) error {
	return c.withLoops(func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error {
		format := o.Format
		if o.JSON {
			format = "json"
		}
		status := o.Status
		loops, err := ls.Loops(ctx)
		if err != nil {
			return err
		}
		var shown []loop.Listed
		for _, lp := range loops {
			if status == "all" || lp.State.Status == status {
				shown = append(shown, lp)
			}
		}
		switch format {
		case "json":
			fmt.Fprintf(s.Out, "%s\n", loop.ListJSON(shown))
		case "names":
			for _, lp := range shown {
				fmt.Fprintln(s.Out, lp.State.WorkerName)
			}
		default:
			if len(shown) == 0 {
				return nil
			}
			rows := [][]string{{"NAME", "RALPH_STATUS", "WORKER_STATUS", "ITERATION", "FAILURES"}}
			for _, lp := range shown {
				st := lp.State
				rows = append(rows, []string{st.WorkerName, st.Status, lp.WorkerStatus,
					fmt.Sprintf("%d/%d", st.CurrentIteration, st.MaxIterations),
					fmt.Sprintf("%d/%d", st.ConsecutiveFailures, st.TotalFailures)})
			}
			cli.Table(s.Out, rows)
		}
		return nil
	})
}

// ListFormats and ListStatuses are list's --format and --status values, as argparse had them.
var (
	ListFormats  = []string{"table", "json", "names"}
	ListStatuses = []string{"all", "running", "paused", "stopped", "failed"}
)
