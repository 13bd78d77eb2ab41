package git

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func newRepo(t testing.TB) Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(dir, 0o755)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"},
		{"config", "user.name", "t"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return Repo{Dir: dir}
}

func TestCheckoutAndWorktree(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	if !r.IsRepo(ctx) {
		t.Fatal("IsRepo = false")
	}
	if err := r.Checkout(ctx, "agent/bd-1"); err != nil {
		t.Fatal(err)
	}
	if b, _ := r.Branch(ctx); b != "agent/bd-1" {
		t.Errorf("Branch = %q after Checkout(agent/bd-1)", b)
	}
	if err := r.Checkout(ctx, "main"); err != nil {
		t.Fatalf("Checkout(existing main) = %v", err)
	}
	for _, bad := range []string{"-x", "a..b", "a b", ""} {
		if err := r.Checkout(ctx, bad); err == nil {
			t.Errorf("Checkout(%q) = nil, want a refusal", bad)
		}
	}

	path := r.WorktreePath("bd-2")
	if filepath.Base(filepath.Dir(path)) != "repo-worktrees" {
		t.Errorf("WorktreePath = %s, want <repo>-worktrees/bd-2", path)
	}
	if err := r.AddWorktree(ctx, path, "agent/bd-2"); err != nil {
		t.Fatal(err)
	}
	if b, _ := (Repo{Dir: path}).Branch(ctx); b != "agent/bd-2" {
		t.Errorf("worktree branch = %q", b)
	}
	if err := r.AddWorktree(ctx, path, "agent/bd-2"); err != nil {
		t.Errorf("AddWorktree again = %v, want the worktree reused", err)
	}
	os.WriteFile(filepath.Join(path, "work.txt"), []byte("unsaved"), 0o644)
	if err := r.RemoveWorktree(ctx, path, false); err == nil {
		t.Error("RemoveWorktree(dirty) = nil, want a refusal")
	}
	if _, err := os.Stat(filepath.Join(path, "work.txt")); err != nil {
		t.Error("the dirty worktree's file is gone")
	}
	if err := r.RemoveWorktree(ctx, path, true); err != nil {
		t.Errorf("RemoveWorktree(force) = %v", err)
	}
}

// TestWithoutGit (issue 9, item 13): with no git on PATH, every operation says git is missing,
// never that the branch name is invalid or that the repository is none.
func TestWithoutGit(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	t.Setenv("PATH", t.TempDir())
	if !r.IsRepo(ctx) {
		t.Errorf("IsRepo(a repository, without git) = false; want true, from its .git")
	}
	if (Repo{Dir: t.TempDir()}).IsRepo(ctx) {
		t.Errorf("IsRepo(a plain directory, without git) = true")
	}
	for name, err := range map[string]error{
		"CheckBranch": r.CheckBranch(ctx, "feature"),
		"Checkout":    r.Checkout(ctx, "feature"),
		"AddWorktree": r.AddWorktree(ctx, r.WorktreePath("bd-1"), "agent/bd-1"),
	} {
		if !errors.Is(err, ErrNoGit) {
			t.Errorf("%s without git = %v, want ErrNoGit", name, err)
		}
	}
	if _, err := r.Branch(ctx); !errors.Is(err, ErrNoGit) {
		t.Errorf("Branch without git = %v, want ErrNoGit", err)
	}
	if _, err := os.Stat(filepath.Dir(r.WorktreePath("bd-1"))); err == nil {
		t.Errorf("AddWorktree without git made %s", filepath.Dir(r.WorktreePath("bd-1")))
	}
}
