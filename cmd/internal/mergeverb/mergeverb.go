// Package mergeverb is what `swarm run merge` and `ralph queue merge` share: their flags, read
// into Options once, and the report of a mergeback.Merge (text or --json). Each verb finds its
// run's completed branches and base, and calls Run.
package mergeverb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentfleet/fleet/cmd/internal/dispatchenv"
	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/mergeback"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	ucli "github.com/urfave/cli/v2"
)

// Options are the merge verbs' flags: AddFlags binds them, Check reads them into Test, Into,
// Agent and Model.
type Options struct {
	// TestDefault is what runs without --test, as the help says it; set before AddFlags.
	TestDefault string
	DryRun      bool
	JSON        bool
	StateDir    string
	// OnEvent is --on-event's command line: the hook told each merge landed (Hook).
	OnEvent string

	// Test is --test's argv, nil when it is not given (the verb's own default applies); Into,
	// Agent and Model are --into and --agent NAME[:MODEL]. Check fills them.
	Test         []string
	Into         string
	Agent, Model string

	testLine, agentSpec  string
	testGiven, intoGiven bool
	agentGiven           bool
}

// AddFlags appends the merge verbs' flags, each writing into o, to flags.
func (o *Options) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.StringFlag{Name: "test", Destination: &o.testLine, Action: cli.Given[string](&o.testGiven), DefaultText: o.TestDefault,
			Usage: "run `CMD` in the merged tree after each merge (its words split without a shell: quotes group, nothing is expanded); a merge whose test fails is not landed"},
		&ucli.StringFlag{Name: "into", Destination: &o.Into, Action: cli.Given[string](&o.intoGiven),
			Usage: "land the merges on `BRANCH` (made from the base when missing) instead of the base"},
		&ucli.StringFlag{Name: "agent", Destination: &o.agentSpec, Action: cli.Given[string](&o.agentGiven),
			Usage: "hand a conflict to agent `NAME` (as a task of its own, supervised and recorded) instead of stopping; NAME:MODEL picks its model"},
		&ucli.BoolFlag{Name: "dry-run", Destination: &o.DryRun, Usage: "print the merge order and the conflict ahead, and change nothing"},
		&ucli.BoolFlag{Name: "json", Destination: &o.JSON, Usage: "print the result as JSON"},
		&ucli.StringFlag{Name: "on-event", Destination: &o.OnEvent,
			Usage: "run `CMD` (no shell) at each merge landed, the merge event as one line of JSON on its stdin, as the run's --on-event hook is told its events"},
		cli.StateDirFlagInto(&o.StateDir),
	)
}

// Hook is --on-event's hook (one that does nothing without it), its failures said on stderr
// as warnings (warn: the tool's prefix, "swarm: "); a command line that does not split is a
// usage error. The verb tells it each merge landed (mergeback.Plan.Landed), off the merge's
// path, and gives it HookDrain once the merges are over (Hook.CloseWithin).
func (o *Options) Hook(stderr io.Writer, warn string) (*hook.Hook, error) {
	h, err := hook.New(o.OnEvent)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	h.Warn = func(err error) { fmt.Fprintf(stderr, "%swarning: %v\n", warn, err) }
	return h, nil
}

// HookDrain bounds how long a merge verb, its merges over, waits for its hook to be told the
// last of them: a hook that hangs holds its end that long at most.
const HookDrain = hook.DefaultTimeout

// ExitCodes are the merge verbs' exit codes; notFound is what the verb's 2 means besides a
// usage error.
func ExitCodes(notFound string) []cli.ExitCode {
	return []cli.ExitCode{{Code: 0, Meaning: "every completed branch is merged (or would merge, with --dry-run)"},
		{Code: 1, Meaning: "a conflict or a failed test stopped it (the base is at the last good merge), the target is checked out with uncommitted changes, or git failed"},
		{Code: 2, Meaning: "usage error, a test command that is not there, or " + notFound}}
}

// Check reads --test, --into and --agent; a bad one is a usage error.
func (o *Options) Check() error {
	if o.testGiven {
		argv, err := SplitTest(o.testLine)
		if err != nil {
			return cli.Usagef("--test %q: %v", o.testLine, err)
		}
		o.Test = argv
	}
	if o.intoGiven && (o.Into == "" || strings.HasPrefix(o.Into, "-")) {
		return cli.Usagef("--into %q: give a branch name", o.Into)
	}
	if o.agentGiven {
		o.Agent, o.Model, _ = strings.Cut(o.agentSpec, ":")
		if o.Agent == "" {
			return cli.Usagef("--agent %q: give an agent's name", o.agentSpec)
		}
	}
	return nil
}

