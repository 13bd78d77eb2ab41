package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentfleet/fleet/cmd/internal/supervisorverb"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	ucli "github.com/urfave/cli/v2"
)

// queueCommand is `ralph queue VERB`: the task queue's verbs, each in a file of its own
// (queue_*.go), over internal/ralph/queue. They run with a context that SIGINT and SIGTERM
// cancel (an interrupted run stops its agents at work, their tasks pending again).
func queueCommand() *cli.Command {
	return &cli.Command{
		Name: "queue",
		Commands: []*cli.Command{queueInitCommand(), queueRunCommand(), queueStatusCommand(), queueRetryCommand(),
			queueSkipCommand(), queueAddCommand(), supervisorverb.Command(supervisorverb.Attempt, "run one task's supervisor (started by ralph queue run)",
				"%s is started by ralph queue run, not by hand"), queueCheckpointCommand(), queueMergeCommand()},
		CommandsUsage: func(w io.Writer) { fmt.Fprint(w, queueUsage) },
		UnknownVerb: func(word string, _ []string) error {
			if word == "" {
				return nil // ralph queue alone: its help, on stderr
			}
			return cli.Usagef("no verb %q; the verbs are init, run, status, retry, skip, add, merge", word)
		},
	}
}

// queueUsage is the help of ralph queue itself.
const queueUsage = `ralph queue - many agents working through one plan's tasks

Usage:
   ralph queue init PLAN_FILE [--repo DIR] [--force]
   ralph queue run PLAN --agents N [--agent AGENT[:MODEL]] [--budget USD [--hard-budget]]
                   [--max-retries N] [--repo DIR] [--worktree] [--state-dir DIR]
   ralph queue status PLAN [--json] [--repo DIR]
   ralph queue retry|skip PLAN TASK [--repo DIR]
   ralph queue add PLAN TASK_ID DESCRIPTION [--after IDS] | --from FILE [--repo DIR]
   ralph queue merge PLAN [--test CMD] [--into BRANCH] [--agent NAME] [--dry-run] [--json] [--repo DIR]

A plan is a markdown task list ("- [ ] t1: description (after t0)") or a YAML or JSON list of
{id, description, dependencies}; PLAN is its file or its id (the file's name without the
extension). The queue's files are in DIR/.claude/ralph/; each task runs as a dispatch of bead
<plan>-<task>, with run and result records in the state directory. 'ralph queue VERB --help'
tells more.
`

// repoFlag is --repo, writing into *repo: the directory whose .claude/ralph holds the queue.
func repoFlag(repo *string) ucli.Flag {
	return &ucli.StringFlag{Name: "repo", Value: ".", Destination: repo, Usage: "the repository the agents work in; the queue is in its .claude/ralph/ (`DIR`)"}
}

// operands checks a verb's positional arguments: exactly the ones names names.
func operands(c *ucli.Context, names ...string) ([]string, error) {
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

// queueDir is the queue directory of --repo (repoFlag, as given), and the repository.
func queueDir(repoFlag string) (store.Dir, string, error) {
	repo, err := filepath.Abs(repoFlag)
	if err != nil {
		return store.Dir{}, "", err
	}
	if fi, err := os.Stat(repo); err != nil || !fi.IsDir() {
		return store.Dir{}, "", fmt.Errorf("--repo %s is not a directory", repoFlag)
	}
	return store.In(repo), repo, nil
}
