package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
)

// Loops.spawn's steps, in its order: the prompt read (spawnPrompt), where the attempts are
// recorded (recordDir), room made for the loop (makeRoom), its first worker (workerSpec,
// loopWorker), its state written (startLoop, in spawn.go) and the prompt typed (firstPrompt).

// recordDir is where the loop's attempts are recorded, absolute: dir, else the swarm
// directory's state/.
func (l *app) recordDir(dir string) (string, error) {
	if dir == "" {
		dir = filepath.Join(l.dir.Root, "state")
	}
	return filepath.Abs(dir)
}

// spawnPrompt is the prompt file's absolute path and its text.
func spawnPrompt(file string) (abs, prompt string, err error) {
	if abs, err = filepath.Abs(file); err != nil {
		return "", "", err
	}
	if fi, err := os.Stat(abs); err != nil {
		return "", "", fmt.Errorf("prompt file not found: %s", file)
	} else if !fi.Mode().IsRegular() {
		return "", "", fmt.Errorf("prompt file %s is not a regular file", file)
	}
	prompt, err = readPrompt(abs)
	return abs, prompt, err
}

// makeRoom refuses a spawn over an existing worker or live loop of the name, or ends them with
// sp.Replace (returning a worktree kept because it holds work: the new loop runs in it), and
// clears the loop's state with sp.CleanState.
func (l *app) makeRoom(ctx context.Context, sp SpawnSpec) (keep *Worktree, err error) {
	name := sp.Name
	existing, _ := l.home.Worker(name)
	old, _ := l.st.load()
	if existing != nil || (old != nil && l.st.monitorAlive()) {
		if !sp.Replace {
			return nil, fmt.Errorf("worker '%s' already exists", name)
		}
		if keep, err = l.replace(ctx, existing, old); err != nil {
			return nil, err
		}
	}
	if sp.CleanState {
		if _, err := os.Lstat(l.dir.RalphDir(name)); err == nil {
			if err := os.RemoveAll(l.dir.RalphDir(name)); err != nil {
				l.warnf("cannot remove ralph state for '%s': %v", name, err)
			} else {
				fmt.Fprintf(l.stdout, "cleared ralph state for %s\n", name)
			}
		}
	}
	return keep, nil
}

// workerSpec is the first iteration's worker: in the kept worktree, a new one (--worktree) or
// the directory given; its profile checked and its heartbeat parsed.
func (l *app) workerSpec(sp SpawnSpec, env worker.Env, keep *Worktree) (swarm.Spec, error) {
	wsp := swarm.Spec{Name: sp.Name, Cmd: sp.Cmd, Env: env, Tags: sp.Tags, Profile: sp.Profile,
		Metadata: iterationMeta(1), Tmux: &swarm.TmuxSpec{Session: sp.Session, Socket: sp.Socket}}
	var err error
	switch {
	case keep != nil:
		wsp.InWorktree = &worker.Worktree{Path: keep.Path, Branch: keep.Branch, BaseRepo: keep.BaseRepo}
	case sp.Worktree:
		wsp.Worktree = &swarm.WorktreeSpec{Branch: sp.Branch, Dir: sp.WorktreeDir}
	default:
		wsp.Dir = sp.Cwd
		if wsp.Dir != "" {
			if wsp.Dir, err = filepath.Abs(wsp.Dir); err != nil {
				return wsp, err
			}
		}
	}
	if _, err := l.home.Profile(wsp.Profile, sp.Cmd); err != nil {
		return wsp, err
	}
	if sp.Heartbeat != "" {
		if wsp.Heartbeat, err = swarm.ParseHeartbeat(sp.Heartbeat, sp.HeartbeatExpire, sp.HeartbeatMessage); err != nil {
			return wsp, err
		}
	}
	return wsp, nil
}

// loopWorker is the worker spec the loop's state keeps, for its later iterations: w as
// spawned from wsp, with sp's heartbeat.
func loopWorker(sp SpawnSpec, wsp swarm.Spec, w *worker.Worker) *WorkerSpec {
	ws := &WorkerSpec{Cmd: sp.Cmd, Cwd: w.Cwd, Env: sp.Env, Tags: wsp.Tags, Session: w.Tmux.Session, Socket: wsp.Tmux.Socket,
		Profile: wsp.Profile}
	if ws.Heartbeat = sp.Heartbeat; ws.Heartbeat != "" {
		ws.HeartbeatExpire, ws.HeartbeatMessage = sp.HeartbeatExpire, sp.HeartbeatMessage
	}
	if w.Worktree != nil {
		ws.Worktree = &Worktree{Path: w.Worktree.Path, Branch: w.Worktree.Branch, BaseRepo: w.Worktree.BaseRepo}
	}
	if ws.Env == nil {
		ws.Env = []string{}
	}
	if ws.Tags == nil {
		ws.Tags = []string{}
	}
	return ws
}

// firstPrompt types the prompt into the first iteration's agent and keeps where its screen
// was. A pre-flight failure ends the loop as failed and removes the worker.
func (l *app) firstPrompt(ctx context.Context, sp SpawnSpec, st *State, it *iteration, prompt string) (*Spawned, error) {
	w, name := it.w, sp.Name
	wait := promptReadyWait
	if sp.ReadyWait != nil {
		wait = *sp.ReadyWait
	}
	offset, baseline, err := l.typePrompt(ctx, st, w, prompt, wait)
	var pf *PreflightError
	if errors.As(err, &pf) {
		// The Python swarm's pre-flight failure: the worker goes, the loop is failed.
		l.st.logEvent("ERROR", "iteration 1: %v", err)
		l.home.Stop(ctx, w)
		l.endRecord(ctx, st, it, result{kind: resExited}, "failed")
		l.home.Remove(ctx, w)
		l.st.update(ctx, func(s *State) error {
			s.Status, s.ExitReason = StatusFailed, strp(ReasonFailed)
			return nil
		})
		return nil, err
	}
	if err != nil {
		l.warnf("typing the prompt into '%s': %v", name, err)
	}
	if nst, err := l.st.update(ctx, func(s *State) error {
		s.PromptOffset, s.PromptBaselineContent = offset, baseline
		return nil
	}); err == nil && nst != nil {
		st = nst
	}
	return &Spawned{State: st, Worker: w}, nil
}
