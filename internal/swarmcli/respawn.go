package swarmcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

var respawnVerb = &verb{
	name: "respawn", usage: "restart a worker with its saved command", usageText: "swarm respawn NAME [--clean-first [--force-dirty]]",
	flags: []ucli.Flag{
		&ucli.BoolFlag{Name: "clean-first", Usage: "remove the worker's worktree and make it again from its branch (not when it has changes)"},
		&ucli.BoolFlag{Name: "force-dirty", Usage: "with --clean-first: remove it even with changes"},
	},
	action: func(c *ucli.Context, e *env) error {
		if c.NArg() != 1 {
			return cli.Usagef("the following arguments are required: name")
		}
		h, s, err := load(e)
		if err != nil {
			return err
		}
		w, err := one(s, c.Args().First(), 1)
		if err != nil {
			return err
		}
		return respawn(c.Context, e, h, w, c.Bool("clean-first"), c.Bool("force-dirty"))
	},
}

// perRun are the metadata keys of one run of a worker, which a respawned worker does not
// inherit (its own spawn writes them again); every other key is carried over.
var perRun = map[string]bool{worker.MetaSupervised: true, worker.MetaSupervisorPID: true, worker.MetaAgentPID: true,
	worker.MetaExitCode: true, worker.MetaFinished: true, worker.MetaReason: true, worker.MetaActivity: true,
	worker.MetaActivitySince: true, worker.MetaReadyAt: true, worker.MetaProfile: true}

// respawn stops w if it runs and starts it again as spawn would, with its saved command,
// directory, environment, tags, tmux session and socket, worktree and profile. Unlike the
// Python swarm, a start that fails puts the old entry back (stopped): the worker is never
// lost from state.
func respawn(ctx context.Context, e *env, h *home, w *worker.Worker, cleanFirst, force bool) error {
	// A live heartbeat goes on with the new incarnation, on its schedule (stopping the old
	// one records it stopped).
	hb, _ := h.loadHeartbeat(w.Name)
	if h.check(ctx, w).running {
		stopWorker(ctx, h, w)
	}
	if w.Tmux != nil {
		// A window the agent left (a Python swarm worker's shell, remain-on-exit) would take
		// the new window's name.
		if tc, err := tmuxOf(w); err == nil {
			tc.KillWindow(ctx, tmux.WindowTarget(w.Tmux.Session, w.Tmux.Window))
		}
	}
	if cleanFirst && w.Worktree != nil {
		if err := removeWorktree(ctx, w.Worktree, force); err != nil {
			fmt.Fprintf(e.stderr, "swarm: error: cannot remove worktree: %v\nswarm: worktree at: %s\n"+
				"swarm: use --force-dirty to remove anyway, or commit changes first\n", err, w.Worktree.Path)
			return &cli.ExitError{Code: 1}
		}
	}
	old := *w
	removed := false
	err := h.reg.Update(ctx, func(s *worker.State) error {
		x := s.Get(w.Name)
		if x == nil || x.Started != w.Started {
			return worker.ErrUnchanged
		}
		s.Remove(w.Name)
		removed = true
		return nil
	})
	if err != nil {
		return err
	}
	if !removed {
		return fmt.Errorf("worker '%s' changed while it was being respawned; run respawn again", w.Name)
	}
	restore := func(err error) error {
		old.Status = worker.StatusStopped
		h.reg.Update(context.Background(), func(s *worker.State) error {
			if s.Get(old.Name) != nil {
				return worker.ErrUnchanged
			}
			s.Add(&old)
			return nil
		})
		return err
	}
	if wt := w.Worktree; wt != nil {
		if _, err := os.Stat(wt.Path); err != nil {
			if err := remakeWorktree(ctx, wt); err != nil {
				return restore(fmt.Errorf("failed to create worktree: %v", err))
			}
		}
	}
	var out bytes.Buffer
	se := *e
	se.stdout = &out
	if err := runSpawn(ctx, &se, respawnArgs(w)); err != nil {
		return restore(err)
	}
	// What spawn does not take as a flag: the worktree, and metadata of the old entry.
	h.reg.Update(ctx, func(s *worker.State) error {
		x := s.Get(w.Name)
		if x == nil {
			return worker.ErrUnchanged
		}
		x.Worktree = w.Worktree
		for _, m := range w.Metadata {
			if !perRun[m.Key] && !x.Metadata.Has(m.Key) {
				x.Metadata = x.Metadata.Set(m.Key, m.Value)
			}
		}
		return nil
	})
	if hb != nil && hb.Live() {
		if s, err := h.reg.Load(); err == nil && s.Get(w.Name) != nil {
			mon := h.monitorOf(s.Get(w.Name))
			h.updateHeartbeat(ctx, w.Name, func(cur *worker.Heartbeat) (*worker.Heartbeat, error) {
				if cur == nil || cur.CreatedAt != hb.CreatedAt || cur.Live() {
					return nil, nil
				}
				cur.Status, cur.MonitorPID = hb.Status, mon
				return cur, nil
			})
		}
	}
	fmt.Fprint(e.stdout, strings.Replace(out.String(), "spawned ", "respawned ", 1))
	return nil
}

// respawnArgs is spawn's command line for a worker as it was saved.
func respawnArgs(w *worker.Worker) []string {
	args := []string{"--name", w.Name}
	if w.Tmux != nil {
		args = append(args, "--tmux", "--session", w.Tmux.Session)
		if w.Tmux.Socket != nil {
			args = append(args, "--tmux-socket", *w.Tmux.Socket)
		}
	}
	for _, t := range w.Tags {
		args = append(args, "--tag", t)
	}
	for _, kv := range w.Env {
		args = append(args, "--env", kv.Key+"="+kv.Value)
	}
	if w.Cwd != "" {
		args = append(args, "--cwd", w.Cwd)
	}
	var profile string
	if w.Meta(worker.MetaProfile, &profile) && profile != "" {
		args = append(args, "--profile", profile)
	}
	return append(append(args, "--"), w.Cmd...)
}

// remakeWorktree makes a worker's worktree again at its path, on its branch (a new branch from
// HEAD when the branch is gone). Git runs in the base repository (the Python swarm ran it in
// the caller's directory).
func remakeWorktree(ctx context.Context, wt *worker.Worktree) error {
	if wt.BaseRepo == "" {
		return errors.New("the worker's base repository is not known")
	}
	gitIn(ctx, wt.BaseRepo, "worktree", "prune")
	if _, err := gitIn(ctx, wt.BaseRepo, "worktree", "add", wt.Path, wt.Branch); err != nil {
		if _, err2 := gitIn(ctx, wt.BaseRepo, "worktree", "add", "-b", wt.Branch, wt.Path); err2 != nil {
			return fmt.Errorf("Failed to create worktree at %s: %v", wt.Path, err)
		}
	}
	return nil
}
