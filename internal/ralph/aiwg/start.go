package aiwg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
)

var startFlags = flagSpec{"completion": true, "c": true, "max-iterations": true, "timeout": true,
	"checkpoint-interval": true, "agent": true, "force": false, "foreground": false}

// Defaults of ralph start: seed 003's max_iterations and checkpoint_interval, AIWG's 60 minutes.
const (
	defaultMaxIterations = 200
	defaultTimeout       = 60 * time.Minute
	defaultAgent         = "claude"
)

// NewID makes a loop id as AIWG did: ralph-<slug>-<8 hex>, the slug the task lower-cased with
// every run of other characters one '-', trimmed, at most 30 characters ("loop" when nothing
// is left).
func NewID(task string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(task) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 30 {
			break
		}
	}
	slug := strings.Trim(b.String(), "-")
	if len(slug) > 30 {
		slug = strings.Trim(slug[:30], "-")
	}
	if slug == "" {
		slug = "loop"
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	return "ralph-" + slug + "-" + hex.EncodeToString(rnd[:])
}

func startCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags, ops, err := parseArgs(args, startFlags)
	if err != nil {
		return err
	}
	if len(ops) != 1 || strings.TrimSpace(ops[0]) == "" {
		return cli.Usagef("give the task as one argument: ralph start \"TASK\" --completion \"CMD\"")
	}
	completion := flags["completion"]
	if c, ok := flags["c"]; ok {
		completion = c
	}
	if strings.TrimSpace(completion) == "" {
		return cli.Usagef("--completion \"CMD\" is required: the command that exits 0 when the task is done")
	}
	maxIter, err := positiveFlag(flags, "max-iterations", defaultMaxIterations)
	if err != nil {
		return err
	}
	interval, err := positiveFlag(flags, "checkpoint-interval", 1)
	if err != nil {
		return err
	}
	timeout := defaultTimeout
	if v, ok := flags["timeout"]; ok {
		if timeout, err = parseTimeout(v); err != nil {
			return err
		}
	}
	agentArg := flags["agent"]
	if agentArg == "" {
		agentArg = defaultAgent
	}
	ws, err := workspace(ctx)
	if err != nil {
		return err
	}
	profile, _, err := resolveAgent(ws, agentArg)
	if err != nil {
		return err
	}
	// An agent that cannot start would fail every iteration at full speed: refused now.
	if _, err := exec.LookPath(profile.Command); err != nil {
		return fmt.Errorf("agent %s: its command %q cannot be run (%v); install it, or fix its entry in the agents config", profile.Name, profile.Command, err)
	}
	stateDir := os.Getenv("STATE_DIR")
	if stateDir == "" {
		stateDir = ws.DefaultStateDir()
	}
	if stateDir, err = filepath.Abs(stateDir); err != nil {
		return err
	}
	foreground := flags["foreground"] == "true"
	force := flags["force"] == "true"

	now := time.Now()
	st := &State{Version: "2.0.0", LoopID: NewID(ops[0]), Status: StatusRunning, Task: ops[0],
		CompletionCriteria: completion, StartedAt: stamp(now), Owner: owner(), WorkingDirectory: ws.Root,
		Configuration: Configuration{MaxIterations: maxIter, AutoTest: true, CheckpointInterval: interval, ExecutionMode: "default"},
		Progress:      Progress{CompletionChecks: []Check{}}, Agent: agentArg, StateDir: stateDir,
		StartCommit: headCommit(ctx, ws.Root), Iterations: []Iteration{}}
	if timeout > 0 {
		mins := int64((timeout + time.Minute - 1) / time.Minute)
		st.Configuration.TimeoutMinutes = &mins
		st.TimeoutSeconds = int64(timeout / time.Second)
	}

	var child *exec.Cmd
	err = ws.Locked(ctx, func(reg *Registry) error {
		// The next look at the loops: a dead one frees its place before the count.
		for _, e := range append([]RegistryEntry{}, reg.ActiveLoops...) {
			if cur, err := ws.ReadState(e.LoopID); err == nil && looksDead(cur) {
				if err := ws.markDead(reg, cur); err != nil {
					return err
				}
			} else if err != nil && os.IsNotExist(err) {
				reg.drop(e.LoopID) // its directory is gone: nothing to count
			}
		}
		if n := reg.activeCount(); n >= MaxConcurrent {
			if !force {
				return fmt.Errorf("cannot create loop: %d loops already active (max: %d). Adding another would create %d communication paths (REF-088). Use --force to start it anyway, or end one ('ralph list' shows them)",
					n, MaxConcurrent, (n+1)*n/2)
			}
			fmt.Fprintf(stderr, "ralph: warning: %d loops already active (max: %d); --force starts another\n", n, MaxConcurrent)
		}
		if err := statedir.Mkdir(filepath.Join(ws.Dir(), "loops")); err != nil {
			return err
		}
		if err := os.Mkdir(ws.LoopDir(st.LoopID), 0o700); err != nil {
			return err
		}
		recordStart(ctx, ws, st)
		if foreground {
			setController(st, os.Getpid())
		} else {
			// Started under the lock, so it is registered with its pid before anyone can look;
			// it waits for the lock before it reads its state.
			c, err := spawnController(ws, st.LoopID)
			if err != nil {
				os.RemoveAll(ws.LoopDir(st.LoopID))
				return err
			}
			child = c
			setController(st, c.Process.Pid)
		}
		if err := ws.save(reg, st); err != nil {
			if child != nil {
				child.Process.Kill()
				child.Wait()
			}
			os.RemoveAll(ws.LoopDir(st.LoopID))
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	if foreground {
		fmt.Fprintf(stdout, "Ralph loop %s: %s\n", st.LoopID, summary(st.Task, 60))
		return foregroundResult(runLoop(ctx, ws, st.LoopID, stderr))
	}
	child.Process.Release()
	fmt.Fprintf(stdout, "✓ Ralph loop started (%s). Check status: ralph status %s\n", st.LoopID, st.LoopID)
	fmt.Fprintf(stdout, "  PID: %d\n", *st.PID)
	fmt.Fprintf(stdout, "  Loop ID: %s\n", st.LoopID)
	return nil
}

// foregroundResult is --foreground's exit: 0 only for completed.
func foregroundResult(status string, err error) error {
	if err != nil {
		return err
	}
	if status == StatusCompleted {
		return nil
	}
	return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("the loop ended %s", status)}
}

// setController records pid as st's controlling process, with its start time.
func setController(st *State, pid int) {
	st.PID = &pid
	st.PIDStart, _ = proc.StartTime(pid)
}

// spawnController starts a loop's controller: this binary by its absolute path, in a session
// of its own (it outlives the terminal and the shell that ran ralph start), its output in the
// loop's controller.log.
func spawnController(ws Workspace, id string) (*exec.Cmd, error) {
	exe, err := self()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(ws.LoopDir(id), "controller.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, "start", controllerVerb, id)
	cmd.Dir = ws.Root
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the loop's controller: %w", err)
	}
	return cmd, nil
}

// drop removes id's entry without counting it (its loop is gone).
func (reg *Registry) drop(id string) {
	for i, e := range reg.ActiveLoops {
		if e.LoopID == id {
			reg.ActiveLoops = append(reg.ActiveLoops[:i], reg.ActiveLoops[i+1:]...)
			return
		}
	}
}

func owner() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if v := os.Getenv("USER"); v != "" {
		return v
	}
	return "unknown"
}

// headCommit is HEAD of the repository at dir, "" outside git or before the first commit.
func headCommit(ctx context.Context, dir string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--verify", "-q", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// supervisorVerb is the hidden verb of an iteration's supervisor, as every tool names it.
const supervisorVerb = supervise.SuperviseVerb
