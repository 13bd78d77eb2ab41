package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/fsx"
)

// TestPrepareWorktreeSplit: without a post-checkout hook the worktree is registered with
// --no-checkout (Registered sees it so: no index) and checked out after; a worktree left
// registered but not checked out (a run killed between the two) is made again.
func TestPrepareWorktreeSplit(t *testing.T) {
	r := newRepo(t)
	ctx := context.Background()
	commitFile(t, r.Dir, "f.txt", "base\n", "f")
	base := run(t, r.Dir, "rev-parse", "HEAD")
	path := filepath.Join(t.TempDir(), "wt")
	registered := 0
	m := MergeSpec{Base: base, Registered: func() {
		registered++
		if CheckedOut(ctx, path) {
			t.Errorf("the worktree was checked out before Registered")
		}
	}}
	// Stopped between the two steps: registered, never checked out.
	if err := r.registerWorktree(ctx, path, "x", MergeSpec{Base: base}); err != nil {
		t.Fatal(err)
	}
	if CheckedOut(ctx, path) {
		t.Fatal("CheckedOut says yes of a worktree added with --no-checkout")
	}
	got, err := r.PrepareWorktree(ctx, path, "x", m)
	if err != nil || got != base || registered != 1 {
		t.Fatalf("PrepareWorktree = %s, %v (Registered called %d times)", got, err, registered)
	}
	if !CheckedOut(ctx, path) {
		t.Error("CheckedOut says no of the prepared worktree")
	}
	if b, _ := os.ReadFile(filepath.Join(path, "f.txt")); string(b) != "base\n" {
		t.Errorf("f.txt = %q", b)
	}
	if st := run(t, path, "status", "--porcelain"); st != "" {
		t.Errorf("the prepared worktree is not clean:\n%s", st)
	}
}

// TestHasHook: an executable hook in the hooks directory, or in core.hooksPath (relative to the
// top of the work tree, asked from a subdirectory); not a hook that is not executable.
func TestHasHook(t *testing.T) {
	r := newRepo(t)
	ctx := context.Background()
	if r.HasHook(ctx, "post-checkout") {
		t.Fatal("HasHook without a hook")
	}
	hook := filepath.Join(r.Dir, ".git", "hooks", "post-checkout")
	os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o600)
	if r.HasHook(ctx, "post-checkout") {
		t.Error("HasHook of a hook that is not executable")
	}
	os.Chmod(hook, 0o700)
	if !r.HasHook(ctx, "post-checkout") {
		t.Error("HasHook misses .git/hooks/post-checkout")
	}
	os.MkdirAll(filepath.Join(r.Dir, "myhooks"), 0o755)
	os.MkdirAll(filepath.Join(r.Dir, "sub"), 0o755)
	run(t, r.Dir, "config", "core.hooksPath", "myhooks")
	if (Repo{Dir: filepath.Join(r.Dir, "sub")}).HasHook(ctx, "post-checkout") {
		t.Error("HasHook reads .git/hooks when core.hooksPath is set")
	}
	os.WriteFile(filepath.Join(r.Dir, "myhooks", "post-checkout"), []byte("#!/bin/sh\n"), 0o700)
	if !(Repo{Dir: filepath.Join(r.Dir, "sub")}).HasHook(ctx, "post-checkout") {
		t.Error("HasHook misses core.hooksPath's post-checkout")
	}
}

