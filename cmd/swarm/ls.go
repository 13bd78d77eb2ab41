package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

// The verbs that look at workers: ls, status, peek.

// lsOptions are ls's flags.
type lsOptions struct{ format, status, tag string }

// AddFlags appends ls's flags, each writing into o, to flags.
func (o *lsOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		choiceFlag(ucli.StringFlag{Name: "format", Value: "table", Destination: &o.format, Usage: "table, json (full workers) or names (one a line)"}, "table", "json", "names"),
		choiceFlag(ucli.StringFlag{Name: "status", Value: "all", Destination: &o.status, Usage: "running, stopped or all"}, "running", "stopped", "all"),
		&ucli.StringFlag{Name: "tag", Destination: &o.tag, Usage: "only workers with this tag (`T`)"},
	)
}

func lsCommand() *cli.Command {
	var o lsOptions
	return &cli.Command{
		Name: "ls", Usage: "list workers", UsageText: "swarm ls [--format table|json|names] [--status running|stopped|all] [--tag T]",
		Flags: o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			var shown []*worker.Worker
			lives := sw.LiveAll(ctx, st.Workers) // the lost ones closed in one write
			for i, w := range st.Workers {
				x := liveView(w, lives[i])
				if want := o.status; want != "all" && x.Status != want {
					continue
				}
				if t := o.tag; t != "" && !slices.Contains(w.Tags, t) {
					continue
				}
				shown = append(shown, x)
			}
			switch o.format {
			case "json":
				fmt.Fprintf(s.Out, "%s\n", worker.EncodeWorkers(shown))
			case "names":
				for _, w := range shown {
					fmt.Fprintln(s.Out, w.Name)
				}
			default:
				printTable(s, shown)
			}
			return nil
		},
	}
}

// liveView is w as ls --format json and status --json show it: its status and activity as
// they are now.
func liveView(w *worker.Worker, live swarm.Liveness) *worker.Worker {
	x := *w
	x.Status = statusWord(live.Running)
	x.Metadata = withLiveActivity(w, live.Running)
	if o := live.Outcome; o != nil && !x.Metadata.Has(worker.MetaFinished) {
		// Ended, and its supervisor is still writing that down: say it already.
		x.Metadata = x.Metadata.SetValue(worker.MetaExitCode, o.ExitCode).SetValue(worker.MetaFinished, o.Finished).
			SetValue(worker.MetaReason, o.Reason)
	}
	return &x
}

func statusWord(running bool) string {
	if running {
		return worker.StatusRunning
	}
	return worker.StatusStopped
}

// printTable prints ls's table as the Python swarm did (cli.Table); nothing when there are no
// workers, not even the header.
func printTable(s cli.Streams, ws []*worker.Worker) {
	if len(ws) == 0 {
		return
	}
	// The Python swarm's columns first, as it printed them; ours after them, so that scripts
	// that cut its columns still find them where they were.
	rows := [][]string{{"NAME", "STATUS", "PID/WINDOW", "STARTED", "WORKTREE", "TAG", "ACTIVITY", "EXIT"}}
	now := time.Now()
	for _, w := range ws {
		where := "-"
		if w.Tmux != nil {
			where = w.Tmux.Session + ":" + w.Tmux.Window
		} else if w.PID != nil && *w.PID != 0 {
			where = fmt.Sprint(*w.PID)
		}
		wt, tag := "-", "-"
		if w.Worktree != nil {
			wt = w.Worktree.Path
		}
		if len(w.Tags) > 0 {
			tag = strings.Join(w.Tags, ",")
		}
		rows = append(rows, []string{w.Name, w.Status, where, age(w.Started, now), wt, tag,
			activityWords(w, w.Status == worker.StatusRunning, now), exitCell(w)})
	}
	cli.Table(s.Out, rows)
}

func age(started string, now time.Time) string {
	t, ok := worker.ParseTimestamp(started)
	if !ok {
		return "?"
	}
	return worker.Age(t, now)
}

// activityWords is ls' ACTIVITY cell: "-" for a worker that is not running or has no
// recorded activity (one the Python swarm started).
func activityWords(w *worker.Worker, running bool, now time.Time) string {
	if !running {
		return "-"
	}
	a, ok := w.Activity()
	if !ok {
		return "-"
	}
	return a.Describe(now)
}

// withLiveActivity returns w's metadata as ls --format json shows it: the recorded activity
// of a running worker, "activity": null for one that is not running, and "waiting_input" only
// while it runs.
func withLiveActivity(w *worker.Worker, running bool) worker.Object {
	md := append(worker.Object(nil), w.Metadata...)
	if !running && md.Has(worker.MetaActivity) {
		md = md.SetValue(worker.MetaActivity, nil)
	}
	if !running {
		md = md.Delete(worker.MetaWaitingInput)
	}
	return md
}

