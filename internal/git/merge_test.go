package git

import (
	"context"
	"os"
	"path/filepath"
	"testing"
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
	if err := r.registerWorktree(ctx, path, "x", base, true); err != nil {
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