// TestPrepareWorktreeBeneathNeverFollows: with Beneath, a link planted at the worktree's path
// (here at another worktree of the repository, the user's, with work not committed) is removed
// as a link, never handed to git worktree remove, which resolved it and removed the user's
// worktree; a link on the way to the path is refused, its target untouched.
func TestPrepareWorktreeBeneathNeverFollows(t *testing.T) {
	r := newRepo(t)
	ctx := context.Background()
	commitFile(t, r.Dir, "f.txt", "base\n", "f")
	base := run(t, r.Dir, "rev-parse", "HEAD")
	tmp := t.TempDir()
	users := filepath.Join(tmp, "users-worktree")
	run(t, r.Dir, "worktree", "add", "-q", "-b", "mine", users)
	os.WriteFile(filepath.Join(users, "unsaved.txt"), []byte("work\n"), 0o600)
	wts := filepath.Join(r.Dir, ".swarm", "worktrees")
	os.MkdirAll(wts, 0o700)
	path := filepath.Join(wts, "a")
	if err := os.Symlink(users, path); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PrepareWorktree(ctx, path, "a", MergeSpec{Base: base, Beneath: r.Dir}); err != nil {
		t.Errorf("PrepareWorktree over a link = %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(users, "unsaved.txt")); err != nil || string(b) != "work\n" {
		t.Errorf("the user's worktree lost its work: %q, %v", b, err)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.IsDir() || !CheckedOut(ctx, path) {
		t.Errorf("the task's worktree is %v, %v; want a real directory, checked out", fi, err)
	}
	if list := run(t, r.Dir, "worktree", "list", "--porcelain"); !strings.Contains(list, "worktree "+users+"\n") {
		t.Errorf("the user's worktree is no longer registered:\n%s", list)
	}

	// A link in place of .swarm/worktrees: refused, what it points at untouched.
	victim := filepath.Join(tmp, "victim")
	os.MkdirAll(filepath.Join(victim, "b"), 0o700)
	os.WriteFile(filepath.Join(victim, "b", "keep"), []byte("x"), 0o600)
	os.RemoveAll(path)
	run(t, r.Dir, "worktree", "prune")
	os.Remove(wts)
	os.Symlink(victim, wts)
	_, err := r.PrepareWorktree(ctx, filepath.Join(wts, "b"), "b", MergeSpec{Base: base, Beneath: r.Dir})
	if !errors.Is(err, fsx.ErrLinkBeneath) {
		t.Errorf("PrepareWorktree through a linked .swarm/worktrees = %v, want fsx.ErrLinkBeneath", err)
	}
	if _, err := os.Stat(filepath.Join(victim, "b", "keep")); err != nil {
		t.Errorf("the link's target lost a file: %v", err)
	}
}

// TestPrepareWorktreeNewBranch: a branch to be created that exists is ErrBranchExists, and is
// left where it was; -B is only for a branch that is the caller's.
func TestPrepareWorktreeNewBranch(t *testing.T) {
	r := newRepo(t)
	ctx := context.Background()
	commitFile(t, r.Dir, "f.txt", "base\n", "f")
	base := run(t, r.Dir, "rev-parse", "HEAD")
	run(t, r.Dir, "branch", "users")
	commitFile(t, r.Dir, "g.txt", "later\n", "g")
	run(t, r.Dir, "branch", "-f", "users", "HEAD")
	users := run(t, r.Dir, "rev-parse", "users")
	path := filepath.Join(t.TempDir(), "wt")
	_, err := r.PrepareWorktree(ctx, path, "users", MergeSpec{Base: base, NewBranch: true})
	if !errors.Is(err, ErrBranchExists) {
		t.Errorf("PrepareWorktree(NewBranch) of an existing branch = %v, want ErrBranchExists", err)
	}
	if got := run(t, r.Dir, "rev-parse", "users"); got != users {
		t.Errorf("the user's branch moved from %s to %s", users, got)
	}
	if got, err := r.PrepareWorktree(ctx, path, "fresh", MergeSpec{Base: base, NewBranch: true}); err != nil || got != base {
		t.Errorf("PrepareWorktree(NewBranch) of a new branch = %s, %v", got, err)
	}
}

// TestPrepareWorktreeMergesTheBranchNotATag: a dependency's branch named like a tag (v1), the
// tag at the base, is merged as the branch (refs/heads/v1): git merge v1 takes the tag, which
// git reads first, and merges nothing (issue 27, 6).
func TestPrepareWorktreeMergesTheBranchNotATag(t *testing.T) {
	r := newRepo(t)
	ctx := context.Background()
	base := run(t, r.Dir, "rev-parse", "HEAD")
	run(t, r.Dir, "tag", "v1")
	run(t, r.Dir, "switch", "-q", "-c", "v1")
	commitFile(t, r.Dir, "dep.txt", "the dependency's work\n", "dep")
	run(t, r.Dir, "switch", "-q", "main")
	path := filepath.Join(t.TempDir(), "wt")
	if _, err := r.PrepareWorktree(ctx, path, "task", MergeSpec{Base: base, Deps: []string{"v1"}, Label: "test"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(path, "dep.txt")); err != nil || string(b) != "the dependency's work\n" {
		t.Errorf("dep.txt in the dependent's worktree = %q, %v; want the branch v1's work, not the tag's", b, err)
	}
}
