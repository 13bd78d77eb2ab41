package swarmrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"

	gitx "github.com/agentfleet/fleet/internal/git"
)

// A worktree per slot: each slot of the run keeps one worktree, .swarm/worktrees/.slot-<agent>,
// and a task that completed leaves it clean (its work committed), so the slot's next task
// re-points it (git checkout of its branch made from its start: gitx.RepointWorktree) instead
// of adding a worktree of its own, a task's worktree costing one or two git processes where it
// cost four. A task that does not complete (failed, blocked on a conflict, interrupted, sent
// back to the queue) keeps what it left: its worktree is moved out of the slot to
// .swarm/worktrees/<task>, where every task's worktree was before, the state's trace naming
// it; the slot makes a fresh one for its next task, and the task's next attempt removes the
// kept one (it starts afresh from the same commit, as every attempt did). Task ids start with
// a letter or digit, so a slot's worktree is never a task's.
type slotTrees struct {
	// path is each slot's worktree (by agent id), chosen at its first task.
	path map[string]string
	// ready says the slot's worktree was left clean by a completed task of this run, on its
	// branch: the next task re-points it. clean says it may hold files git ignores (or a
	// forge's), which the next task's re-pointing removes (git clean -ffdx).
	ready, clean map[string]bool
	// owner is the task each slot's worktree was last made or re-pointed for (by agent id):
	// only that task's work is kept when it does not complete.
	owner map[string]string
	// prev is the worktree of a task's earlier attempt, when the attempt now assigned works
	// elsewhere (by task id): removed before the task's worktree is made, since the task's
	// branch is checked out there.
	prev map[string]string
}

// slotNameRE is an agent id that can name a slot's worktree (hosts.yaml's names, local-N).
var slotNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// slotWorktreeRE is the base name of a slot's worktree, as a state read back may name it.
var slotWorktreeRE = regexp.MustCompile(`^\.slot-[A-Za-z0-9][A-Za-z0-9._-]{0,110}$`)

// worktreeFor is the worktree task t works in when assigned to slot (under mu): an attempt of
// an earlier run that is adopted keeps the one it works in; else the slot's, or the task's own
// when the slot's agent id cannot name one (slotPath "").
func (r *runner) worktreeFor(slot Slot, t *Task) string {
	prev := valueOr(t.Trace, Trace{}).Worktree
	if r.adopt[t.ID] > 0 && prev != "" {
		return prev
	}
	path := cmp.Or(r.slotPath(slot), r.paths.Worktree(t.ID))
	if prev != "" && prev != path {
		r.trees.prev[t.ID] = prev
	}
	return path
}

// slotPath is slot's worktree (under mu), "" when its agent id cannot name one. It is
// .swarm/worktrees/.slot-<agent>, or -2, -3… after it when that one is held: named by a task
// that did not complete (an attempt of an earlier run at work there, adopted; a task's work
// kept there by a run killed before it moved it out), or by another slot. Its first call makes
// the maps of slotTrees (worktreeFor's first).
func (r *runner) slotPath(slot Slot) string {
	if r.trees.path == nil {
		r.trees = slotTrees{path: map[string]string{}, ready: map[string]bool{}, clean: map[string]bool{}, owner: map[string]string{}, prev: map[string]string{}}
	}
	if p, ok := r.trees.path[slot.ID]; ok {
		return p
	}
	if !slotNameRE.MatchString(slot.ID) {
		return ""
	}
	held := map[string]bool{}
	for _, t := range r.st.Tasks {
		if t.Trace != nil && t.Trace.Worktree != "" && t.Status != Completed && t.Status != Skipped {
			held[t.Trace.Worktree] = true
		}
	}
	for _, p := range r.trees.path {
		held[p] = true
	}
	path := filepath.Join(r.paths.Worktrees(), ".slot-"+slot.ID)
	for n := 2; held[path]; n++ {
		path = filepath.Join(r.paths.Worktrees(), fmt.Sprintf(".slot-%s-%d", slot.ID, n))
	}
	r.trees.path[slot.ID] = path
	return path
}

