package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/supervise"
	ucli "github.com/urfave/cli/v2"
)

const tool = "dispatch"

var stateDirFlag = &ucli.StringFlag{Name: "state-dir", Value: "state", EnvVars: []string{"STATE_DIR"},
	Usage: "the state directory (`DIR`)"}

// newApp builds a urfave/cli app for the dispatch form or one verb, with usage errors as exit 2.
func newApp(name, usage, usageText string, flags []ucli.Flag, stdout, stderr io.Writer, action ucli.ActionFunc) *ucli.App {
	return &ucli.App{
		Name: name, Usage: usage, UsageText: usageText, Flags: append(flags, stateDirFlag),
		Writer: stdout, ErrWriter: stderr, HideHelpCommand: true, Action: action,
		Description:  "Exit status: 0 ok (with --wait: done), 1 failure, 2 usage error, 124 with --wait: timed out.",
		OnUsageError: func(_ *ucli.Context, err error, _ bool) error { return cli.Usagef("%v", err) },
	}
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	var err error
	verb := ""
	if len(args) > 1 {
		verb = args[1]
	}
	// The verb is the app's name; flags may follow its arguments (dispatch wait bd-1 --state-dir x).
	verbArgs := func(valued map[string]bool) []string {
		return append([]string{args[1]}, cli.Interspersed(args[2:], valued)...)
	}
	valued := map[string]bool{"state-dir": true}
	switch verb {
	case supervise.SuperviseVerb:
		cancel() // the supervisor handles its own signals
		err = superviseApp(stdout, stderr).Run(verbArgs(valued))
	case "ps":
		err = psApp(stdout, stderr).RunContext(ctx, verbArgs(valued))
	case "wait":
		err = waitApp(stdout, stderr).RunContext(ctx, verbArgs(valued))
	case "kill":
		err = killApp(stdout, stderr).RunContext(ctx, verbArgs(valued))
	case "reconcile":
		err = reconcileApp(stdout, stderr).RunContext(ctx, verbArgs(valued))
	case "attach":
		err = attachApp(stdout, stderr).RunContext(ctx, verbArgs(valued))
	default:
		err = dispatchApp(stdin, stdout, stderr).RunContext(ctx, append([]string{tool}, cli.Interspersed(args[1:], dispatchValued)...))
	}
	return cli.Exit(tool, err, stderr)
}

var dispatchValued = map[string]bool{"branch": true, "verify": true, "timeout": true, "state-dir": true}

func dispatchApp(stdin io.Reader, stdout, stderr io.Writer) *ucli.App {
	flags := []ucli.Flag{
		&ucli.StringFlag{Name: "branch", Usage: "check out (or create) `BRANCH` in the repo; with --worktree, the worktree's branch"},
		&ucli.BoolFlag{Name: "force", Usage: "replace a running agent of the same bead"},
		&ucli.BoolFlag{Name: "relay", Usage: "accepted for dispatch.sh compatibility; no effect"},
		&ucli.BoolFlag{Name: "no-relay", Usage: "accepted for dispatch.sh compatibility; no effect"},
		&ucli.BoolFlag{Name: "no-context", Usage: "send the prompt as it is, without the other agents and coordination sections"},
		&ucli.BoolFlag{Name: "wait", Usage: "block until the outcome is final; exit 0 done, 1 failed, 124 timeout"},
		&ucli.BoolFlag{Name: "retry", Usage: "with --wait: dispatch the next attempt while will_retry holds"},
		&ucli.BoolFlag{Name: "worktree", Usage: "run the agent in its own git worktree, <repo>-worktrees/BEAD"},
		&ucli.StringFlag{Name: "verify", Usage: "run `CMD` (a shell command) in the repo after the agent exits; its outcome fills verification"},
		&ucli.StringFlag{Name: "timeout", Usage: "stop the agent after `DURATION` (seconds, or 90s, 30m, 1h); default DISPATCH_WATCH_TIMEOUT"},
		&ucli.BoolFlag{Name: "no-tmux", Usage: "run the supervisor as a detached process instead of in tmux (DISPATCH_BACKEND=process)"},
	}
	app := newApp(tool, "start an AI coding agent on a bead, supervised",
		"dispatch BEAD REPO AGENT[:MODEL] PROMPT [TEMPLATE] [flags]\n"+
			"dispatch ps | wait BEAD... | kill BEAD | reconcile | attach BEAD",
		flags, stdout, stderr, func(c *ucli.Context) error {
			a := c.Args().Slice()
			if len(a) < 4 || len(a) > 5 {
				return cli.Usagef("expected BEAD REPO AGENT[:MODEL] PROMPT [TEMPLATE], got %d argument(s)", len(a))
			}
			o := &launchOptions{bead: a[0], repo: a[1], agentArg: a[2], prompt: a[3],
				branch: c.String("branch"), force: c.Bool("force"), noContext: c.Bool("no-context"),
				worktree: c.Bool("worktree"), noTmux: c.Bool("no-tmux"), wait: c.Bool("wait"),
				retry: c.Bool("retry"), verify: c.String("verify")}
			if len(a) == 5 {
				o.template = a[4]
			}
			if o.retry && !o.wait {
				return cli.Usagef("--retry needs --wait")
			}
			if v := c.String("timeout"); v != "" {
				d, err := parseDuration(v)
				if err != nil {
					return err
				}
				o.timeout = d
			}
			s, err := loadSettings(c.String("state-dir"))
			if err != nil {
				return err
			}
			return dispatchAndMaybeWait(c.Context, o, s, stdin, stdout, stderr)
		})
	return app
}

// dispatchAndMaybeWait launches the attempt and, with --wait, follows it to its end (and with
// --retry, launches the next attempts while the result says it will be retried).
func dispatchAndMaybeWait(ctx context.Context, o *launchOptions, s *settings, stdin io.Reader, stdout, stderr io.Writer) error {
	for {
		l, err := launch(ctx, o, s, stdin, stdout)
		if err != nil || !o.wait {
			return err
		}
		res, err := waitFor(ctx, s, l.bead, l.attempt, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, outcomeLine(res))
		if o.retry && res.WillRetry {
			fmt.Fprintf(stdout, "Retrying %s: attempt %d/%d\n", l.bead, res.Attempt+1, res.MaxRetries)
			o.force = false
			continue
		}
		return exitFor(res)
	}
}
