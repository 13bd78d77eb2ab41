package swarm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/worker"
)

// errNoRepo is spawn --worktree outside a git repository, in the Python swarm's words.
var errNoRepo = errors.New("not in a git repository (required for --worktree)")

// worktreePlan is a worktree spawn is about to make: where, on which branch, and whether the
// branch is new (then it is created at from, and a failed spawn deletes it again).
type worktreePlan struct {
	root, path, branch string
	newBranch          bool
	from               string // the commit a new branch starts at
}

// planWorktree works out the worker's worktree as the Python swarm did, changing nothing: in the
// git repository of repo ("" the current directory), at <worktree-dir or <root>-worktrees>/<name>,
// on a new branch from HEAD or else an existing one.
func planWorktree(ctx context.Context, repo, name, branch, wtDir string) (*worktreePlan, error) {
	root, err := git.Cmd{Dir: repo}.Output(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, errNoRepo
	}
	parent := filepath.Dir(root)
	base := filepath.Join(parent, filepath.Base(root)+"-worktrees")
	if wtDir != "" {
		base = wtDir
		if !filepath.IsAbs(base) {
			base = filepath.Join(parent, base)
		}
	}
	p := &worktreePlan{root: root, path: filepath.Join(base, name), branch: branch}
	if _, err := os.Lstat(p.path); err == nil {
		return nil, fmt.Errorf("Failed to create worktree at %s: it exists", p.path)
	}
	r := git.Repo{Dir: root}
	if err := r.CheckBranch(ctx, branch); err != nil {
		if errors.Is(err, git.ErrNoGit) {
			return nil, err
		}
		return nil, fmt.Errorf("invalid branch name '%s'", branch)
	}
	if !r.HasBranch(ctx, branch) {
		p.newBranch, p.from = true, r.Head(ctx)
	}
	return p, nil
}

// create makes the planned worktree: `git worktree add -b B PATH FROM` for a new branch,
// `git worktree add PATH B` for an existing one.
func (p *worktreePlan) create(ctx context.Context) (*worker.Worktree, error) {
	if err := os.MkdirAll(filepath.Dir(p.path), 0o755); err != nil {
		return nil, err
	}
	args := []string{"worktree", "add", p.path, p.branch}
	if p.newBranch {
		args = []string{"worktree", "add", "-b", p.branch, p.path}
		if p.from != "" {
			args = append(args, p.from)
		}
	}
	if _, err := gitIn(ctx, p.root, args...); err != nil {
		gitIn(ctx, p.root, "worktree", "prune")
		return nil, fmt.Errorf("Failed to create worktree at %s: %v", p.path, err)
	}
	return p.worktree(), nil
}

func (p *worktreePlan) worktree() *worker.Worktree {
	return &worker.Worktree{Path: p.path, Branch: p.branch, BaseRepo: p.root}
}

// undo removes what create made: the worktree (whatever it holds: nothing ran in it yet) and
// the branch if spawn created it and nothing moved it since. The worktree is removed even when
// locked, with -f twice: an add killed before its end leaves its worktree locked
// "initializing", which one -f does not remove and prune keeps (and its branch, checked out
// there, could then not be deleted). Only this spawn's worktree is at the path: the spawn was
// refused if anything was there before it.
func (p *worktreePlan) undo(ctx context.Context) {
	if _, err := os.Lstat(p.path); err == nil {
		gitIn(ctx, p.root, "worktree", "remove", "--force", "--force", p.path)
		// Killed before git named it in its files (gitdir), git cannot find the worktree; its
		// directory is then still empty.
		os.Remove(p.path)
	}
	p.dropHalfAdded(ctx)
	gitIn(ctx, p.root, "worktree", "prune")
	if p.newBranch && p.from != "" {
		(git.Repo{Dir: p.root}).DeleteBranchAt(ctx, p.branch, p.from)
	}
}

// dropHalfAdded undoes a `git worktree add` of the plan's path that was killed half-way, where
// git's own commands cannot: git 2.39 writes the worktree's administrative directory
// (.git/worktrees/<id>) file by file, locked "initializing", and a SIGKILL between creating
// its commondir and writing it leaves the file empty. From then on every command that reads
// the worktrees (`git worktree list`, add, remove, prune, repair, unlock) fails ("failed to read
// .git/worktrees/<id>/commondir"), and prune would keep the directory anyway, since it is
// locked. So when `git worktree list` fails, the administrative directory whose gitdir file
// names this path (the one the add was making, which did not exist before the spawn) is
// removed with the worktree's directory, which leaves git as the spawn found it. Nothing is
// touched while git can read its worktrees, nor any directory that is not this add's.
func (p *worktreePlan) dropHalfAdded(ctx context.Context) {
	if _, err := gitIn(ctx, p.root, "worktree", "list", "--porcelain"); err == nil {
		return
	}
	common, err := gitIn(ctx, p.root, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return
	}
	admin := filepath.Join(strings.TrimSpace(common), "worktrees")
	ours := map[string]bool{filepath.Join(p.path, ".git"): true}
	if parent, err := filepath.EvalSymlinks(filepath.Dir(p.path)); err == nil {
		ours[filepath.Join(parent, filepath.Base(p.path), ".git")] = true // git writes it resolved
	}
	entries, err := os.ReadDir(admin)
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(admin, e.Name())
		b, err := statedir.ReadFile(filepath.Join(dir, "gitdir"), 64<<10)
		if err != nil || !ours[filepath.Clean(strings.TrimSpace(string(b)))] {
			continue
		}
		os.RemoveAll(p.path)
		os.RemoveAll(dir)
	}
}

// gitIn runs git in dir and returns its output; an error is what git said (its stderr, as the
// Python swarm printed it), or git.ErrNoGit's.
func gitIn(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := git.Run(ctx, dir, "", args...)
	var ge *git.Error
	if errors.As(err, &ge) {
		return "", errors.New(ge.Stderr)
	}
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// RemoveWorktree removes a worker's worktree unless it holds work that would be lost
// (git.CheckRemovable: uncommitted changes, or commits on no other branch and not merged by
// patch) and force is not given; the refusal names the files and commits. Git runs in the base
// repository, not in the caller's directory (the Python swarm's bug 15). The branch stays.
// kill --rm-worktree, clean and respawn --clean-first call it. A worktree that is gone is no
// error.
func RemoveWorktree(ctx context.Context, wt *worker.Worktree, force bool) error {
	if _, err := os.Stat(wt.Path); err != nil {
		return nil
	}
	if !force {
		if err := git.CheckRemovable(ctx, wt.Path); err != nil {
			return err
		}
	}
	repo := wt.BaseRepo
	if repo == "" {
		repo = wt.Path
	}
	if _, err := gitIn(ctx, repo, "worktree", "remove", "--force", wt.Path); err != nil {
		return fmt.Errorf("git worktree remove: %v", err)
	}
	return nil
}