// makeWorktree makes task t's worktree at path for slot, fresh from the run's base with deps
// merged (see slotTrees): the slot's worktree re-pointed when a completed task left it clean,
// else made anew (gitx.Repo.PrepareWorktree; a conflict is a *gitx.ConflictError). A worktree of the task's earlier attempt is removed first.
func (r *runner) makeWorktree(ctx context.Context, slot Slot, t *Task, path string, deps []string, newBranch bool) (string, error) {
	r.mu.Lock()
	prev := r.trees.prev[t.ID]
	delete(r.trees.prev, t.ID)
	// A repository with a post-checkout hook has each worktree made by git worktree add, which
	// runs the hook as it always did (forty zeros for the old HEAD: a new worktree).
	repoint := r.trees.ready[slot.ID] && r.trees.path[slot.ID] == path && !r.checkoutHook
	clean := r.trees.clean[slot.ID]
	delete(r.trees.ready, slot.ID)
	if r.trees.path[slot.ID] == path {
		r.trees.owner[slot.ID] = t.ID
	}
	r.mu.Unlock()
	repo := gitx.Repo{Dir: r.cfg.Repo}
	for _, old := range []string{r.paths.Worktree(t.ID), prev} {
		if old != "" && old != path && !r.isSlotWorktree(old) && exists(old) {
			if err := repo.ClearWorktreePath(ctx, old, r.cfg.Repo); err != nil {
				return "", fmt.Errorf("removing the worktree of the task's earlier attempt: %w", err)
			}
		}
	}
	// ident prefixes the merge commands; the lock is held while a worktree is registered, the
	// crash point called once it is (gitx.MergeSpec).
	spec := gitx.MergeSpec{Base: r.baseSHA, Deps: deps, Ident: r.ident, Label: "swarm run", Lock: &r.gitMu, Hooked: r.checkoutHook,
		Registered: func() { r.checkpoint("registered") }, Beneath: r.cfg.Repo, NewBranch: newBranch}
	if repoint {
		base, err := repo.RepointWorktree(ctx, path, t.Branch, clean, spec)
		var conflict *gitx.ConflictError
		if err == nil || errors.As(err, &conflict) || ctx.Err() != nil {
			return base, err
		}
		r.logf("%s: %s: re-pointing the slot's worktree: %v; making it anew", slot.ID, t.ID, oneLine(err))
	}
	return repo.PrepareWorktree(ctx, path, t.Branch, spec)
}

// isSlotWorktree says whether path is a slot's worktree in this run (under mu or not: the
// paths are set under mu, read here under it).
func (r *runner) isSlotWorktree(path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(slices.Collect(maps.Values(r.trees.path)), path)
}

// slotCommitted records that slot's task completed in worktree wt, its work committed
// (commitTask): the slot's next task re-points it, with git clean when files git ignores may
// be left (ignored) or a forge worked in it.
func (r *runner) slotCommitted(slot Slot, wt string, ignored bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trees.path[slot.ID] == wt {
		r.trees.ready[slot.ID] = true
		r.trees.clean[slot.ID] = ignored || r.cfg.Forge != nil
	}
}

// keepWorktree moves the worktree of task id, which did not complete in slot, out of the slot
// to .swarm/worktrees/<task>, where the user looks at what it left and the state's trace names
// it (see slotTrees); the slot makes a fresh worktree for its next task. Not under mu. A
// worktree that is not the slot's (an adopted attempt's), is gone, or is no real directory (a
// link an agent put there is never handed to git) stays where it is.
func (r *runner) keepWorktree(id string, slot Slot) {
	r.mu.Lock()
	t := r.st.Tasks[id]
	path := r.trees.path[slot.ID]
	// A task that failed before its worktree was made (its branch refused) leaves the slot's
	// worktree as the task before left it: not this task's to keep.
	mine := t != nil && t.Trace != nil && path != "" && t.Trace.Worktree == path && r.trees.owner[slot.ID] == id
	if mine {
		delete(r.trees.ready, slot.ID)
	}
	r.mu.Unlock()
	if !mine || !exists(path) || r.checkWorktree(path) != nil {
		return
	}
	kept := r.paths.Worktree(id)
	if err := (gitx.Repo{Dir: r.cfg.Repo}).MoveWorktree(context.Background(), path, kept, r.cfg.Repo); err != nil {
		r.logf("%s: %s: keeping the task's worktree: %v; the slot's next task makes it anew", slot.ID, id, oneLine(err))
		return
	}
	r.mu.Lock()
	t.Trace.Worktree = kept
	r.enc.mark(id)
	r.mu.Unlock()
}

// releaseSlots detaches the HEAD of each slot's worktree that a completed task left on its
// branch (not under mu; no task runs any more): a run used to leave every task's branch checked
// out in a worktree of its own; a slot's stays a worktree for the next run, but on no branch,
// so the user (or swarm run merge's check) can check the branches out elsewhere. One git
// process a slot; a worktree that is not a real directory below the repository is left alone.
func (r *runner) releaseSlots(ctx context.Context) {
	r.mu.Lock()
	var paths []string
	// ready holds only true (slotCommitted), its slots' entries deleted when they are not.
	for id := range r.trees.ready {
		paths = append(paths, r.trees.path[id])
	}
	clear(r.trees.ready)
	r.mu.Unlock()
	for _, p := range paths {
		if r.checkWorktree(p) != nil {
			continue
		}
		// No hook: the tree does not change (a post-checkout hook ran once, when it was made).
		if _, err := gitCmd(ctx, p, "-c", "core.hooksPath=/dev/null", "checkout", "-q", "--detach"); err != nil {
			r.logf("releasing the slot's worktree %s: %v", p, oneLine(err))
		}
	}
}