// Resolver is --agent: the conflict goes to the agent as an attempt of this machine's executor
// (executor.Local), supervised by this binary's `VERB __supervise` and recorded in stateDir,
// the agent's command checked before anything starts. The attempt has dispatch's settings as
// every dispatched attempt: DISPATCH_WATCH_TIMEOUT (a hung agent is stopped, and the merge
// stops as unresolved), DISPATCH_KILL_GRACE, DISPATCH_MIN_FREE_MB.
func Resolver(o *Options, repo, verb string) (mergeback.Resolver, error) {
	agents, err := agent.LoadConfig(os.LookupEnv, "")
	if errors.Is(err, agent.ErrConfigEnvEmpty) {
		return nil, cli.Usagef("%v", err)
	}
	if err != nil {
		return nil, err
	}
	prof, err := agents.Lookup(o.Agent)
	if err != nil {
		return nil, cli.Usagef("--agent %s: %v", o.Agent, err)
	}
	if err := agent.CheckCommand(prof.Command, repo, os.Environ(), os.Getenv("PATH")); err != nil {
		return nil, fmt.Errorf("--agent %s: its %v; install it, or name another agent; nothing was merged", o.Agent, err)
	}
	stateDir, err := filepath.Abs(o.StateDir)
	if err != nil {
		return nil, err
	}
	exe, err := proc.Self()
	if err != nil {
		return nil, err
	}
	env := dispatchenv.Read(os.Getenv)
	timeout, err := env.WatchTimeout.Seconds()
	if err != nil {
		return nil, err
	}
	grace, err := env.KillGrace.Seconds()
	if err != nil {
		return nil, err
	}
	free, err := env.MinFreeMB.Int()
	if err != nil {
		return nil, err
	}
	local := &executor.Local{N: 1, StateDir: stateDir, Self: []string{exe, verb, supervise.SuperviseVerb, "--state-dir", stateDir},
		Agents: agents, Getenv: os.Getenv, Env: os.Environ(), KillGrace: grace, MinFreeMB: int64(free), Template: mergeback.Template}
	return &mergeback.AgentResolver{Exec: local, Agent: o.Agent, Model: o.Model, Timeout: timeout}, nil
}

// ScratchName is the scratch worktree's name for a run (an execution or plan id), beside its
// tasks' worktrees: the leading '.' keeps it apart from theirs, which start with a letter or
// digit, so that a merge never clears a task's worktree.
func ScratchName(owner string) string { return ".merge-" + owner }

// SplitTest splits a test command line as the hooks' are (hook.Split): no shell.
func SplitTest(s string) ([]string, error) {
	argv, err := hook.Split(s)
	if err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		return nil, errors.New("the command is empty")
	}
	return argv, nil
}

// Run merges p and reports it on s: the landed merges and the stop on stdout (or the result as
// JSON), progress on stderr prefixed with prefix. A stop is exit 1 with its one line.
func Run(ctx context.Context, s cli.Streams, prefix string, o *Options, p mergeback.Plan) error {
	if !o.JSON {
		p.Log = prefixed{w: s.Err, prefix: prefix}
	}
	if c, ok := p.Resolver.(interface{ Close() }); ok {
		defer c.Close() // the resolving agent's slot supervisor: none outlives the merge
	}
	res, err := mergeback.Merge(ctx, p)
	var stopped *mergeback.StoppedError
	if err != nil && !errors.As(err, &stopped) {
		if errors.Is(err, mergeback.ErrTestCommand) {
			return cli.Usagef("%v", err)
		}
		return err
	}
	if o.JSON {
		b, jerr := json.MarshalIndent(res, "", "  ")
		if jerr != nil {
			return jerr
		}
		fmt.Fprintf(s.Out, "%s\n", b)
	} else {
		report(s.Out, res)
	}
	if stopped != nil {
		return &cli.ExitError{Code: cli.ExitFailure, Err: stopped}
	}
	return nil
}

