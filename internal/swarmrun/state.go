package swarmrun

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/statedir"
)

// Execution statuses (seed 001).
const (
	ExecRunning   = "running"
	ExecCompleted = "completed"
	ExecFailed    = "failed"
	ExecPaused    = "paused"
)

// Task statuses (seed 001's table): pending → queued → assigned → running → completed|failed;
// pending → blocked (a dependency failed, or merging the dependencies conflicts); pending →
// skipped (the user asked). A retried task goes from running back to queued.
const (
	Pending   = "pending"
	Queued    = "queued"
	Assigned  = "assigned"
	Running   = "running"
	Completed = "completed"
	Failed    = "failed"
	Blocked   = "blocked"
	Skipped   = "skipped"
)

// Agent statuses.
const (
	AgentIdle    = "idle"
	AgentBusy    = "busy"
	AgentOffline = "offline"
	AgentFailed  = "failed"
)

// Error types a task's error carries.
const (
	ErrExecution  = "execution_failed"
	ErrTimeout    = "timeout"
	ErrDependency = "dependency_failed"
	ErrConflict   = "merge_conflict"
	ErrSetup      = "setup_failed"
	ErrStopped    = "interrupted"
	ErrAborted    = "aborted"
	ErrHalted     = "halted"
	ErrOffline    = "agent_offline"
)

// State is .swarm/state.json: one execution of a manifest, as seed 001 gives it.
type State struct {
	ExecutionID  string            `json:"execution_id"`
	ManifestName string            `json:"manifest_name"`
	ManifestPath string            `json:"manifest_path"`
	Repo         string            `json:"repo"`
	BaseBranch   string            `json:"base_branch"`
	StartedAt    string            `json:"started_at"`
	CompletedAt  *string           `json:"completed_at"`
	Status       string            `json:"status"`
	Tasks        map[string]*Task  `json:"tasks"`
	Agents       map[string]*Agent `json:"agents"`
	Summary      *Summary          `json:"summary"`
	// Order is the manifest's task ids in its order (the tasks object is keyed, so unordered).
	Order []string `json:"task_order,omitempty"`
	// RunnerPID is the process running the execution while it runs (--abort stops it).
	RunnerPID int `json:"runner_pid,omitempty"`
	// BranchesMade are the tasks' branches this execution made (each written here before git
	// makes it): only these are ever reset (git worktree add -B); a task's branch that exists
	// and is not among them is the user's. Null in a state of an older version, which had none.
	BranchesMade []string `json:"branches_made"`
	// ActiveSeconds is how long the execution's runs were at work, summed over its runs (as
	// of each one's last write of the state): the wall time of its parallel speedup, which
	// leaves out the time between a run and a later --resume or --retry.
	ActiveSeconds float64 `json:"active_seconds,omitempty"`
}

// Task is one task of the execution.
type Task struct {
	ID        string     `json:"id"`
	Prompt    string     `json:"prompt"`
	Branch    string     `json:"branch"`
	Priority  string     `json:"priority"`
	DependsOn []string   `json:"depends_on"`
	Status    string     `json:"status"`
	Trace     *Trace     `json:"execution_trace"`
	Error     *TaskError `json:"error"`
}

// Trace is a task's execution trace. Bead, Attempt and Worktree are ours, beyond the seed's.
type Trace struct {
	AgentID         string   `json:"agent_id"`
	AgentHost       *string  `json:"agent_host"`
	AgentPort       *int     `json:"agent_port"`
	AssignedAt      *string  `json:"assigned_at"`
	StartedAt       *string  `json:"started_at"`
	CompletedAt     *string  `json:"completed_at"`
	DurationSeconds *float64 `json:"duration_seconds"`
	CommitSHA       *string  `json:"commit_sha"`
	PRNumber        *int     `json:"pr_number"`
	PRURL           *string  `json:"pr_url"`
	ExitCode        *int     `json:"exit_code"`
	RetryCount      int      `json:"retry_count"`
	Bead            string   `json:"bead,omitempty"`
	Attempt         int      `json:"attempt,omitempty"`
	Worktree        string   `json:"worktree,omitempty"`
	// BaseSHA is the commit the task's branch was made from (base and dependencies merged).
	BaseSHA string `json:"base_sha,omitempty"`
	// Requeued lists the attempts whose host went offline, after which the task went back to
	// the queue (kept across its later assignments).
	Requeued []Requeue `json:"requeued,omitempty"`
}

// Requeue is a task taken back from a host that went offline.
type Requeue struct {
	AgentID   string `json:"agent_id"`
	AgentHost string `json:"agent_host"`
	Attempt   int    `json:"attempt,omitempty"`
	At        string `json:"at"`
	// LastHeartbeat is the last successful read of the attempt there.
	LastHeartbeat *string `json:"last_heartbeat"`
	// NotBefore is when the attempt's deadline there has passed: the task ran elsewhere only
	// after it.
	NotBefore string `json:"not_before"`
	Reason    string `json:"reason"`
}

// TaskError is why a task failed or is blocked.
type TaskError struct {
	Type        string  `json:"type"`
	Message     string  `json:"message"`
	AgentLogs   *string `json:"agent_logs"`
	Timestamp   string  `json:"timestamp"`
	Recoverable bool    `json:"recoverable"`
	// Files are the conflicting files of a merge_conflict.
	Files []string `json:"files,omitempty"`
}

// Agent is one agent (an executor's slot) of the execution.
type Agent struct {
	ID                 string   `json:"id"`
	Host               string   `json:"host"`
	Port               *int     `json:"port"`
	Status             string   `json:"status"`
	CurrentTask        *string  `json:"current_task"`
	TasksCompleted     []string `json:"tasks_completed"`
	TotalExecutionTime float64  `json:"total_execution_time"`
	LastHeartbeat      *string  `json:"last_heartbeat"`
}

