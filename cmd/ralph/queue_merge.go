package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/agentfleet/fleet/cmd/internal/mergeverb"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/mergeback"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	ucli "github.com/urfave/cli/v2"
)

// queueMergeCommand is `ralph queue merge PLAN`: the done tasks' branches (ralph queue run
// --worktree) landed on the run's base branch (package mergeback), tested after each merge.
func queueMergeCommand() *cli.Command {
	var o queueMergeOptions
	o.merge.TestDefault = "none"
	return &cli.Command{
		Name: "merge", Operand: "plans", Usage: "merge a plan's done branches into its base, testing each merge",
		UsageText: "ralph queue merge PLAN [--test CMD] [--into BRANCH] [--agent NAME] [--dry-run] [--json] [--on-event CMD] [--repo DIR] [--state-dir DIR]",
		Description: "Merges the branches of the plan's done tasks (a run with --worktree) into the branch their worktrees started from, " +
			"one at a time in a scratch worktree, in the merge order status shows; the branch moves only over merges whose test passed. " +
			"The first conflict or failed test stops it; the next merge continues where it stopped.",
		Flags:     o.AddFlags(nil),
		ExitCodes: mergeverb.ExitCodes("no such plan, or a plan run without --worktree"),
		Action:    func(ctx context.Context, c *ucli.Context, s cli.Streams) error { return queueMerge(ctx, c, s, &o) },
	}
}

// queueMergeOptions are queue merge's flags: the merge verbs' and --repo.
type queueMergeOptions struct {
	merge mergeverb.Options
	repo  string
}

// AddFlags appends queue merge's flags, each writing into o, to flags.
func (o *queueMergeOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(o.merge.AddFlags(flags), repoFlag(&o.repo))
}

func queueMerge(ctx context.Context, c *ucli.Context, s cli.Streams, qo *queueMergeOptions) error {
	a, err := operands(c, "PLAN")
	if err != nil {
		return err
	}
	id, err := planOf(a[0])
	if err != nil {
		return err
	}
	o := &qo.merge
	if err := o.Check(); err != nil {
		return err
	}
	told, err := o.Hook(s.Err, "ralph: ")
	if err != nil {
		return err
	}
	// Each merge landed is told the hook as it lands, off the merge's path; it is given
	// mergeverb.HookDrain once the merges are over.
	defer told.CloseWithin(mergeverb.HookDrain)
	dir, repo, err := queueDir(qo.repo)
	if err != nil {
		return err
	}
	base, branches, err := doneBranches(dir, id)
	if err != nil {
		return err
	}
	top := git.Repo{Dir: repo}
	p := mergeback.Plan{Repo: repo, Owner: id, Base: base, Into: o.Into, Branches: branches, Test: o.Test,
		Scratch: top.WorktreePath(mergeverb.ScratchName(id)), Beneath: filepath.Dir(repo),
		Record: filepath.Join(dir.Root, "merge-"+id+".json"), Label: "ralph queue merge", DryRun: o.DryRun,
		Landed: func(m mergeback.Merged) { told.Send(mergeEvent(id, m)) }}
	if o.Agent != "" && !o.DryRun {
		// The agent's attempt is one of the queue's own: supervised by `ralph queue __supervise`.
		if p.Resolver, err = mergeverb.Resolver(o, repo, "queue"); err != nil {
			return err
		}
	}
	return mergeverb.Run(ctx, s, "ralph: queue merge: ", o, p)
}

// mergeEvent is merge m of plan's branches as the --on-event hook reads it: kind "queue" as
// the plan's run's events, event "merge", status "merged".
func mergeEvent(plan string, m mergeback.Merged) hook.Event {
	return hook.Event{Kind: "queue", Event: "merge", Plan: plan, Task: m.ID, Branch: m.Branch, Commit: m.Commit, Status: "merged", Time: m.At}
}

// doneBranches are plan id's base branch and its done tasks' branches, in the queue's order;
// a plan that is not there is exit 2, one run without --worktree (no branches) a usage error.
func doneBranches(dir store.Dir, id string) (string, []mergeback.Branch, error) {
	st := store.New(dir, id)
	q, err := st.View()
	if errors.Is(err, store.ErrNoQueue) {
		return "", nil, &cli.ExitError{Code: cli.ExitUsage, Err: err}
	}
	if err != nil {
		return "", nil, err
	}
	p, err := st.ViewProgress()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", nil, err
	}
	if p == nil || p.BaseBranch == "" {
		return "", nil, cli.Usagef("plan %s has no branches to merge: its tasks ran without --worktree (ralph queue run --worktree gives each a branch)", id)
	}
	var out []mergeback.Branch
	for _, t := range q.Tasks() {
		if t.Status == store.Done && t.Branch != "" {
			out = append(out, mergeback.Branch{ID: t.ID, Branch: t.Branch, DependsOn: t.Dependencies})
		}
	}
	if len(out) == 0 {
		return "", nil, fmt.Errorf("plan %s has no done task with a branch yet; run it with 'ralph queue run %s --worktree'", id, id)
	}
	return p.BaseBranch, out, nil
}
