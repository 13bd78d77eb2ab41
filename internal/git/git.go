// Package git drives git through its command line for what the toolkit needs: the current
// branch, checking a branch out (creating it if missing), and worktrees that are never removed
// while they hold uncommitted work.
package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoGit is returned when the git binary cannot be found (or run): every operation says so,
// never that a branch name is invalid or that a directory is no repository.
var ErrNoGit = errors.New("git is not installed (or not on PATH): install it, or put it on PATH")

// Repo is a git repository (or worktree) on disk.
type Repo struct{ Dir string }

func (r Repo) git(ctx context.Context, args ...string) (string, error) {
	out, err := Run(ctx, r.Dir, "", args...)
	return strings.TrimSpace(string(out)), err
}

// Run runs git in dir (git -C dir), stdin on its input ("" : none), and returns what it printed
// on stdout, as it printed it. Its error is an *Error (the command and git's own words), or
// ErrNoGit when git cannot be run at all. Cmd.Run is the same with an environment.
func Run(ctx context.Context, dir, stdin string, args ...string) ([]byte, error) {
	return Cmd{Dir: dir, Stdin: stdin}.Run(ctx, args...)
}

// IsRepo reports whether Dir is inside a git work tree. Without git it says whether a .git (a
// repository's directory, or a worktree's file) is in Dir or above it: the directory is a
// repository all the same, and what is asked of it next fails with ErrNoGit, where "not a
// repository" would send the user looking for the wrong problem.
func (r Repo) IsRepo(ctx context.Context) bool {
	out, err := r.git(ctx, "rev-parse", "--is-inside-work-tree")
	if errors.Is(err, ErrNoGit) {
		return hasDotGit(r.Dir)
	}
	return err == nil && out == "true"
}

// hasDotGit reports whether dir or a directory above it holds a .git.
func hasDotGit(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// Branch returns the checked-out branch ("HEAD" when detached). symbolic-ref answers in a
// repository with no commit yet, where rev-parse fails.
func (r Repo) Branch(ctx context.Context) (string, error) {
	if b, err := r.git(ctx, "symbolic-ref", "--short", "-q", "HEAD"); err == nil && b != "" {
		return b, nil
	}
	return r.git(ctx, "rev-parse", "--abbrev-ref", "HEAD")
}

// CheckBranch refuses names git would refuse as branches (and anything starting with "-",
// which git would read as an option).
func (r Repo) CheckBranch(ctx context.Context, name string) error {
	if name == "" || strings.HasPrefix(name, "-") {
		return fmt.Errorf("invalid branch name %q", name)
	}
	if _, err := r.git(ctx, "check-ref-format", "--branch", name); err != nil {
		if errors.Is(err, ErrNoGit) {
			return err
		}
		return fmt.Errorf("invalid branch name %q", name)
	}
	return nil
}

// HasBranch reports whether the local branch exists (refs/heads/name).
func (r Repo) HasBranch(ctx context.Context, name string) bool {
	_, err := r.git(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+name)
	return err == nil
}

// Checkout checks out branch, creating it from HEAD when it does not exist.
func (r Repo) Checkout(ctx context.Context, branch string) error {
	if err := r.CheckBranch(ctx, branch); err != nil {
		return err
	}
	if r.HasBranch(ctx, branch) {
		_, err := r.git(ctx, "checkout", branch, "--")
		return err
	}
	_, err := r.git(ctx, "checkout", "-b", branch)
	return err
}

// WorktreePath is where a bead's worktree goes: <repo>-worktrees/<name> beside the repository.
func (r Repo) WorktreePath(name string) string {
	dir := filepath.Clean(r.Dir)
	return filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-worktrees", name)
}

// AddWorktree makes (or reuses) a worktree at path on branch, creating the branch from HEAD
// when it does not exist. An existing worktree of the repository at path is reused as it is.
func (r Repo) AddWorktree(ctx context.Context, path, branch string) error {
	if err := r.CheckBranch(ctx, branch); err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil {
		wt := Repo{Dir: path}
		if !wt.IsRepo(ctx) {
			return fmt.Errorf("%s exists and is not a git worktree; move it away or choose another --branch", path)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if r.HasBranch(ctx, branch) {
		_, err := r.git(ctx, "worktree", "add", path, branch)
		return err
	}
	_, err := r.git(ctx, "worktree", "add", "-b", branch, path)
	return err
}

// Dirty reports whether the work tree has uncommitted changes (untracked files included).
func (r Repo) Dirty(ctx context.Context) (bool, error) {
	out, err := r.git(ctx, "status", "--porcelain")
	return out != "", err
}

// RemoveWorktree removes a worktree, refusing when it holds uncommitted work unless force.
func (r Repo) RemoveWorktree(ctx context.Context, path string, force bool) error {
	if dirty, err := (Repo{Dir: path}).Dirty(ctx); err == nil && dirty && !force {
		return fmt.Errorf("worktree %s has uncommitted changes; commit them or pass --force-dirty", path)
	}
	args := []string{"worktree", "remove", path}
	if force {
		args = append(args, "--force")
	}
	_, err := r.git(ctx, args...)
	return err
}