// Summary is generated when the execution ends.
type Summary struct {
	TotalTasks           int      `json:"total_tasks"`
	Completed            int      `json:"completed"`
	Failed               int      `json:"failed"`
	Skipped              int      `json:"skipped"`
	Blocked              int      `json:"blocked"`
	Pending              int      `json:"pending"`
	TotalDurationSeconds float64  `json:"total_duration_seconds"`
	ParallelSpeedup      float64  `json:"parallel_speedup"`
	AgentsUsed           []string `json:"agents_used"`
	PRsCreated           []PR     `json:"prs_created"`
	SuggestedMergeOrder  []string `json:"suggested_merge_order"`
	// MergeConflict names the first branch that merges onto the order before it only with
	// conflicts, when there is one: the order stops before it.
	MergeConflict *MergeConflict `json:"merge_conflict,omitempty"`
}

// PR is a pull request a task opened.
type PR struct {
	TaskID   string `json:"task_id"`
	PRNumber *int   `json:"pr_number,omitempty"`
	PRURL    string `json:"pr_url,omitempty"`
}

// MergeConflict is a branch that does not merge cleanly onto those before it.
type MergeConflict struct {
	TaskID  string   `json:"task_id"`
	Branch  string   `json:"branch"`
	Files   []string `json:"files"`
	Message string   `json:"message"`
}

// Paths names the files of a repository's .swarm directory.
type Paths struct{ Root string } // the repository's top directory

// Dir is .swarm.
func (p Paths) Dir() string { return filepath.Join(p.Root, ".swarm") }

// State is .swarm/state.json.
func (p Paths) State() string { return filepath.Join(p.Dir(), "state.json") }

// Lock is the lock a run holds while it runs.
func (p Paths) Lock() string { return filepath.Join(p.Dir(), "run.lock") }

// History is .swarm/history/<id>.json.
func (p Paths) History(id string) string { return filepath.Join(p.Dir(), "history", id+".json") }

// Report is .swarm/history/<id>.md, the markdown report.
func (p Paths) Report(id string) string { return filepath.Join(p.Dir(), "history", id+".md") }

// Worktrees is .swarm/worktrees, where the tasks' worktrees are.
func (p Paths) Worktrees() string { return filepath.Join(p.Dir(), "worktrees") }

// Worktree is the worktree of a task.
func (p Paths) Worktree(task string) string { return filepath.Join(p.Worktrees(), task) }

// now is the time as the state writes it.
func now() string { return record.FormatTime(time.Now()) }

func strp(s string) *string { return &s }

// maxState is the largest state file read.
const maxState = 64 << 20

// ReadState reads a state file (regular, never through a link, bounded).
func ReadState(path string) (*State, error) {
	b, err := statedir.ReadFile(path, maxState)
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(fsx.StripBOM(b), &s); err != nil {
		return nil, fmt.Errorf("%s is not an execution state: %v; move it aside to start afresh", path, err)
	}
	if s.Tasks == nil {
		return nil, fmt.Errorf("%s has no tasks; move it aside to start afresh", path)
	}
	if s.Agents == nil {
		s.Agents = map[string]*Agent{}
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("%s: %v; it is not acted on: move it aside to start afresh", path, err)
	}
	return &s, nil
}

// writeStateBytes writes an encoded and checked state (stateEncoder) to path: atomically, a
// link there replaced, never written through, in a real directory of the user's.
func writeStateBytes(path string, b []byte) error {
	if err := statedir.MkdirFor(path); err != nil {
		return err
	}
	return fsx.WriteFileAtomic(path, b, 0o600)
}

// writeFile writes the state, encoded whole, to path as writeStateBytes does: the bytes and the
// check of a stateEncoder's first write (every task encoded, the whole state checked against
// the embedded execution schema).
func (s *State) writeFile(path string) error {
	b, err := new(stateEncoder).encode(s)
	if err != nil {
		return err
	}
	return writeStateBytes(path, b)
}

// counts counts the tasks by status.
func (s *State) counts() map[string]int {
	c := map[string]int{}
	for _, t := range s.Tasks {
		c[t.Status]++
	}
	return c
}

// History lists the executions kept in .swarm/history, newest first.
func History(p Paths) ([]*State, error) {
	names, err := fsx.Names(filepath.Join(p.Dir(), "history"), func(name string) (string, bool) {
		return strings.TrimSuffix(name, ".json"), strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".")
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*State
	for _, id := range names {
		// A history file that cannot be read is left out.
		if s, err := ReadState(p.History(id)); err == nil {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *State) int {
		return cmp.Or(strings.Compare(b.StartedAt, a.StartedAt), strings.Compare(b.ExecutionID, a.ExecutionID))
	})
	return out, nil
}

// Find returns the execution id: the current state when it is that execution (or id is ""),
// else its history file.
func Find(p Paths, id string) (*State, error) {
	cur, err := ReadState(p.State())
	if err == nil && (id == "" || cur.ExecutionID == id) {
		return cur, nil
	}
	if id == "" {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: no execution in %s; start one with 'swarm run work.yaml'", ErrNotFound, p.Dir())
		}
		return nil, err
	}
	if statedir.CheckName(statedir.KindBead, id) != nil {
		return nil, fmt.Errorf("%w: %q is no execution id", ErrNotFound, id)
	}
	h, herr := ReadState(p.History(id))
	if errors.Is(herr, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no execution %s (see 'swarm run history')", ErrNotFound, id)
	}
	return h, herr
}

// ErrNotFound is an execution that does not exist.
var ErrNotFound = errors.New("not found")

// exists says whether path exists (not following a link).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
