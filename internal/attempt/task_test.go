package attempt

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
)

// Machine.Spec is the one place a task becomes its supervisor's spec, for dispatch and for
// executor.Local: dispatch's task (the prompt's additions, tmux) and the executor's (bare,
// claude's JSON result, a detached supervisor) each get what they asked for, and neither's
// environment is written into.
func TestSpecOfATask(t *testing.T) {
	state := t.TempDir()
	cfg := agent.Builtin()
	profile, err := cfg.Lookup("claude")
	if err != nil {
		t.Fatal(err)
	}
	env := make([]string, 1, 8) // room to spare: an append in place would write into it
	env[0] = "HOME=/home/x"
	task := &Task{Bead: "bd-1", Profile: profile, Config: cfg, Model: agent.Model{Name: "sonnet", Resolved: "claude-sonnet"},
		Repo: "/repo", Prompt: "fix it", MaxRetries: 3, Timeout: time.Minute, Env: env}

	m := &Machine{Dir: NewDir(state), StateDir: state, Backend: supervise.BackendTmux, Tmux: &tmux.Client{Socket: "/s"},
		KillGrace: 2 * time.Second, MinFreeMB: 50}
	spec := m.Spec(task, 2, "/repo/wt", "agent/bd-1")
	a, run := spec.Attempt, spec.Run
	if want := []string{"HOME=/home/x", "DISPATCH_BEAD=bd-1", "DISPATCH_ATTEMPT=2"}; !slices.Equal(a.Env, want) {
		t.Errorf("env %q; want %q", a.Env, want)
	}
	if a.Prompt == task.Prompt || !strings.Contains(a.Prompt, "working on branch: agent/bd-1") {
		t.Errorf("dispatch's agent was sent %q; want the prompt with its additions", a.Prompt)
	}
	if slices.Contains(a.Argv, "--output-format") || !slices.Contains(a.Argv, "claude-sonnet") {
		t.Errorf("argv %q; want the resolved model and no output format", a.Argv)
	}
	if a.Name != "bd-1" || a.Number != 2 || a.Dir != "/repo/wt" || !a.Terminal || a.Timeout != time.Minute ||
		a.KillGrace != 2*time.Second || a.MinFreeMB != 50 || !slices.Equal(a.DiskDirs, []string{state, "/repo/wt"}) ||
		a.LogPath != m.Dir.Layout.LogPath("bd-1") {
		t.Errorf("attempt %+v", a)
	}
	if spec.Backend != supervise.BackendTmux || spec.Socket != "/s" || spec.Session != Session("bd-1") {
		t.Errorf("backend %q socket %q session %q; want tmux's", spec.Backend, spec.Socket, spec.Session)
	}
	if run.Attempt != 2 || run.MaxRetries != 3 || run.Agent != "claude" || run.Model != "sonnet" || run.Repo != "/repo" ||
		run.PromptFull != "fix it" || run.Status != record.StatusRunning || run.TemplateName == nil ||
		*run.TemplateName != record.DefaultTemplate || run.ResultFile != record.ResultFile(state, "bd-1") {
		t.Errorf("run record %+v", run)
	}

	task.Bare, task.JSONOutput, task.Template, task.Inactivity = true, true, "swarm-run", time.Second
	m.Backend, m.Tmux = supervise.BackendProcess, nil
	spec = m.Spec(task, 1, "/repo", "")
	if spec.Attempt.Prompt != "fix it" || !slices.Contains(spec.Attempt.Argv, "--output-format") ||
		spec.Attempt.Inactivity != time.Second || *spec.Run.TemplateName != "swarm-run" {
		t.Errorf("the executor's task: prompt %q argv %q inactivity %v template %q", spec.Attempt.Prompt,
			spec.Attempt.Argv, spec.Attempt.Inactivity, *spec.Run.TemplateName)
	}
	if spec.Socket != "" || spec.Session != "" {
		t.Errorf("a detached supervisor got socket %q session %q", spec.Socket, spec.Session)
	}
	if len(env[:cap(env)][1]) != 0 {
		t.Errorf("the task's environment was written into: %q", env[:2])
	}
}