// exitWords says how a worker's agent ended: "exit code 3" when it exited by itself, "exit
// code 143: killed" when something ended it (the supervisor's reason: killed by swarm kill,
// session-killed when its tmux window or server went, supervisor-signal-SIGTERM, ...), or
// why the code is not known.
func exitWords(o *worker.Outcome) string {
	if o.ExitCode == nil {
		return "exit code unknown: " + o.Reason
	}
	if o.Reason == "" || strings.HasPrefix(o.Reason, "agent-exit-") {
		return fmt.Sprintf("exit code %d", *o.ExitCode)
	}
	return fmt.Sprintf("exit code %d: %s", *o.ExitCode, o.Reason)
}

// exitCell is ls' EXIT column: for a stopped worker of ours, its agent's exit code, with the
// reason when something else than the agent ended it ("143 killed", "? supervisor-lost");
// "-" for a running worker and for one the Python swarm started (it never knew).
func exitCell(w *worker.Worker) string {
	o, ok := w.Ended()
	if w.Status == worker.StatusRunning || !ok {
		return "-"
	}
	code := "?"
	if o.ExitCode != nil {
		code = fmt.Sprint(*o.ExitCode)
	}
	if o.Reason == "" || strings.HasPrefix(o.Reason, "agent-exit-") {
		return code
	}
	return code + " " + o.Reason
}

func statusCommand() *cli.Command {
	var asJSON bool
	return &cli.Command{
		Name: "status", Usage: "a worker's status", Operand: "workers", UsageText: "swarm status NAME [--json]",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "json", Destination: &asJSON, Usage: "print the worker as ls --format json prints each (waiting_input: since when its agent waits for input)"},
		},
		ExitCodes: []cli.ExitCode{{Code: 0, Meaning: "running"}, {Code: 1, Meaning: "stopped (or failure)"},
			{Code: 2, Meaning: "not found (or usage error)"}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			if c.NArg() != 1 {
				return cli.Usagef("the following arguments are required: name")
			}
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			w, err := one(st, c.Args().First(), 2)
			if err != nil {
				return err
			}
			live := sw.Live(ctx, w)
			if asJSON {
				fmt.Fprintf(s.Out, "%s\n", worker.EncodeWorker(liveView(w, live)))
				if !live.Running {
					return &cli.ExitError{Code: 1}
				}
				return nil
			}
			line := fmt.Sprintf("%s: %s (", w.Name, statusWord(live.Running))
			if w.Tmux != nil {
				line += fmt.Sprintf("tmux window %s:%s", w.Tmux.Session, w.Tmux.Window)
			} else if w.PID != nil && *w.PID != 0 {
				line += fmt.Sprintf("pid %d", *w.PID)
			}
			if w.Worktree != nil {
				line += ", worktree " + w.Worktree.Path
			}
			line += ", uptime " + age(w.Started, time.Now())
			if o := live.Outcome; o != nil {
				line += ", " + exitWords(o)
			}
			fmt.Fprintln(s.Out, line+")")
			if !live.Running {
				return &cli.ExitError{Code: 1}
			}
			return nil
		},
	}
}

// peekOptions are peek's flags.
type peekOptions struct {
	lines int
	all   bool
}

// AddFlags appends peek's flags, each writing into o, to flags.
func (o *peekOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.IntFlag{Name: "lines", Aliases: []string{"n"}, Value: 30, Destination: &o.lines, Usage: "lines to show (`N`)"},
		&ucli.BoolFlag{Name: "all", Destination: &o.all, Usage: "every running worker"},
	)
}

func peekCommand() *cli.Command {
	var o peekOptions
	return &cli.Command{
		Name: "peek", Operand: "workers", Usage: "show a worker's screen", UsageText: "swarm peek [NAME] [-n N] [--all]",
		Flags:     o.AddFlags(nil),
		ExitCodes: []cli.ExitCode{{Code: 0, Meaning: "ok"}, {Code: 1, Meaning: "failure"}, {Code: 2, Meaning: "not found (or usage error)"}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			n := o.lines
			if o.all {
				lives := sw.LiveAll(ctx, st.Workers) // the lost ones closed in one write
				for i, w := range st.Workers {
					if !lives[i].Running {
						continue
					}
					if text, err := sw.Screen(ctx, w, n); err == nil {
						fmt.Fprintf(s.Out, "=== %s ===\n%s\n", w.Name, text)
					}
				}
				return nil
			}
			if c.NArg() == 0 {
				return errors.New("worker name required (or use --all)")
			}
			w, err := one(st, c.Args().First(), 2)
			if err != nil {
				return err
			}
			if !sw.Live(ctx, w).Running {
				return fmt.Errorf("worker '%s' is not running", w.Name)
			}
			text, err := sw.Screen(ctx, w, n)
			if err != nil {
				return fmt.Errorf("failed to capture pane for '%s': %v", w.Name, err)
			}
			fmt.Fprint(s.Out, text)
			return nil
		},
	}
}
