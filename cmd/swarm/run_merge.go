package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentfleet/fleet/cmd/internal/mergeverb"
	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/manifest"
	"github.com/agentfleet/fleet/internal/mergeback"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarmrun"
	ucli "github.com/urfave/cli/v2"
)

// runMergeCommand is `swarm run merge [ID]`: the execution's completed branches landed on its
// base (package mergeback), the test command run after each merge.
func runMergeCommand() *cli.Command {
	return &cli.Command{
		Name: "merge", Usage: "merge an execution's completed branches into its base, testing each merge",
		UsageText: "swarm run merge [ID] [--test CMD] [--into BRANCH] [--agent NAME] [--dry-run] [--json] [--state-dir DIR]",
		Flags:     append(mergeverb.Flags("the manifest's test"), cli.StateDirFlag()),
		ExitCodes: mergeverb.ExitCodes("no such execution"),
		Action:    runMerge,
	}
}

func runMerge(ctx context.Context, c *ucli.Context, s cli.Streams) error {
	o, err := mergeverb.Read(c)
	if err != nil {
		return err
	}
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
		Test: o.Test, Scratch: filepath.Join(paths.Worktrees(), "merge-"+st.ExecutionID), Beneath: repo,
		Record: filepath.Join(paths.Dir(), "history", st.ExecutionID+".merge.json"), Label: "swarm run merge", DryRun: o.DryRun}
	if o.Agent != "" && !o.DryRun {
		if p.Resolver, err = swarmResolver(c, o, repo); err != nil {
			return err
		}
	}
	return mergeverb.Run(ctx, s, "swarm: run merge: ", o, p)
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

// swarmResolver is --agent: the conflict goes to the agent as an attempt of this machine's
// executor (swarm run's own: supervised by `swarm run __supervise`, recorded in the state
// directory), its command checked before anything starts.
func swarmResolver(c *ucli.Context, o *mergeverb.Options, repo string) (mergeback.Resolver, error) {
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
	stateDir, err := filepath.Abs(c.String("state-dir"))
	if err != nil {
		return nil, err
	}
	exe, err := proc.Self()
	if err != nil {
		return nil, err
	}
	local := &swarmrun.Local{N: 1, StateDir: stateDir, Self: []string{exe, "run", supervise.SuperviseVerb, "--state-dir", stateDir},
		Agents: agents, Getenv: os.Getenv, Env: os.Environ()}
	return &mergeback.AgentResolver{Exec: local, Agent: o.Agent, Model: o.Model}, nil
}
