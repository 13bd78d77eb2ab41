package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
)

// printPlan prints, for dispatch --dry-run, from the spec its supervisor would be handed
// (attempt.Machine.Spec, as Dispatch builds it), the exact argv the agent of t would be started
// with, the keys of its environment (never the values: they hold API keys), and the files and
// places the attempt would use. It starts nothing, writes nothing and takes no lock: the
// attempt's number is read, not claimed.
func printPlan(ctx context.Context, s *settings, t *attempt.Task, w io.Writer) error {
	m := s.machine()
	d := m.Dir
	number := 1
	if prev, err := record.ReadRun(d.Store.RunPath(t.Bead)); err == nil {
		number = prev.Attempt + 1
	}
	branch, workdir := planBranch(ctx, t), workdirOf(t)
	spec := m.Spec(t, number, workdir, branch)
	a := &spec.Attempt

	fmt.Fprintf(w, "Dry run: %s would start attempt %d/%d of %s; nothing was started or written\n", tool, number, s.maxRetries, t.Bead)
	if number > s.maxRetries {
		fmt.Fprintf(w, "(it would be refused: attempt %d is over DISPATCH_MAX_RETRIES=%d)\n", number, s.maxRetries)
	}
	fmt.Fprintf(w, "agent: %s | model: %s (%s)\n", t.Profile.Name, orNone(t.Model.Name), modelPassing(t.Profile, t.Model))
	command, _ := findCommand(t.Profile.Command, workdir, pathsOf(a.Env, s.getenv("PATH"))...)
	fmt.Fprintf(w, "command: %s\n", command)
	fmt.Fprintf(w, "argv (%d, each Go-quoted):\n", len(a.Argv))
	for i, arg := range a.Argv {
		fmt.Fprintf(w, "  [%d] %s\n", i, strconv.Quote(arg))
	}
	fmt.Fprintf(w, "dir: %s\n", workdir)
	fmt.Fprintf(w, "branch: %s\n", branch)
	switch {
	case a.Stdin:
		fmt.Fprintf(w, "stdin: the prompt (%d bytes)\n", len(a.Prompt))
	case a.PromptFile != "":
		fmt.Fprintf(w, "stdin: none; the prompt (%d bytes) in the prompt file\n", len(a.Prompt))
	default:
		fmt.Fprintf(w, "stdin: none; the prompt (%d bytes) in argv\n", len(a.Prompt))
	}
	fmt.Fprintf(w, "terminal: %v\n", a.Terminal)
	fmt.Fprintf(w, "env (%d keys; values not shown): %s\n", len(a.Env), strings.Join(envKeys(a.Env), " "))
	fmt.Fprintf(w, "timeout: %s\n", a.Timeout)
	fmt.Fprintln(w, "files:")
	config := "built in (no config file)"
	if t.Config.Path != "" {
		config = t.Config.Path
	}
	files := [][2]string{
		{"agents config", config},
		{"state directory", s.stateDir},
		{"run record", d.Store.RunPath(t.Bead)},
		{"result record", d.Store.ResultPath(t.Bead)},
		{"output log", a.LogPath},
		{"supervisor entry", d.Layout.EntryPath(t.Bead)},
	}
	if a.PromptFile != "" {
		files = append(files, [2]string{"prompt file", a.PromptFile})
	}
	if t.Worktree {
		files = append(files, [2]string{"worktree", workdir})
	}
	if s.workspace != "" {
		files = append(files, [2]string{"workspace", s.workspace})
	}
	for _, f := range files {
		fmt.Fprintf(w, "  %s: %s\n", f[0], f[1])
	}
	if spec.Backend == supervise.BackendTmux {
		fmt.Fprintf(w, "tmux: socket %s, session %s\n", spec.Socket, spec.Session)
	} else {
		fmt.Fprintln(w, "tmux: none (a detached process)")
	}
	return nil
}

// modelPassing says how the model reaches the agent: by its flag, or not at all and why (the
// model is recorded all the same, as dispatch.sh recorded it).
func modelPassing(profile *agent.Profile, m agent.Model) string {
	switch {
	case profile.PassesModel(m.Resolved):
		return "passed as " + profile.ModelFlag + " " + m.Resolved
	case m.Resolved == "":
		return "not passed: no model named, and the agents config gives " + profile.Name + " no default_model"
	default:
		return "not passed: the agents config gives " + profile.Name + " no model_flag"
	}
}

// planBranch is the branch t's attempt would be on, found without changing anything.
func planBranch(ctx context.Context, t *attempt.Task) string {
	r := git.Repo{Dir: t.Repo}
	switch {
	case t.Worktree && t.Branch != "":
		return t.Branch
	case t.Worktree:
		return "agent/" + t.Bead
	case !r.IsRepo(ctx):
		return attempt.NoBranch
	case t.Branch != "":
		return t.Branch
	}
	if b, err := r.Branch(ctx); err == nil {
		return b
	}
	return attempt.NoBranch
}

// pathsOf are the PATHs the agent's command is looked for in: its environment's, then
// dispatch's own.
func pathsOf(env []string, own string) []string {
	if p, ok := envPath(env); ok {
		return []string{p, own}
	}
	return []string{own}
}

// envKeys are the names of an environment list, sorted, each once.
func envKeys(env []string) []string {
	var keys []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
