package swarmcli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
)

// Home is a swarm directory opened for ralph's loops (internal/ralph/loop): internal/swarm's
// Swarm, with the options of this process's environment.
type Home struct {
	*swarm.Swarm
	stderr io.Writer
}

// OpenHome opens the swarm directory at dir; warnings go to stderr as "swarm: warning: ...".
func OpenHome(dir string, stderr io.Writer) (*Home, error) {
	o := swarm.Options{AgentsConfig: os.Getenv("SWARM_AGENTS"), Environ: os.Environ(), TmuxTmpDir: os.Getenv("TMUX_TMPDIR"),
		Warnings: stderr}
	if exe, err := self(); err == nil {
		o.Supervisor = []string{exe, supervise.SuperviseVerb}
	}
	sw, err := swarm.Open(dir, o)
	if err != nil {
		return nil, err
	}
	return &Home{Swarm: sw, stderr: stderr}, nil
}

// self is the command line that runs this binary again (the supervisor verb): os.Args[0] as it
// was started (a multi-call test binary must be started by that name), made absolute.
func self() (string, error) {
	arg0 := os.Args[0]
	if !strings.Contains(arg0, "/") {
		p, err := exec.LookPath(arg0)
		if err != nil {
			return os.Executable()
		}
		arg0 = p
	}
	return filepath.Abs(arg0)
}

// Screen is the worker's screen as peek shows it, with up to lines lines of history.
func (H *Home) Screen(ctx context.Context, name string, lines int) (string, error) {
	w, err := H.Worker(name)
	if err != nil {
		return "", err
	}
	if w == nil {
		return "", fmt.Errorf("worker '%s' not found", name)
	}
	return H.Swarm.Screen(ctx, w, lines)
}

// WorkerSpec is a worker a loop starts. Loops always run in tmux, as the Python swarm's did.
type WorkerSpec struct {
	Name    string
	Cmd     []string
	Cwd     string   // the working directory; ignored with NewWorktree
	Env     []string // K=V, in order
	Tags    []string
	Session string  // "" for the default session
	Socket  *string // the tmux socket name (tmux -L), nil for the default server
	Profile string  // the agent profile, "" to choose by the command
	// NewWorktree makes a worktree in the current directory's repository, as spawn --worktree
	// (Branch and WorktreeDir as --branch and --worktree-dir).
	NewWorktree         bool
	Branch, WorktreeDir string
	// Worktree is an existing worktree the worker runs in (a loop's later iterations): Cwd is
	// its path, and the worker's entry names it, so kill --rm-worktree and clean find it.
	Worktree *worker.Worktree
	// Metadata is set in the worker's metadata (the loop's "ralph" and "ralph_iteration").
	Metadata worker.Object
	// Heartbeat, HeartbeatExpire and HeartbeatMessage are spawn's --heartbeat flags ("" none).
	Heartbeat, HeartbeatExpire, HeartbeatMessage string
}

// Spawn starts a worker as swarm spawn --tmux does and returns its entry.
func (H *Home) Spawn(ctx context.Context, ws *WorkerSpec) (*worker.Worker, error) {
	sp := swarm.Spec{Name: ws.Name, Cmd: ws.Cmd, Tags: ws.Tags, Profile: ws.Profile, Metadata: ws.Metadata,
		Tmux: &swarm.TmuxSpec{Session: ws.Session, Socket: ws.Socket}}
	var err error
	if ws.Heartbeat != "" {
		if sp.Heartbeat, err = swarm.ParseHeartbeat(ws.Heartbeat, ws.HeartbeatExpire, ws.HeartbeatMessage); err != nil {
			return nil, err
		}
	}
	if sp.Env, err = swarm.ParseEnv(ws.Env); err != nil {
		return nil, err
	}
	switch {
	case ws.NewWorktree:
		sp.Worktree = &swarm.WorktreeSpec{Branch: ws.Branch, Dir: ws.WorktreeDir}
	case ws.Worktree != nil:
		sp.InWorktree = ws.Worktree
	default:
		sp.Dir = ws.Cwd
	}
	w, err := H.Swarm.Spawn(ctx, sp)
	if err != nil {
		return nil, err
	}
	if hb := sp.Heartbeat; hb != nil && hb.Interval < swarm.ShortHeartbeat && H.stderr != nil {
		fmt.Fprintf(H.stderr, "swarm: warning: very short heartbeat interval (%s), consider using at least 1m\n", ws.Heartbeat)
	}
	return w, nil
}

// RemoveWorktree removes a worktree as kill --rm-worktree does: never one with uncommitted
// changes or unmerged commits unless force.
func (H *Home) RemoveWorktree(ctx context.Context, wt *worker.Worktree, force bool) error {
	return swarm.RemoveWorktree(ctx, wt, force)
}

// CheckWorkerName applies spawn's name rule (statedir.CheckName; all digits refused in tmux).
func CheckWorkerName(name string) error { return swarm.CheckName(name, true) }