// report writes res as text.
func report(w io.Writer, res *mergeback.Result) {
	p := record.Printable
	test := "no test command: the merges are not tested (pass --test CMD)"
	if len(res.Test) > 0 {
		test = "test: " + p(strings.Join(res.Test, " "))
	}
	verb := "merging"
	if res.DryRun {
		verb = "would merge"
	}
	fmt.Fprintf(w, "%s: %s %d branches into %s (base %s); %s\n", p(res.Owner), verb, len(res.Order), p(res.Into), p(res.Base), test)
	if len(res.Already) > 0 {
		fmt.Fprintf(w, "already on %s: %s\n", p(res.Into), p(strings.Join(res.Already, " ")))
	}
	if res.DryRun {
		for i, id := range res.Order {
			fmt.Fprintf(w, "%d  %s\n", i+1, p(id))
		}
		if c := res.PredictedConflict; c != nil {
			fmt.Fprintf(w, "conflict ahead: %s (%s) in %s\n", p(c.ID), p(c.Branch), p(strings.Join(c.Files, ", ")))
		}
		if res.CheckedOut != "" {
			fmt.Fprintf(w, "%s is checked out in %s: its files will follow the merges (as git merge --ff-only)\n", p(res.Into), p(res.CheckedOut))
		}
		return
	}
	for _, m := range res.Merged {
		how := ""
		if m.ResolvedBy != "" {
			how = ", conflict resolved by " + p(m.ResolvedBy)
		}
		fmt.Fprintf(w, "landed %s (%s) at %s%s\n", p(m.ID), p(m.Branch), short(m.Commit), how)
	}
	if s := res.Stopped; s != nil {
		fmt.Fprintf(w, "stopped at %s (%s): %s", p(s.ID), p(s.Branch), p(s.Reason))
		if len(s.Files) > 0 {
			fmt.Fprintf(w, " in %s", p(strings.Join(s.Files, ", ")))
		}
		fmt.Fprintln(w)
		for _, l := range s.TestTail {
			fmt.Fprintf(w, "  | %s\n", p(l))
		}
	}
	if res.CheckedOut != "" && len(res.Merged) > 0 {
		fmt.Fprintf(w, "%s is at %s, its checkout in %s too\n", p(res.Into), short(res.Head), p(res.CheckedOut))
		return
	}
	fmt.Fprintf(w, "%s is at %s\n", p(res.Into), short(res.Head))
}

func short(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}

// prefixed writes each line with the verb's prefix ("swarm: run merge: ").
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	fmt.Fprintf(p.w, "%s%s", p.prefix, b)
	return len(b), nil
}

// WriteRecord writes a run's merge record as `swarm run status` and `history` show it: a row
// per merge landed (its task, branch, the branch it landed on, that branch's commit before, the
// merge, when, tested or not), and why the last merge stopped, if it did.
func WriteRecord(w io.Writer, rec *mergeback.Record) {
	p := record.Printable
	rows := [][]string{{"MERGED", "BRANCH", "INTO", "ONTO", "MERGE", "AT", "TESTED"}}
	for _, m := range rec.Merges {
		tested := "no"
		if m.Tested {
			tested = "yes"
		}
		if m.ResolvedBy != "" {
			tested += ", resolved by " + p(m.ResolvedBy)
		}
		rows = append(rows, []string{p(m.ID), p(m.Branch), p(m.Into), short(m.Onto), short(m.Commit), p(m.At), tested})
	}
	if len(rec.Merges) > 0 {
		cli.Table(w, rows)
	} else {
		fmt.Fprintln(w, "merged: none")
	}
	if s := rec.Stopped; s != nil {
		fmt.Fprintf(w, "merge stopped at %s (%s) into %s: %s", p(s.ID), p(s.Branch), p(s.Into), p(s.Reason))
		if len(s.Files) > 0 {
			fmt.Fprintf(w, " in %s", p(strings.Join(s.Files, ", ")))
		}
		if s.At != "" {
			fmt.Fprintf(w, " (%s)", p(s.At))
		}
		fmt.Fprintln(w)
	}
}

// Landed is how many merges rec has landed, and the task the last merge stopped at ("" : it
// went to the end), for a list's column.
func Landed(rec *mergeback.Record) string {
	s := fmt.Sprint(len(rec.Merges))
	if rec.Stopped != nil {
		s += ", stopped at " + record.Printable(rec.Stopped.ID)
	}
	return s
}
