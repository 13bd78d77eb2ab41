// Package supervise runs one agent attempt and records its outcome for certain. The supervisor
// is the agent's parent: it starts the agent in its own process group, copies its output to the
// terminal and to state/logs/<bead>.log, waits for it, enforces the timeout and the free-disk
// floor, stops it (TERM, then KILL after a grace period) when told to, and writes the final run
// and result records itself, with a reason that says how the outcome was decided.
//
// dispatch runs the supervisor as a hidden verb inside the bead's tmux session (or as a detached
// process without tmux); swarm and ralph reuse it. While it lives, a registry entry
// (state/supervisors/<bead>.json) says where it is, so that Reconcile can close the records of a
// supervisor that died without finishing them.
package supervise

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/record"
)

// Backends a supervisor runs under.
const (
	BackendTmux    = "tmux"
	BackendProcess = "process"
)

// Spec is everything the supervisor needs for one attempt. dispatch writes it (0600: it holds the
// prompt and the environment) and the supervisor deletes it as soon as it has read it.
type Spec struct {
	Bead     string   `json:"bead"`
	StateDir string   `json:"state_dir"` // absolute
	Dir      string   `json:"dir"`       // the agent's working directory
	Argv     []string `json:"argv"`
	Env      []string `json:"env"`
	// Prompt goes on the agent's stdin when Stdin is set, and into PromptFile when that is set.
	Prompt     string `json:"prompt"`
	Stdin      bool   `json:"stdin"`
	PromptFile string `json:"prompt_file,omitempty"`

	Timeout   Seconds `json:"timeout"`    // 0: none
	KillGrace Seconds `json:"kill_grace"` // between TERM and KILL
	MinFreeMB int64   `json:"min_free_mb"`

	Verify        string  `json:"verify,omitempty"` // a shell command from the user's config or flags
	VerifyTimeout Seconds `json:"verify_timeout,omitempty"`

	Backend string `json:"backend"`
	Socket  string `json:"socket,omitempty"`
	Session string `json:"session,omitempty"`

	// Run is the run record as dispatch wrote it (status running); the outcome completes it.
	Run record.Run `json:"run"`
}

// Seconds is a duration written as whole seconds in JSON.
type Seconds int64

// D returns the duration.
func (s Seconds) D() time.Duration { return time.Duration(s) * time.Second }

// Layout names the files of a state directory that supervision uses beyond the records.
type Layout struct{ Dir string }

// SpecPath is where dispatch leaves the spec for the supervisor.
func (l Layout) SpecPath(bead string) string {
	return filepath.Join(l.Dir, "supervisors", bead+".spec.json")
}

// EntryPath is the registry entry of bead's live supervisor.
func (l Layout) EntryPath(bead string) string {
	return filepath.Join(l.Dir, "supervisors", bead+".json")
}

// LockPath is the bead's lock: held while a dispatch sets up an attempt, while a supervisor
// writes its final records, and while reconcile judges the bead, so they never interleave.
func (l Layout) LockPath(bead string) string { return filepath.Join(l.Dir, "locks", bead) }

// LogPath is the agent's full output for the current attempt.
func (l Layout) LogPath(bead string) string { return filepath.Join(l.Dir, "logs", bead+".log") }

// PromptPath is where the prompt is written for agents that read it from a file.
func (l Layout) PromptPath(bead string) string {
	return filepath.Join(l.Dir, "prompts", bead+".txt")
}

// LockBead takes the bead's lock, waiting up to wait.
func (l Layout) LockBead(ctx context.Context, bead string, wait time.Duration) (func() error, error) {
	if err := os.MkdirAll(filepath.Join(l.Dir, "locks"), 0o700); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return fsx.Lock(ctx, l.LockPath(bead))
}

// WriteSpec saves spec for the supervisor, private to the user.
func (l Layout) WriteSpec(spec *Spec) error {
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(l.Dir, "supervisors"), 0o700); err != nil {
		return err
	}
	return fsx.WriteFileAtomic(l.SpecPath(spec.Bead), b, 0o600)
}

// TakeSpec reads bead's spec and deletes the file, so the environment it holds does not stay
// on disk.
func (l Layout) TakeSpec(bead string) (*Spec, error) {
	path := l.SpecPath(bead)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading supervisor spec: %w", err)
	}
	os.Remove(path)
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("supervisor spec %s: %w", path, err)
	}
	return &s, nil
}

// Entry is the registry entry of a live supervisor.
type Entry struct {
	Bead     string `json:"bead"`
	Attempt  int    `json:"attempt"`
	PID      int    `json:"pid"`       // the supervisor
	AgentPID int    `json:"agent_pid"` // the agent, leader of its own process group; 0 until started
	// AgentStart is the agent's start time (clock ticks since boot, /proc/<pid>/stat), so that a
	// pid reused by another process is never taken for the agent.
	AgentStart uint64 `json:"agent_start,omitempty"`
	Backend    string `json:"backend"`
	Socket     string `json:"socket,omitempty"`
	Session    string `json:"session,omitempty"`
	StartedAt  string `json:"started_at"`
}

// WriteEntry records a live supervisor.
func (l Layout) WriteEntry(e *Entry) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(l.Dir, "supervisors"), 0o700); err != nil {
		return err
	}
	return fsx.WriteFileAtomic(l.EntryPath(e.Bead), append(b, '\n'), 0o600)
}

// ReadEntry returns bead's registry entry, or nil when there is none.
func (l Layout) ReadEntry(bead string) (*Entry, error) {
	b, err := os.ReadFile(l.EntryPath(bead))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("supervisor entry %s: %w", l.EntryPath(bead), err)
	}
	return &e, nil
}
