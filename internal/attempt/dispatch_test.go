package attempt

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/workspace"
)

// dispatchLab is a state directory, a repository directory and a workspace for Local.Dispatch,
// with the built-in agents; nothing in it can start a supervisor (Self is false), so a test
// that reaches the launch fails loudly.
func dispatchLab(t *testing.T) (*Local, *Task, string) {
	t.Helper()
	dir := t.TempDir()
	state, repo, ws := filepath.Join(dir, "state"), filepath.Join(dir, "repo"), filepath.Join(dir, "ws")
	for _, p := range []string{repo, filepath.Join(ws, "scripts")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := agent.Builtin()
	profile, err := cfg.Lookup("claude")
	if err != nil {
		t.Fatal(err)
	}
	l := &Local{Machine: Machine{Dir: NewDir(state), StateDir: state, Backend: supervise.BackendProcess},
		Self: []string{"false"}, Site: workspace.Site{Root: ws, StateDir: state, Tool: "dispatch"},
		Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Tool: "dispatch"}
	task := &Task{Bead: "bd-1", Profile: profile, Config: cfg, Model: agent.Model{Name: "m"}, Repo: repo, Prompt: "fix it", MaxRetries: 2}
	return l, task, ws
}

func writeScript(t *testing.T, ws, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(ws, "scripts", name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// A pre-launch script that refuses stops the dispatch before the bead is touched: its exit
// status is the refusal's, and the state directory is not even made.
func TestDispatchRefusedBeforeTheBeadIsTouched(t *testing.T) {
	l, task, ws := dispatchLab(t)
	writeScript(t, ws, workspace.ScriptPreflight, "echo \"preflight $1 $2\"\nexit 3\n")
	_, err := l.Dispatch(context.Background(), task)
	var refused *workspace.Refusal
	if !errors.As(err, &refused) || refused.Code != 3 {
		t.Fatalf("Dispatch = %v; want the preflight's refusal with 3", err)
	}
	if got := l.Stdout.(*bytes.Buffer).String(); got != "preflight claude "+task.Repo+"\n" {
		t.Errorf("the preflight printed %q; want its arguments, the agent and the repository", got)
	}
	if _, err := os.Lstat(l.StateDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state directory was made for a refused dispatch (%v)", err)
	}

	// The PRD-lint gate refuses with 1 and its report, only when it is enforced.
	writeScript(t, ws, workspace.ScriptPreflight, "exit 0\n")
	writeScript(t, ws, workspace.ScriptPRDLint, "echo 'no PRD for bd-1'\nexit 5\n")
	l.Site.EnforcePRDLint = true
	_, err = l.Dispatch(context.Background(), task)
	if !errors.As(err, &refused) || refused.Code != 1 || !refused.PRDLint || !strings.Contains(err.Error(), "no PRD for bd-1") {
		t.Fatalf("Dispatch = %v; want the PRD-lint gate's refusal with 1 and its report", err)
	}
}

// An attempt over MaxRetries is a *Refusal told on stderr in dispatch.sh's words and to the
// workspace's memory, with the bead's records left as they were.
func TestDispatchOverTheLimitIsToldNotWritten(t *testing.T) {
	l, task, ws := dispatchLab(t)
	ctx := context.Background()
	last := running("bd-1", 2)
	last.Status = record.StatusDone
	if err := l.Dir.Store.WriteRun(ctx, &last); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(l.Dir.Store.RunPath("bd-1"))
	_, err := l.Dispatch(ctx, task)
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("Dispatch = %v; want a refusal over the limit", err)
	}
	stderr := l.Stderr.(*bytes.Buffer).String()
	for _, want := range []string{"Error: max retries reached for bead 'bd-1' (2)\n",
		"dispatch: bd-1: attempt 2 ended done; its records are left as they are; to run it again, raise DISPATCH_MAX_RETRIES (now 2)\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
	if after, _ := os.ReadFile(l.Dir.Store.RunPath("bd-1")); !bytes.Equal(after, before) {
		t.Errorf("the refusal rewrote the run record:\n%s", after)
	}
	memory, _ := filepath.Glob(filepath.Join(ws, "memory", "*.md"))
	if len(memory) != 1 || !strings.Contains(readOrEmpty(memory[0]), "- Bead `bd-1`: agent=claude model=m attempt=2/2 status=failed duration=0s reason=max-retries-reached") {
		t.Errorf("memory files %v; want the refusal's line", memory)
	}

	// A caller with a console of its own gives none: the refusal is the same, told to no one.
	l.Stdout, l.Stderr = nil, nil
	if _, err := l.Dispatch(ctx, task); !errors.As(err, &r) {
		t.Fatalf("Dispatch without a console = %v; want the refusal", err)
	}
}

// The prompt's additions name the other agents of the same repository and the branch.
func TestWithContext(t *testing.T) {
	got := WithContext("fix it\n\n", "bd-1", NoBranch, []Peer{{"bd-2", "codex", "add tests"}})
	for _, want := range []string{"fix it\n\n## Other Active Agents (same repo)\n", "- Bead bd-2 (codex): add tests\n",
		"- You are agent for bead bd-1 working on branch: unknown\n", "- Check the active-agent list above"} {
		if !strings.Contains(got, want) {
			t.Errorf("WithContext lacks %q:\n%s", want, got)
		}
	}
	if got := WithContext("fix it", "bd-1", "main", nil); strings.Contains(got, "Other Active Agents") || strings.Contains(got, "active-agent list") {
		t.Errorf("WithContext without peers names them:\n%s", got)
	}
}
