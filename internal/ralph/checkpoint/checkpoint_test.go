package checkpoint

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gitx "github.com/agentfleet/fleet/internal/git"
)

// TestCommit: the changes are committed with the loop's trailers, the excluded directory (a
// state directory inside the tree, reached through a link) left out; no change, no commit; a
// repository with no identity gets ralph's.
func TestCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	git := func(args ...string) string {
		t.Helper()
		// No identity anywhere.
		out, err := gitx.Cmd{Dir: repo, Env: []string{"HOME=" + root, "GIT_CONFIG_NOSYSTEM=1"}}.Output(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	os.MkdirAll(filepath.Join(repo, "state"), 0o755)
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "state", "s.json"), []byte("{}\n"), 0o644)
	os.Symlink(filepath.Join(repo, "state"), filepath.Join(root, "state-link"))
	t.Setenv("HOME", root)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")

	head, err := Commit(ctx, repo, []string{filepath.Join(root, "state-link")}, "loop-1", 3)
	if err != nil || head == "" {
		t.Fatalf("Commit = %q, %v", head, err)
	}
	if files := git("show", "--name-only", "--format=", head); files != "a.txt" {
		t.Errorf("committed %q, want a.txt only (the state directory left out)", files)
	}
	if msg := git("log", "-1", "--format=%B"); !strings.Contains(msg, "Ralph-Loop: loop-1\nRalph-Iteration: 3") {
		t.Errorf("message %q lacks the trailers", msg)
	}
	if who := git("log", "-1", "--format=%ae"); who != "ralph@localhost" {
		t.Errorf("author %q, want ralph@localhost", who)
	}
	if again, err := Commit(ctx, repo, []string{filepath.Join(root, "state-link")}, "loop-1", 4); err != nil || again != "" {
		t.Errorf("nothing changed: Commit = %q, %v; want no commit", again, err)
	}
}

// TestCommitLeavesAnIgnoredStateDirectory: a state directory the repository ignores is left out
// without a word (naming it to git add, even to exclude it, failed: "paths are ignored").
func TestCommitLeavesAnIgnoredStateDirectory(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		out, err := gitx.Cmd{Dir: repo}.Output(context.Background(), args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	git("init", "-q", "-b", "main")
	git("config", "user.name", "t")
	git("config", "user.email", "t@localhost")
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".claude/\n"), 0o644)
	git("add", ".gitignore")
	git("commit", "-q", "-m", "base")
	os.MkdirAll(filepath.Join(repo, ".claude", "ralph"), 0o755)
	os.WriteFile(filepath.Join(repo, ".claude", "ralph", "q.json"), []byte("{}\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "work.txt"), []byte("w\n"), 0o644)
	head, err := Commit(context.Background(), repo, []string{filepath.Join(repo, ".claude", "ralph")}, "p-t1", 1)
	if err != nil || head == "" {
		t.Fatalf("Commit = %q, %v; want a commit of work.txt", head, err)
	}
	if files := git("show", "--name-only", "--format=", head); files != "work.txt" {
		t.Errorf("committed %q, want work.txt", files)
	}
}
