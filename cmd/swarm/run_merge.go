package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentfleet/fleet/cmd/internal/mergeverb"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/manifest"
	"github.com/agentfleet/fleet/internal/mergeback"
	"github.com/agentfleet/fleet/internal/runevents"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/swarmrun"
	ucli "github.com/urfave/cli/v2"
)

// runMergeCommand is `swarm run merge [ID]`: the execution's completed branches landed on its
// base (package mergeback), the test command run after each merge.
func runMergeCommand() *cli.Command {
	o := mergeverb.Options{TestDefault: "the manifest's test"}
	return &cli.Command{
		Name: "merge", Usage: "merge an execution's completed branches into its base, testing each merge",
		UsageText: "swarm run merge [ID] [--test CMD] [--into BRANCH] [--agent NAME] [--dry-run] [--json] [--on-event CMD] [--state-dir DIR]",
		Flags:     o.AddFlags(nil),
		ExitCodes: mergeverb.ExitCodes("no such execution"),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			return runMerge(ctx, c, s, &o)
		},
	}
}

func runMerge(ctx context.Context, c *ucli.Context, s cli.Streams, o *mergeverb.Options) error {
	if c.NArg() > 1 {
		return cli.Usagef("give at most one id: %s", strings.Join(c.Args().Slice(), " "))
	}
	if err := o.Check(); err != nil {
		return err
	}
	told, err := o.Hook(s.Err, "swarm: ")
	if err != nil {
		return err
	}
	// The hook is told each merge as it lands, off the merge's path; the verb gives it its
	// bound once the merges are over, as swarm run does with its last events.
	defer told.CloseWithin(mergeverb.HookDrain)
	repo, err := repoOf(ctx, nil, ".")
	if err != nil {
		return err
	}
	paths := swarmrun.Paths{Root: repo}
	st, err := findExecution(paths, c.Args().First())
	if err != nil {
		return err
	}
	if o.Test == nil {
		if o.Test, err = manifestTest(st); err != nil {
			return err
		}
	}
	p := mergeback.Plan{Repo: repo, Owner: st.ExecutionID, Base: st.BaseBranch, Into: o.Into, Branches: completedBranches(st),
		Test: o.Test, Scratch: filepath.Join(paths.Worktrees(), mergeverb.ScratchName(st.ExecutionID)), Beneath: repo,
		Record: mergeRecordPath(paths, st.ExecutionID), Label: "swarm run merge", DryRun: o.DryRun}
	// Each merge landed is an event of the execution (swarm run follow shows it); the events
	// file is the run's account, not the merge's record: a failure to append is a warning.
	p.Landed = func(m mergeback.Merged) {
		e := runevents.Event{Event: runevents.Merge, Execution: st.ExecutionID, Status: "merged", Task: m.ID, Branch: m.Branch, Commit: m.Commit}
		if err := runevents.Append(paths.Root, st.ExecutionID, e); err != nil {
			fmt.Fprintf(s.Err, "swarm: warning: the merge of %s is not in the run's events: %v\n", m.ID, err)
		}
		told.Send(runevents.HookEvent(e))
	}
	if o.Agent != "" && !o.DryRun {
		// The agent's attempt is one of swarm run's own: supervised by `swarm run __supervise`.
		if p.Resolver, err = mergeverb.Resolver(o, repo, "run"); err != nil {
			return err
		}
	}
	return mergeverb.Run(ctx, s, "swarm: run merge: ", o, p)
}

// mergeRecordPath is execution id's merge record, .swarm/history/<ID>.merge.json: what swarm
// run merge landed, and where it stopped.
func mergeRecordPath(p swarmrun.Paths, id string) string {
	return filepath.Join(p.Dir(), "history", id+".merge.json")
}

// mergeRecord is execution id's merge record for status and history (nil: none); one that
// cannot be read is said on stderr as a warning, the execution shown without it.
func mergeRecord(stderr io.Writer, p swarmrun.Paths, id string) *mergeback.Record {
	if statedir.CheckName(statedir.KindBead, id) != nil {
		return nil
	}
	rec, err := mergeback.ReadRecord(mergeRecordPath(p, id))
	if err != nil {
		fmt.Fprintf(stderr, "swarm: warning: its merges are not shown: %v\n", err)
		return nil
	}
	return rec
}

// printWithMerges prints the state document st as indented JSON, with its merge record (rec,
// when there is one) as its "merge" key: status --json and history ID --json.
func printWithMerges(w io.Writer, st *swarmrun.State, rec *mergeback.Record) error {
	if rec == nil {
		return printIndented(w, st)
	}
	doc, err := json.Marshal(st)
	if err != nil {
		return err
	}
	merge, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	// The state document is an object: its last byte the closing brace.
	doc = append(append(append(doc[:len(doc)-1], `,"merge":`...), merge...), '}')
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = out.WriteTo(w)
	return err
}

// printMerges prints rec (nil: nothing) after an execution's tasks or report.
func printMerges(w io.Writer, rec *mergeback.Record) {
	if rec == nil {
		return
	}
	fmt.Fprintln(w)
	mergeverb.WriteRecord(w, rec)
}

// completedBranches are the execution's completed tasks' branches, in the manifest's order.
func completedBranches(st *swarmrun.State) []mergeback.Branch {
	var out []mergeback.Branch
	for _, id := range st.Order {
		t := st.Tasks[id]
		if t != nil && t.Status == swarmrun.Completed {
			out = append(out, mergeback.Branch{ID: id, Branch: t.Branch, DependsOn: t.DependsOn})
		}
	}
	return out
}

// manifestTest is the test command of the execution's manifest (its test field), nil when it
// sets none or is gone.
func manifestTest(st *swarmrun.State) ([]string, error) {
	if st.ManifestPath == "" {
		return nil, nil
	}
	if _, err := os.Lstat(st.ManifestPath); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	m, err := manifest.Load(st.ManifestPath)
	if err != nil {
		return nil, cli.Usagef("reading the manifest's test command: %v; fix it, or pass --test CMD", err)
	}
	if m.Test == "" {
		return nil, nil
	}
	argv, err := mergeverb.SplitTest(m.Test)
	if err != nil {
		return nil, cli.Usagef("%s: test %q: %v", st.ManifestPath, m.Test, err)
	}
	return argv, nil
}
