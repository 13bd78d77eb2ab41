// Package queue is ralph's task queue: a plan split into tasks with dependencies, worked
// through by several agents at once, each task a supervised dispatch with run and result
// records, with retries and a budget. `ralph queue …` is this package's Run; the plan's format
// is package plan's, the queue's files package store's, the agents' work package runner's.
package queue

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/supervise"
	ucli "github.com/urfave/cli/v2"
)

// tool prefixes every diagnostic.
const tool = "ralph queue"

// verb is one verb of ralph queue.
type verb struct {
	name   string
	app    func(stdin io.Reader, stdout, stderr io.Writer) *ucli.App
	hidden bool
}

var verbs = []verb{
	{name: "init", app: initApp},
	{name: "run", app: runApp},
	{name: "status", app: statusApp},
	{name: "retry", app: retryApp},
	{name: "skip", app: skipApp},
	{name: "add", app: addApp},
	{name: supervise.SuperviseVerb, app: superviseApp, hidden: true},
}

// usage is the help of ralph queue itself.
const usage = `ralph queue - many agents working through one plan's tasks

Usage:
   ralph queue init PLAN_FILE [--repo DIR] [--force]
   ralph queue run PLAN --agents N [--agent AGENT[:MODEL]] [--budget USD [--hard-budget]]
                   [--max-retries N] [--repo DIR] [--worktree] [--state-dir DIR]
   ralph queue status PLAN [--json] [--repo DIR]
   ralph queue retry|skip PLAN TASK [--repo DIR]
   ralph queue add PLAN TASK_ID DESCRIPTION [--after IDS] | --from FILE [--repo DIR]

A plan is a markdown task list ("- [ ] t1: description (after t0)") or a YAML or JSON list of
{id, description, dependencies}; PLAN is its file or its id (the file's name without the
extension). The queue's files are in DIR/.claude/ralph/; each task runs as a dispatch of bead
<plan>-<task>, with run and result records in the state directory. 'ralph queue VERB --help'
tells more.
`

// Run runs `ralph queue` verb args[1] (args[0] is "ralph queue") and returns the exit status.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[1] == "help" || args[1] == "--help" || args[1] == "-h" {
		if len(args) > 2 && args[1] == "help" {
			args = []string{args[0], args[2], "--help"}
		} else if len(args) < 2 {
			fmt.Fprint(stderr, usage) // no verb: a usage error, its text on stderr
			return cli.ExitUsage
		} else {
			fmt.Fprint(stdout, usage)
			return cli.ExitOK
		}
	}
	name := args[1]
	var v *verb
	for i := range verbs {
		if verbs[i].name == name {
			v = &verbs[i]
		}
	}
	if v == nil {
		return cli.Exit(tool, cli.Usagef("no verb %q; the verbs are init, run, status, retry, skip, add", name), stderr)
	}
	ctx := context.Background()
	if name != supervise.SuperviseVerb { // the supervisor handles its own signals
		var cancel context.CancelFunc
		ctx, cancel = signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer cancel()
	}
	rest := slices.Concat([]string{tool + " " + name}, args[2:])
	return cli.Exit(tool, cli.Run(ctx, v.app(stdin, stdout, stderr), rest), stderr)
}

// repoFlag is --repo: the directory whose .claude/ralph holds the queue.
func repoFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "repo", Value: ".", Usage: "the repository the agents work in; the queue is in its .claude/ralph/ (`DIR`)"}
}

// newApp builds one verb's app.
func newApp(s cli.Spec, stdout, stderr io.Writer) *ucli.App {
	s.HideVersion = true
	return cli.NewApp(s, stdout, stderr)
}

// args checks a verb's positional arguments: exactly n, named as in names.
func args(c *ucli.Context, names ...string) ([]string, error) {
	a := c.Args().Slice()
	if len(a) != len(names) {
		return nil, cli.Usagef("%s takes %s, got %d argument(s)", c.App.Name, strings.Join(names, " "), len(a))
	}
	return a, nil
}

// planOf resolves PLAN: a plan file's path (its id is its name without the extension), else a
// plan id as it is.
func planOf(arg string) (string, error) {
	if fi, err := os.Stat(arg); err == nil && fi.Mode().IsRegular() {
		return plan.ID(arg)
	}
	if err := plan.CheckID(arg); err != nil {
		return "", cli.Usagef("%v", err)
	}
	return arg, nil
}

// dirOf is the queue directory of --repo.
func dirOf(c *ucli.Context) (store.Dir, string, error) {
	repo, err := filepath.Abs(c.String("repo"))
	if err != nil {
		return store.Dir{}, "", err
	}
	if fi, err := os.Stat(repo); err != nil || !fi.IsDir() {
		return store.Dir{}, "", fmt.Errorf("--repo %s is not a directory", c.String("repo"))
	}
	return store.In(repo), repo, nil
}

var execLookPath = exec.LookPath
