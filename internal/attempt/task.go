package attempt

import (
	"fmt"
	"slices"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
)

// Task is one task to run as one attempt, resolved by its caller: the agent looked up, the
// repository made absolute, the prompt read. dispatch makes one of its command line;
// executor.Local one of each attempt of swarm run, the queue and a merge's resolving agent.
type Task struct {
	Bead string
	// Profile is the agent's profile in Config; Model is the model it runs with.
	Profile *agent.Profile
	Config  *agent.Config
	Model   agent.Model
	// Repo is the repository, absolute, as the run record names it; the agent works there, or
	// in its worktree.
	Repo   string
	Prompt string
	// Template is the run record's template name; "" is record.DefaultTemplate.
	Template string
	// MaxRetries is the records' max_retries; Local.Dispatch refuses an attempt over it (0: no
	// limit).
	MaxRetries int
	// Branch is checked out (or created) in Repo; with Worktree, the branch of the bead's own
	// worktree (agent/<bead> when "").
	Branch   string
	Worktree bool
	// Bare sends the prompt as it is, without WithContext's additions.
	Bare bool
	// JSONOutput asks claude for its JSON result (agent.Profile.JSONOutput), where the cost and
	// the tokens are.
	JSONOutput bool
	// Force replaces a running agent of the bead.
	Force bool
	// Verify is the shell command Local.Dispatch runs in the repository after the agent; "" is
	// the agents config's test_cmd for Repo, when the config asks for it (runsTestCmd).
	Verify  string
	Timeout time.Duration
	// Inactivity, when above 0, stops an agent that printed nothing for that long.
	Inactivity time.Duration
	// Effort is codex's reasoning effort (DISPATCH_CODEX_EFFORT); other agents get none.
	Effort string
	// Env is the agent's environment, to which the attempt adds DISPATCH_BEAD and
	// DISPATCH_ATTEMPT (AttemptEnv).
	Env []string
}

// Machine is this machine as an attempt's supervisor runs on it: the state directory, the
// supervisor's backend (a tmux session on Tmux's server, or a detached process) and its limits.
// dispatch's Local is one; executor.Local makes one with the process backend.
type Machine struct {
	Dir      Dir
	StateDir string // absolute
	// Backend is supervise.BackendTmux (a session on Tmux's server) or BackendProcess.
	Backend   string
	Tmux      *tmux.Client
	KillGrace time.Duration
	MinFreeMB int64
}

// Spec is what the supervisor of t's attempt n on m is handed, the one place a task becomes an
// attempt for every tool: the running run record, the agent's command line by its profile, its
// environment, its log and prompt file, the directories whose free disk it watches, its limits
// and where it runs. workdir is where the agent works, on branch. What runs around the agent
// (the verification, the workspace's hooks) is the caller's to add: dispatch adds them.
func (m *Machine) Spec(t *Task, n int, workdir, branch string) *Spec {
	sent, inv := t.invocation(m.Dir, branch, workdir)
	spec := &Spec{
		Attempt: supervise.Attempt{
			Name: t.Bead, Number: n, Dir: workdir, Argv: inv.Argv, Env: t.AttemptEnv(n),
			Prompt: sent, Stdin: inv.Stdin, PromptFile: inv.PromptFile, Terminal: t.Profile.Terminal,
			Timeout: t.Timeout, Inactivity: t.Inactivity, KillGrace: m.KillGrace, MinFreeMB: m.MinFreeMB,
			DiskDirs: []string{m.StateDir, workdir}, LogPath: m.Dir.Layout.LogPath(t.Bead),
		},
		Backend: m.Backend, Run: m.runRecord(t, n),
	}
	if m.Backend == supervise.BackendTmux {
		spec.Socket, spec.Session = m.Tmux.Socket, Session(t.Bead)
	}
	return spec
}

// runRecord is the run record of t's attempt n, as it starts.
func (m *Machine) runRecord(t *Task, n int) record.Run {
	template := t.Template
	if template == "" {
		template = record.DefaultTemplate // dispatch.sh recorded "custom", never null
	}
	return record.Run{
		SchemaVersion: record.SchemaVersion, Bead: t.Bead, Agent: t.Profile.Name, Model: t.Model.Name, Repo: t.Repo,
		Prompt: record.Truncate(t.Prompt, 200), PromptHash: record.PromptHash(t.Prompt), PromptFull: t.Prompt,
		StartedAt: record.FormatTime(time.Now()), Status: record.StatusRunning, Attempt: n, MaxRetries: t.MaxRetries,
		SessionName: record.SessionName(t.Bead), ResultFile: record.ResultFile(m.StateDir, t.Bead), TemplateName: record.Str(template),
	}
}

// invocation is what t's agent is sent in workdir on branch (the prompt with its additions,
// unless Bare) and how it is started with it, for Machine.Spec.
func (t *Task) invocation(d Dir, branch, workdir string) (sent string, inv agent.Invocation) {
	sent = t.Prompt
	if !t.Bare {
		sent = WithContext(t.Prompt, t.Bead, branch, Peers(d, t.Bead, t.Repo))
	}
	effort := ""
	if t.Profile.Name == "codex" {
		effort = t.Effort
	}
	inv = t.Profile.Invoke(agent.Call{Model: t.Model.Resolved, Prompt: sent, PromptFile: d.Layout.PromptPath(t.Bead),
		Effort: effort, Dir: workdir})
	if t.JSONOutput {
		inv.Argv = t.Profile.JSONOutput(inv.Argv)
	}
	return sent, inv
}

// AttemptEnv is the environment of t's agent in attempt n: Env, then DISPATCH_BEAD and
// DISPATCH_ATTEMPT (Env is not modified).
func (t *Task) AttemptEnv(n int) []string {
	return append(slices.Clip(t.Env), "DISPATCH_BEAD="+t.Bead, fmt.Sprintf("DISPATCH_ATTEMPT=%d", n))
}
