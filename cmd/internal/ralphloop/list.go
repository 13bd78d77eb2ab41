package ralphloop

import (
	"context"
	"fmt"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	ucli "github.com/urfave/cli/v2"
)

// ListCommand is `list` (also ls): the loops of the swarm directory, as a table, JSON or names.
// (`ralph list` is cmd/ralph's own, with AIWG's loops beside these.)
func ListCommand(c Config) *cli.Command {
	return &cli.Command{
		Name: "list", Aliases: []string{"ls"}, Usage: "list loops (also: ls)",
		UsageText: c.usageText("TOOL list [--format table|json|names] [--status all|running|paused|stopped|failed] [--json]"),
		Flags: []ucli.Flag{
			&cli.EnumFlag{StringFlag: ucli.StringFlag{Name: "format", Value: "table", Usage: "table, json or names"}, Choices: ListFormats, Dialect: cli.Labelled},
			&cli.EnumFlag{StringFlag: ucli.StringFlag{Name: "status", Value: "all", Usage: "all, running, paused, stopped or failed"}, Choices: ListStatuses, Dialect: cli.Labelled},
			&ucli.BoolFlag{Name: "json", Usage: "the same as --format json"},
		},
		Action: c.withLoops(func(ctx context.Context, uc *ucli.Context, s cli.Streams, ls *loop.Loops) error {
			format := uc.String("format")
			if uc.Bool("json") {
				format = "json"
			}
			status := uc.String("status")
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
		}),
	}
}

// ListFormats and ListStatuses are list's --format and --status values, as argparse had them.
var (
	ListFormats  = []string{"table", "json", "names"}
	ListStatuses = []string{"all", "running", "paused", "stopped", "failed"}
)
